"""Paper A's compared methods and ablation variants: kernel properties, residuals, aggregation."""

import json
import math

import numpy as np
import pytest
from flwr.common import parameters_to_ndarrays

from fedmf_app.methods.sonmf.adapted_updates import (
    FedVRAParams,
    fedmavg_local_round,
    fedmavg_local_steps,
    fedmavg_server_step,
    fedvra_local_round,
    fedvra_server_step,
)
from fedmf_app.methods.sonmf.nonneg_orth import random_feasible_basis, solve_basis
from fedmf_app.methods.sonmf.params import sonmf_options
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.residuals import residual_v, residual_v_min_norm
from fedmf_app.methods.sonmf.updates import (
    SONMFParams,
    fixed_v_round,
    grad_v,
    local_round,
    prox_gradient_step,
)
from fedmf_app.registry import validate_run_config

from support.federation import federation, fit_res, run_federation

CFG = {
    "num-clients": 3,
    "num-samples": 40,
    "num-server-rounds": 4,
    "heterogeneity": 0.6,
    "sonmf.local-steps": 3,
    "seed": 5,
    "connect-timeout-s": 0.2,
}


def _rng_problem(seed=0, d=20, r=6, n=40):
    rng = np.random.default_rng(seed)
    x = np.abs(rng.standard_normal((d, n)))
    return x, random_feasible_basis(d, r, rng), np.abs(rng.standard_normal((r, n))), rng


# ------------------------------------------------------------------------------- residuals
def test_min_norm_residual_is_zero_exactly_at_stationary_points():
    # Build V >= 0 with a zero row and zero entries, and a gradient g with -g in dh(V).
    rng = np.random.default_rng(1)
    mu = 0.3
    v = np.abs(rng.standard_normal((4, 7)))
    v[1] = 0.0
    v[2, [0, 3]] = 0.0
    g = -mu * v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
    g[2, [0, 3]] = [0.5, 2.0]  # zero entries of a nonzero row: any g >= 0
    g[1] = -0.9 * mu / np.sqrt(6)  # zero row: ||min(g, 0)|| = 0.9 mu <= mu ...
    g[1, 2] = 4.0  # ... and its positive entries are free
    assert residual_v_min_norm(v, g, mu) == pytest.approx(0.0, abs=1e-24)
    # and V is then a fixed point of the prox-gradient map
    np.testing.assert_allclose(prox_l21_nonneg(v - 0.1 * g, 0.1 * mu), v, atol=1e-12)
    # moving any piece of g off the subdifferential makes it positive, by the expected amount
    for i, j, delta in [(0, 1, 0.2), (2, 0, -0.7), (2, 1, 0.1)]:
        h = g.copy()
        h[i, j] += delta
        expected = delta**2 if (i, j) != (2, 0) else (g[2, 0] + delta) ** 2
        assert residual_v_min_norm(v, h, mu) == pytest.approx(expected)
    h = g.copy()
    h[1] = -2.0 * mu / np.sqrt(7)  # ||min(g, 0)|| = 2 mu on the zero row
    assert residual_v_min_norm(v, h, mu) == pytest.approx(mu**2)


def test_min_norm_residual_never_exceeds_the_server_prox_residual():
    rng = np.random.default_rng(2)
    for _ in range(50):
        v = np.abs(rng.standard_normal((6, 30)))
        g = rng.standard_normal((6, 30))
        t, mu = rng.uniform(0.01, 1.0), rng.uniform(0.0, 2.0)
        z = v - t * g + 0.3 * rng.standard_normal(v.shape)
        v_next = prox_l21_nonneg(z, t * mu)
        grad = rng.standard_normal(v.shape)
        assert residual_v_min_norm(v_next, grad, mu) <= residual_v(z, v_next, grad, t) + 1e-12


