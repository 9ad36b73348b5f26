"""A sparse view gives the numbers of the same view dense, without forming ``UV - X``."""

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view
from fedmf_app.methods.sonmf import updates
from fedmf_app.methods.sonmf.nonneg_orth import basis_residual, random_feasible_basis, solve_basis
from fedmf_app.methods.sonmf.residual_products import residual_times_vt, squared_residual, ut_times_residual


def _sparse_problem(seed, d=30, n=50, r=4, density=0.2):
    rng = np.random.default_rng(seed)
    x = sp.random(d, n, density=density, random_state=seed, format="csc", dtype=np.float64)
    return x, random_feasible_basis(d, r, rng), np.abs(rng.standard_normal((r, n)))


@pytest.mark.parametrize("seed", range(3))
def test_products_on_a_sparse_view_equal_those_on_the_dense_one(seed):
    x, u, v = _sparse_problem(seed)
    dense = x.toarray()
    assert squared_residual(x, u, v) == pytest.approx(np.linalg.norm(dense - u @ v) ** 2, rel=1e-12)
    np.testing.assert_allclose(residual_times_vt(x, u, v), (u @ v - dense) @ v.T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ut_times_residual(x, u, v), u.T @ (u @ v - dense), rtol=0, atol=1e-10)
    assert basis_residual(x, v, u) == pytest.approx(basis_residual(dense, v, u), rel=1e-10)


def test_squared_residual_of_an_exact_sparse_factorisation_is_zero():
    x, u, v = _sparse_problem(5)
    exact = sp.csc_matrix(u @ v)
    assert squared_residual(exact, u, v) == pytest.approx(0.0, abs=1e-10 * np.linalg.norm(u @ v) ** 2)


def test_basis_solve_and_local_round_on_a_sparse_view_equal_the_dense_ones():
    view = make_synthetic_view(SyntheticSpec(heterogeneity=0.5, seed=3), 0).x  # d x n, nonnegative
    view = np.where(view > np.quantile(view, 0.7), view, 0.0)  # 70 % zeros
    x = sp.csc_matrix(view)
    rng = np.random.default_rng(0)
    u0 = random_feasible_basis(view.shape[0], 6, rng)
    v = np.abs(rng.standard_normal((6, view.shape[1])))
    u_dense, info_dense = solve_basis(view, v, u0, 0.5)
    u_sparse, info_sparse = solve_basis(x, v, u0, 0.5)
    np.testing.assert_allclose(u_sparse, u_dense, rtol=0, atol=1e-10)
    assert info_sparse.objective == pytest.approx(info_dense.objective, rel=1e-10)

    params = updates.SONMFParams(local_steps=3)
    dense_round = updates.local_round(view, u0, v, params)
    sparse_round = updates.local_round(x, u0, v, params)
    np.testing.assert_allclose(sparse_round.u, dense_round.u, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse_round.v_hat, dense_round.v_hat, rtol=0, atol=1e-10)


@pytest.mark.parametrize("layout", ["C", "F"])
def test_dense_residual_in_blocks_equals_the_whole_residual(layout):
    rng = np.random.default_rng(7)
    d, n, r = 300, 2500, 5  # blocks of 873 samples: three, the last one short
    x = np.asarray(np.abs(rng.standard_normal((d, n))), order=layout)
    u, v = random_feasible_basis(d, r, rng), np.abs(rng.standard_normal((r, n)))
    whole = np.linalg.norm(x - u @ v) ** 2
    assert squared_residual(x, u, v) == pytest.approx(whole, rel=1e-12)
    exact = u @ v  # the expansion would leave about 1e-16 ||X||^2 here; the residual itself, round-off
    assert squared_residual(exact, u, v) <= 1e-26 * np.linalg.norm(exact) ** 2


def test_products_passed_in_give_what_the_solver_and_diagnostics_compute_themselves():
    rng = np.random.default_rng(2)
    x = np.abs(rng.standard_normal((40, 300)))
    u0, v = random_feasible_basis(40, 4, rng), np.abs(rng.standard_normal((4, 300)))
    xvt, x_sq = x @ v.T, float(np.sum(x * x))
    for method in ("assignment", "penalty"):
        options = updates.BasisSolverOptions(method=method)
        u_own, info_own = solve_basis(x, v, u0, 0.3, options)
        u_given, info_given = solve_basis(x, v, u0, 0.3, options, xvt=xvt, x_squared_norm=x_sq)
        np.testing.assert_array_equal(u_given, u_own)
        assert info_given.objective == pytest.approx(info_own.objective, rel=1e-13)
    out = updates.local_round(x, u0, v, updates.SONMFParams(local_steps=2))
    np.testing.assert_array_equal(out.xvt, x @ out.v.T)
    own = updates.client_diagnostics(x, u0, out.u, out.v)
    given = updates.client_diagnostics(x, u0, out.u, out.v, out.xvt)
    assert given.basis_residual == own.basis_residual and given.loss == own.loss
