"""Views with fewer features than the rank: ``U_p`` may have zero columns, ``U_p >= 0``,
``U_p^T U_p = diag(0/1)``; the U step stays exact on its supports, never ascends, and the
alternating method still descends."""

import itertools

import numpy as np
import pytest

from fedmf_app.methods.sonmf.assignment_kernel import assignment_ascent, compiled_assignment_ascent
from fedmf_app.methods.sonmf.nonneg_orth import (
    BasisSolverOptions,
    basis_objective,
    polish_on_supports,
    project_oblique_nonneg,
    solve_basis,
)
from fedmf_app.methods.sonmf.params import rank_error, resolve_rank, sonmf_options
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.start import basis_from_coefficients
from fedmf_app.methods.sonmf.updates import SONMFParams, local_loss, local_round, regulariser, server_step
from fedmf_app.registry import validate_run_config


def _narrow_problem(rng, d=4, r=7, n=30):
    x = np.abs(rng.standard_normal((d, n)))
    x /= np.linalg.norm(x)
    v = np.abs(rng.standard_normal((r, n))) * 0.1
    return x, v, basis_from_coefficients(x, v)


def _assert_narrow_feasible(u):
    d, r = u.shape
    assert np.all(u >= 0.0)
    gram = u.T @ u
    np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-14)
    diag = np.diag(gram)
    assert np.all(np.isclose(diag, 0.0, atol=1e-14) | np.isclose(diag, 1.0, atol=1e-12))
    assert np.count_nonzero(diag > 0.5) <= d


def _cost(v, rho1):
    return np.einsum("ij,ij->i", v, v) + 0.5 * rho1


@pytest.mark.parametrize("rho1", [0.0, 0.05, 1.0])
def test_narrow_u_step_is_feasible_and_never_worse_than_its_start(rho1):
    rng = np.random.default_rng(20)
    for _ in range(20):
        x, v, u0 = _narrow_problem(rng)
        _assert_narrow_feasible(u0)
        u, info = solve_basis(x, v, u0, rho1, BasisSolverOptions(kernel="numpy"))
        _assert_narrow_feasible(u)
        assert basis_objective(x, v, u, u0, rho1) <= basis_objective(x, v, u0, u0, rho1) + 1e-12
        assert info.objective == pytest.approx(basis_objective(x, v, u, u0, rho1), rel=1e-12)


def test_polish_with_column_costs_is_the_exact_minimiser_on_fixed_supports():
    # On fixed supports, neither other unit columns nor switching a column on or off does better.
    rng = np.random.default_rng(21)
    rho1 = 0.3
    x, v, u0 = _narrow_problem(rng, d=5, r=6)
    a = 2 * x @ v.T + rho1 * u0
    support = np.zeros_like(u0)
    support[np.arange(5), [0, 0, 2, 3, 5]] = 1.0
    u = polish_on_supports(support, a, _cost(v, rho1))
    _assert_narrow_feasible(u)
    best = basis_objective(x, v, u, u0, rho1)
    for _ in range(300):
        w = project_oblique_nonneg(np.where(support > 0, np.abs(rng.standard_normal(u.shape)), 0.0))
        w[:, (rng.random(6) < 0.5) | (support.sum(axis=0) == 0)] = 0.0  # off, or no support
        assert basis_objective(x, v, w, u0, rho1) >= best - 1e-12


def _brute_force_minimum(x, v, u0, rho1):
    """Minimum of phi over every owner of every row, each column then on or off as it pays."""
    d, r = u0.shape
    a = 2 * x @ v.T + rho1 * u0
    best = np.inf
    for owners in itertools.product(range(r), repeat=d):
        support = np.zeros((d, r))
        support[np.arange(d), owners] = 1.0
        u = polish_on_supports(support, a, _cost(v, rho1))
        best = min(best, basis_objective(x, v, u, u0, rho1))
    return best


