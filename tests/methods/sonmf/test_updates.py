"""Paper A's local loop and server step: drift correction, tau = 1 reduction, convergence."""

import numpy as np
import pytest

from fedmf_app.methods.sonmf.nonneg_orth import is_feasible_basis, solve_basis
from fedmf_app.methods.sonmf.params import SONMFOptions
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.reference import SONMFReference, synthetic_views
from fedmf_app.methods.sonmf.updates import (
    SONMFParams,
    grad_v,
    local_loss,
    local_round,
    regulariser,
    server_step,
)


def federation(views, params, seed=0):
    """The in-process federation of paper A's synthetic views (planted rank) with ``params``."""
    options = SONMFOptions(steps=params, synthetic=True)
    return SONMFReference([v.x.T for v in views], options, views[0].v_true.shape[0], seed)


def test_corrections_average_to_zero_over_clients():
    views = synthetic_views(m=6, h=0.9)
    fed = federation(views, SONMFParams(local_steps=5))
    for s in range(6):
        fed.round()
        corrections = np.stack([o.correction for o in fed.outputs])
        if s == 0:
            assert np.all(corrections == 0)  # C_p^1 = 0
        else:
            scale = np.abs(corrections).max()
            assert scale > 1e-3  # each client is really corrected ...
            assert np.abs(corrections.mean(axis=0)).max() <= 1e-10 * scale  # ... and they cancel


def test_without_drift_correction_the_correction_is_zero():
    views = synthetic_views(m=3, h=0.9)
    fed = federation(views, SONMFParams(local_steps=3, drift_correction=False))
    for _ in range(3):
        fed.round()
        assert all(np.all(o.correction == 0) for o in fed.outputs)


def test_local_round_matches_its_closed_form():
    # hat V^{tau} = V^s - alpha * sum_k (g_k + C)  (paper A, App. 6)
    views = synthetic_views(m=3, h=0.6)
    params = SONMFParams(local_steps=7)
    fed = federation(views, params)
    fed.round()
    fed.round()
    for o in fed.outputs:
        expected = o.v - params.local_lr * params.local_steps * (o.grad_avg + o.correction)
        np.testing.assert_allclose(o.v_hat, expected, atol=1e-12)
        assert is_feasible_basis(o.u, tol=1e-12)


@pytest.mark.parametrize("rounds_before", [0, 3])
def test_one_local_step_equals_centralised_proximal_gradient_step(rounds_before):
    # With tau = 1, averaging the clients' pre-proximal copies and the server prox give one
    # proximal gradient step on (1/m) sum_p f_p(U_p, .) + h with step eta_g * alpha.
    views = synthetic_views(m=4, h=0.9)
    params = SONMFParams(local_steps=1, local_lr=0.02)
    fed = federation(views, params)
    for _ in range(rounds_before):
        fed.round()
    v_s, v_bar_s, us_before = fed.v.copy(), fed.v_bar.copy(), [u.copy() for u in fed.us]
    fed.round()
    # centralised: the same U step, then one pooled prox-gradient step
    us = [
        solve_basis(v.x, v_s, u, params.basis_weight(v_s), params.basis)[0] for v, u in zip(views, us_before)
    ]
    pooled_grad = np.mean([grad_v(v.x, u, v_s) for v, u in zip(views, us)], axis=0)
    step = params.global_lr * params.local_lr
    expected = prox_l21_nonneg(v_s - step * pooled_grad, step * params.mu)
    np.testing.assert_allclose(fed.v, expected, rtol=1e-10, atol=1e-12)
    assert np.allclose(prox_l21_nonneg(v_bar_s, params.effective_lr * params.mu), v_s)


def test_server_step_is_gradient_step_when_corrections_cancel():
    # bar V^{s+1} = V^s - eta~ * mean_p G_p^s
    views = synthetic_views(m=4, h=0.3)
    params = SONMFParams(local_steps=4)
    fed = federation(views, params)
    fed.round()
    v_s = fed.v.copy()
    fed.round()
    expected = v_s - params.effective_lr * np.mean([o.grad_avg for o in fed.outputs], axis=0)
    np.testing.assert_allclose(fed.v_bar, expected, atol=1e-10)