def test_both_residuals_agree_when_the_subdifferential_is_a_point():
    # every entry of V^{s+1} positive: dh(V) = {mu V_i / ||V_i||}, so both give the same value
    rng = np.random.default_rng(3)
    z = 5.0 + np.abs(rng.standard_normal((5, 8)))
    v_next = prox_l21_nonneg(z, 0.2 * 0.5)
    assert np.all(v_next > 0)
    grad = rng.standard_normal(z.shape)
    assert residual_v_min_norm(v_next, grad, 0.5) == pytest.approx(residual_v(z, v_next, grad, 0.2))


# ------------------------------------------------------------------------------- kernels
def test_fedmavg_schedule_shrinks_as_ceil_tau_over_sqrt_s():
    assert [fedmavg_local_steps(10, s, "decreasing") for s in (1, 2, 4, 25, 100, 101, 10**6)] == [
        10,
        8,
        5,
        2,
        1,
        1,
        1,
    ]
    assert all(fedmavg_local_steps(10, s, "constant") == 10 for s in (1, 50))
    assert all(
        fedmavg_local_steps(t, s, "decreasing") == math.ceil(t / math.sqrt(s))
        for t in (1, 5, 30)
        for s in range(1, 200)
    )


def test_fedmavg_with_one_client_and_one_step_is_a_proximal_gradient_step():
    x, u, v, _ = _rng_problem()
    params = SONMFParams(local_lr=0.05, mu=0.4)
    v_local, u_next = fedmavg_local_round(x, u, v, 1, params)
    v_next = fedmavg_server_step([v_local])
    u_expected, _ = solve_basis(x, v, u, params.basis_weight(v), params.basis)
    np.testing.assert_array_equal(u_next, u_expected)
    _, expected = prox_gradient_step(v, grad_v(x, u_expected, v), 0.05, 0.4)
    np.testing.assert_allclose(v_next, expected, rtol=1e-13, atol=1e-14)


def test_fedmavg_averages_after_the_prox_which_is_not_a_prox_of_the_average():
    # the reason for its plateau (paper A, Lemma 1): mean(P(z_p)) != P(mean(z_p))
    a, b = np.array([[2.0, 0.0]]), np.array([[0.0, 2.0]])
    t = 1.5
    averaged_after = fedmavg_server_step([prox_l21_nonneg(a, t), prox_l21_nonneg(b, t)])
    prox_of_average = prox_l21_nonneg((a + b) / 2, t)
    np.testing.assert_allclose(averaged_after, [[0.25, 0.25]])
    np.testing.assert_allclose(prox_of_average, [[0.0, 0.0]])


def test_fixed_v_round_averages_the_gradients_of_tau_basis_steps():
    x, u, v, _ = _rng_problem(4)
    params = SONMFParams(local_steps=4)
    u_end, grad_avg = fixed_v_round(x, u, v, params)
    grads = []
    for _ in range(4):
        u, _ = solve_basis(x, v, u, params.basis_weight(v), params.basis)
        grads.append(grad_v(x, u, v))
    np.testing.assert_array_equal(u_end, u)
    np.testing.assert_allclose(grad_avg, np.mean(grads, axis=0), rtol=1e-14)


def test_one_local_step_of_the_method_equals_the_server_only_update_with_step_eta_g_alpha():
    # tau = 1: hat V = V^s - alpha * g (C_1 = 0), server bar V = V^s - eta_g alpha g.
    x, u, v, _ = _rng_problem(5)
    params = SONMFParams(local_steps=1, local_lr=0.02)
    v_bar = v.copy()
    v_s = prox_l21_nonneg(v_bar, params.effective_lr * params.mu)
    local = local_round(x, u, v_bar, params)
    _, g = fixed_v_round(x, u, v_s, SONMFParams(local_steps=1, local_lr=0.02, v_update="server"))
    np.testing.assert_allclose(
        v_s + params.global_lr * (local.v_hat - v_s), v_s - params.global_lr * params.local_lr * g, atol=1e-13
    )