def test_narrow_u_step_reaches_the_global_minimum_on_small_problems():
    rng = np.random.default_rng(22)
    hits, trials = 0, 20
    for _ in range(trials):
        x, v, u0 = _narrow_problem(rng, d=3, r=5, n=12)
        u, _ = solve_basis(x, v, u0, 0.0, BasisSolverOptions(kernel="numpy"))
        best = _brute_force_minimum(x, v, u0, 0.0)
        value = basis_objective(x, v, u, u0, 0.0)
        assert value >= best - 1e-12
        hits += value <= best + 1e-10
    assert hits >= 0.8 * trials


@pytest.mark.parametrize("seed", range(4))
def test_the_numpy_and_the_compiled_ascent_agree_with_column_costs(seed):
    rng = np.random.default_rng(500 + seed)
    d, r = 6, 9
    sq = np.maximum(rng.normal(size=(d, r)), 0.0) ** 2
    cost = rng.uniform(0.0, 1.0, size=r)
    owner = rng.integers(-1, r, size=d).astype(np.int64)
    compiled_owner, numpy_owner = owner.copy(), owner.copy()
    compiled = compiled_assignment_ascent()(sq, compiled_owner, 50, cost, False)
    interpreted = assignment_ascent(sq, numpy_owner, 50, cost, False)
    np.testing.assert_array_equal(compiled_owner, numpy_owner)
    assert compiled == interpreted
    # the value is the columns' net gains at the end point
    s = np.array([sq[numpy_owner == j, j].sum() for j in range(r)])
    assert interpreted[0] == pytest.approx(np.maximum(np.sqrt(s) - cost, 0.0).sum(), rel=1e-12)


def test_alternating_run_with_a_narrow_view_descends():
    # One client, tau = 1, eta_g = 1: each round a U step (never worse than its start) and a
    # proximal gradient step on V of size alpha <= 1/L_2, so F = f + h never rises; grad_V f uses
    # U^T U, which here is diag(0/1).
    rng = np.random.default_rng(23)
    d, r, n = 5, 8, 40
    x = np.abs(rng.standard_normal((d, n)))
    x /= np.linalg.norm(x)
    params = SONMFParams(local_steps=1, global_lr=1.0, local_lr=0.25)
    v_bar = np.abs(rng.standard_normal((r, n))) / np.sqrt(r * n)
    v = prox_l21_nonneg(v_bar, params.effective_lr * params.mu)
    u = basis_from_coefficients(x, v_bar)
    objective = [local_loss(x, u, v) + regulariser(v, params.mu)]
    for _ in range(30):
        out = local_round(x, u, v_bar, params, None, None)
        u = out.u
        _assert_narrow_feasible(u)
        v_bar, v = server_step(v, [out.v_hat], params)
        objective.append(local_loss(x, u, v) + regulariser(v, params.mu))
    assert np.all(np.diff(objective) <= 1e-12 * objective[0])
    assert objective[-1] < 0.5 * objective[0]


def test_the_start_keeps_a_narrow_views_columns_only_where_they_pay():
    rng = np.random.default_rng(24)
    x, v, u = _narrow_problem(rng, d=4, r=9)
    _assert_narrow_feasible(u)
    value = local_loss(x, u, v)
    active = np.flatnonzero(np.linalg.norm(u, axis=0) > 0)
    assert 0 < active.size <= 4
    for j in active:  # switching an active column off raises the residual
        off = u.copy()
        off[:, j] = 0.0
        assert local_loss(x, off, v) > value


def test_rank_and_its_checks_with_narrow_views(tmp_path):
    real = validate_run_config({"dataset": str(tmp_path / "views.mat"), "num-clients": 3})
    real = {**real, "sonmf.rank-per-cluster": 2}
    assert (
        resolve_rank(sonmf_options(real), 10, [216, 6, 64]) == 20
    )  # HW: r = 2k, the mor view keeps 6 columns
    assert resolve_rank(sonmf_options(real), 10, [12, 6, 9]) == 12  # capped by the largest view
    assert rank_error(sonmf_options(real), 20, [216, 6, 64]) is None
    assert "at least one view" in rank_error(sonmf_options(real), 20, [12, 6, 9])
    assert "sketch" in rank_error(sonmf_options({**real, "sonmf.start": "random"}), 20, [216, 6, 64])
    assert rank_error(sonmf_options({**real, "sonmf.start": "random"}), 6, [216, 6, 64]) is None