def test_objective_and_residual_decrease_to_the_planted_factorisation():
    views = synthetic_views(m=5, h=0.0, seed=1)
    params = SONMFParams()
    fed = federation(views, params, seed=1)
    for _ in range(40):
        fed.round()
    objective = [h["objective"] for h in fed.history]
    residual = [h["residual"] for h in fed.history]
    planted = np.mean([local_loss(v.x, v.u_true, v.v_true) for v in views]) + regulariser(
        views[0].v_true, params.mu
    )
    assert objective[-1] < 1e-2 * objective[0]
    assert objective[-1] <= 1.02 * planted  # the planted factorisation is (at least) matched
    assert residual[-1] < 1e-6 * residual[0]
    # the learned V is the planted one up to a permutation of its rows
    corr = np.corrcoef(fed.v, views[0].v_true)[:6, 6:]
    assert np.all(np.sort(corr.max(axis=0)) > 0.99)
    # and each client's basis has the planted supports, in the same permutation
    perm = corr.argmax(axis=0)
    for view, u in zip(views, fed.us):
        np.testing.assert_array_equal(u[:, perm] > 0, view.u_true > 0)


def test_server_step_averages_uploads():
    rng = np.random.default_rng(0)
    v = np.abs(rng.standard_normal((3, 5)))
    hats = [rng.standard_normal((3, 5)) for _ in range(4)]
    params = SONMFParams(global_lr=1.0)
    v_bar, v_next = server_step(v, hats, params)
    np.testing.assert_allclose(v_bar, np.mean(hats, axis=0))
    np.testing.assert_allclose(v_next, prox_l21_nonneg(v_bar, params.effective_lr * params.mu))


def test_local_round_leaves_inputs_untouched():
    views = synthetic_views(m=1)
    rng = np.random.default_rng(0)
    from fedmf_app.methods.sonmf.nonneg_orth import random_feasible_basis

    u = random_feasible_basis(20, 6, rng)
    v_bar = np.abs(rng.standard_normal((6, 200)))
    u_copy, v_copy = u.copy(), v_bar.copy()
    local_round(views[0].x, u, v_bar, SONMFParams(local_steps=2))
    np.testing.assert_array_equal(u, u_copy)
    np.testing.assert_array_equal(v_bar, v_copy)


@pytest.mark.parametrize("method", ["assignment", "penalty"])
@pytest.mark.parametrize("n", [300, 9000])  # one block, and three blocks of samples
def test_dense_one_pass_steps_equal_the_two_pass_loop(method, n):
    """The fused dense loop (one read of X per step) gives the sparse loop's numbers, two rounds."""
    import scipy.sparse as sp

    from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions

    rng = np.random.default_rng(3)
    d, r = 12, 4
    x = rng.random((d, n)) * (rng.random((d, n)) < 0.6)
    params = SONMFParams(local_steps=4, mu=0.05, basis=BasisSolverOptions(method=method))
    v_bar = rng.random((r, n))
    u = np.abs(rng.standard_normal((d, r)))
    u /= np.linalg.norm(u, axis=0)
    runs = {}
    for name, data in (("dense", x), ("sparse", sp.csr_matrix(x))):
        out = local_round(data, u.copy(), v_bar.copy(), params)
        second = local_round(data, out.u, out.v_hat, params, v_prev=v_bar, grad_prev=out.grad_avg)
        runs[name] = (out, second)
    assert np.linalg.norm(runs["dense"][1].correction) > 0  # the second round is drift-corrected
    for dense, sparse in zip(runs["dense"], runs["sparse"], strict=True):
        for field in ("v_hat", "u", "grad_avg", "v", "correction", "xvt"):
            a, b = getattr(dense, field), np.asarray(getattr(sparse, field))
            assert np.linalg.norm(a - b) <= 1e-10 * max(np.linalg.norm(b), 1.0), field