def test_fedvra_round_follows_its_primal_and_dual_updates():
    x, u, v, rng = _rng_problem(6)
    params = SONMFParams(local_steps=3, local_lr=0.02)
    vra = FedVRAParams(rho=4.0, dual_step=0.5)
    dual = rng.standard_normal(v.shape)
    upload, dual_next, u_end = fedvra_local_round(x, u, v, dual, params, vra)
    v_p, u_k = v, u
    for _ in range(3):
        u_k, _ = solve_basis(x, v_p, u_k, params.basis_weight(v_p), params.basis)
        v_p = v_p - 0.02 * (grad_v(x, u_k, v_p) + dual + 4.0 * (v_p - v))
    np.testing.assert_array_equal(u_end, u_k)
    np.testing.assert_allclose(dual_next, dual + 0.5 * 4.0 * (v_p - v), rtol=1e-13)
    np.testing.assert_allclose(upload, v_p + dual_next / 4.0, rtol=1e-13)


def test_fedvra_server_step_is_the_admm_update_and_its_relaxation():
    rng = np.random.default_rng(7)
    v = np.abs(rng.standard_normal((4, 9)))
    uploads = [rng.standard_normal((4, 9)) for _ in range(3)]
    vra = FedVRAParams(rho=2.0)
    z, w, v_next = fedvra_server_step(v, uploads, 0.3, vra)
    np.testing.assert_allclose(z, np.mean(uploads, axis=0))
    np.testing.assert_array_equal(w, prox_l21_nonneg(z, 0.3 / 2.0))
    np.testing.assert_array_equal(v_next, w)
    _, _, relaxed = fedvra_server_step(v, uploads, 0.3, FedVRAParams(rho=2.0, aggregation_step=0.25))
    np.testing.assert_allclose(relaxed, v + 0.25 * (w - v))


# ------------------------------------------------------------------------------- adapters
def _cfg(**overrides):
    return validate_run_config({**CFG, **overrides})


@pytest.mark.parametrize("algorithm", ["fedmavg", "fedmgs", "fedvra-u"])
def test_aggregation_of_constructed_replies(tmp_path, algorithm):
    cfg = _cfg(algorithm=algorithm)
    fed = federation(tmp_path, cfg)
    strategy, manager = fed.strategy, fed.server.client_manager()
    strategy.initialize_parameters(client_manager=manager)
    rng = np.random.default_rng(0)
    uploads = [np.abs(rng.standard_normal(strategy.v.shape)) for _ in range(3)]
    grads = [rng.standard_normal(strategy.v.shape) for _ in range(3)]
    results = [
        (
            proxy,
            fit_res(
                [uploads[p], grads[p]],
                {
                    "partition-id": p,
                    "kernel_s": 0.1,
                    "peak_rss_mb": 1.0,
                    "loss": float(p),
                    "basis_residual": 2.0,
                },
            ),
        )
        for p, proxy in enumerate(strategy.clients)
    ]
    v_before = strategy.v.copy()
    broadcast = parameters_to_ndarrays(
        strategy.aggregate_fit(server_round=1, results=results[::-1], failures=[])[0]
    )
    mean_grad, mu = np.mean(grads, axis=0), cfg["sonmf.mu"]
    if algorithm == "fedmavg":
        expected_v = np.mean(uploads, axis=0)
        expected_broadcast = expected_v
        expected_rv = residual_v_min_norm(expected_v, mean_grad, mu)
    elif algorithm == "fedmgs":
        lr = sonmf_options(cfg).fedmgs.server_lr
        steps = sonmf_options(cfg).steps
        assert lr == pytest.approx(steps.global_lr * steps.local_steps * steps.local_lr)
        expected_broadcast, expected_v = prox_gradient_step(v_before, np.mean(uploads, axis=0), lr, mu)
        expected_rv = residual_v(expected_broadcast, expected_v, mean_grad, lr)
    else:
        z, _, expected_v = fedvra_server_step(v_before, uploads, mu, sonmf_options(cfg).fedvra)
        expected_broadcast = expected_v
        expected_rv = residual_v(z, expected_v, mean_grad, 1.0 / sonmf_options(cfg).fedvra.rho)
    np.testing.assert_allclose(broadcast[0], expected_broadcast)
    np.testing.assert_allclose(strategy.v, expected_v)
    record = strategy.recorder.data["rounds"][0]
    assert record["residual_v"] == pytest.approx(expected_rv)
    assert record["residual_v_min"] == pytest.approx(residual_v_min_norm(expected_v, mean_grad, mu))
    assert record["residual_v_min"] <= record["residual_v"] + 1e-12
    assert record["residual"] == pytest.approx(expected_rv + 2.0)
    assert record["objective"] == pytest.approx(1.0 + mu * np.linalg.norm(v_before, axis=1).sum())


def test_server_only_variant_aggregates_mean_gradients_with_step_eta_g_alpha(tmp_path):
    cfg = _cfg(**{"sonmf.v-update": "server"})
    fed = federation(tmp_path, cfg)
    strategy, manager = fed.strategy, fed.server.client_manager()
    strategy.initialize_parameters(client_manager=manager)
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(strategy.v.shape) for _ in range(3)]
    results = [
        (
            proxy,
            fit_res(
                [grads[p], grads[p]],
                {"partition-id": p, "kernel_s": 0.1, "peak_rss_mb": 1.0, "loss": 1.0, "basis_residual": 0.0},
            ),
        )
        for p, proxy in enumerate(strategy.clients)
    ]
    v_before = strategy.v.copy()
    broadcast = parameters_to_ndarrays(
        strategy.aggregate_fit(server_round=1, results=results, failures=[])[0]
    )
    steps = sonmf_options(cfg).steps
    lr = steps.global_lr * steps.local_lr
    v_bar, v_next = prox_gradient_step(v_before, np.mean(grads, axis=0), lr, cfg["sonmf.mu"])
    np.testing.assert_allclose(broadcast[0], v_bar)
    np.testing.assert_allclose(strategy.v, v_next)
    record = strategy.recorder.data["rounds"][0]
    assert record["residual_v"] == pytest.approx(residual_v(v_bar, v_next, np.mean(grads, 0), lr))


def test_fedmgs_is_the_server_only_variant_at_the_effective_step(tmp_path):
    mgs, mgs_broadcasts = run_federation(tmp_path, _cfg(algorithm="fedmgs"), run_name="mgs")
    variant, variant_broadcasts = run_federation(
        tmp_path, _cfg(**{"sonmf.v-update": "server", "sonmf.server-step": "effective"}), run_name="variant"
    )
    for a, b in zip(mgs_broadcasts, variant_broadcasts):
        np.testing.assert_array_equal(a[0], b[0])
    residuals = [[r["residual"] for r in s.recorder.data["rounds"]] for s in (mgs, variant)]
    assert residuals[0] == residuals[1]


@pytest.mark.parametrize(
    "overrides",
    [
        {"algorithm": "fedmavg"},
        {"algorithm": "fedmgs"},
        {"algorithm": "fedvra-u"},
        {"sonmf.v-update": "server"},
        {"sonmf.drift-correction": False},
        {"sonmf.local-steps": 1},
    ],
)
def test_every_method_runs_in_process_and_records_comparable_diagnostics(tmp_path, overrides):
    cfg = _cfg(**overrides)
    run_federation(tmp_path, cfg)
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed"
    rounds = result["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4]
    for r in rounds:
        assert r["residual_v_min"] <= r["residual_v"] * (1 + 1e-12) + 1e-15
        assert r["residual"] == pytest.approx(r["residual_v"] + r["residual_u"])
        assert r["residual_min"] == pytest.approx(r["residual_v_min"] + r["residual_u"])
    assert set(result["summary"]["rounds_to_1e-2"]) == {"ratio", "running-average", "min-norm ratio"}
    assert result["config"] == cfg
    assert (tmp_path / "run" / "residuals.png").exists()
