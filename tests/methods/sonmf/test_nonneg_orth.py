"""The nonnegative-orthogonal basis solver: feasibility, descent, optimality, recovery."""

import ast
import itertools
from pathlib import Path

import numpy as np
import pytest

from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view
from fedmf_app.methods.sonmf.nonneg_orth import (
    BASIS_SOLVERS,
    BasisSolverOptions,
    basis_objective,
    basis_residual,
    is_feasible_basis,
    polish_on_supports,
    project_oblique_nonneg,
    random_feasible_basis,
    round_to_feasible,
    solve_basis,
)
from fedmf_app.methods.sonmf.updates import SONMFParams


def _problem(rng, d=12, r=3, n=40):
    x = np.abs(rng.standard_normal((d, n)))
    v = np.abs(rng.standard_normal((r, n)))
    return x, v, random_feasible_basis(d, r, rng)


def test_random_feasible_basis_is_feasible():
    rng = np.random.default_rng(0)
    for d, r in [(6, 6), (7, 6), (20, 6), (50, 10)]:
        u = random_feasible_basis(d, r, rng)
        assert is_feasible_basis(u, tol=1e-12)
        assert np.all(np.count_nonzero(u, axis=0) >= 1)


def test_projection_gives_nonnegative_unit_columns():
    rng = np.random.default_rng(1)
    u = rng.standard_normal((8, 4))
    u[:, 2] = -np.abs(u[:, 2])  # no positive entry
    p = project_oblique_nonneg(u)
    assert np.all(p >= 0)
    np.testing.assert_allclose(np.linalg.norm(p, axis=0), 1.0)
    assert np.count_nonzero(p[:, 2]) == 1 and p[np.argmax(u[:, 2]), 2] == 1.0


def test_rounding_is_feasible_or_declines():
    rng = np.random.default_rng(2)
    u = np.abs(rng.standard_normal((10, 3)))
    assert is_feasible_basis(round_to_feasible(u), tol=1e-12)
    u[:, 1] = 0.0  # column 1 can win no row
    assert round_to_feasible(u) is None


@pytest.mark.parametrize("method", BASIS_SOLVERS)
@pytest.mark.parametrize("rho1", [0.0, 1.0, 10.0])
def test_solver_returns_feasible_basis_without_increasing_objective(rho1, method):
    rng = np.random.default_rng(3)
    for _ in range(20):
        x, v, u0 = _problem(rng)
        u, info = solve_basis(x, v, u0, rho1, BasisSolverOptions(method=method))
        assert is_feasible_basis(u, tol=1e-12)
        assert basis_objective(x, v, u, u0, rho1) <= basis_objective(x, v, u0, u0, rho1) + 1e-12
        assert info.objective == pytest.approx(basis_objective(x, v, u, u0, rho1))


def test_polish_is_the_exact_minimiser_on_fixed_supports():
    rng = np.random.default_rng(4)
    x, v, u0 = _problem(rng, d=10, r=3)
    a = 2 * x @ v.T + 1.0 * u0
    u = polish_on_supports(u0, a)
    assert is_feasible_basis(u, tol=1e-12)
    support = u0 > 0
    for _ in range(300):  # any unit nonnegative columns on the same supports do no better
        w = project_oblique_nonneg(np.where(support, np.abs(rng.standard_normal(u.shape)), 0.0))
        assert basis_objective(x, v, w, u0, 1.0) >= basis_objective(x, v, u, u0, 1.0) - 1e-9


def _brute_force_minimum(x, v, u0, rho1):
    """Minimum of phi over all assignments of rows to columns (each column >= 1 row)."""
    d, r = u0.shape
    a = 2 * x @ v.T + rho1 * u0
    best = np.inf
    for owners in itertools.product(range(r), repeat=d):
        if len(set(owners)) < r:
            continue
        support = np.zeros((d, r))
        support[np.arange(d), owners] = 1.0
        u = polish_on_supports(support, a)
        best = min(best, basis_objective(x, v, u, u0, rho1))
    return best


@pytest.mark.parametrize("method", BASIS_SOLVERS)
def test_solver_reaches_the_global_minimum_on_small_problems(method):
    # Both solvers are heuristics for a combinatorial problem: each must find the brute-force
    # optimum in most small random instances from a random start (rho1 = 0).
    rng = np.random.default_rng(5)
    hits = 0
    trials = 15
    for _ in range(trials):
        x, v, u0 = _problem(rng, d=6, r=2, n=15)
        u, _ = solve_basis(x, v, u0, 0.0, BasisSolverOptions(method=method))
        best = _brute_force_minimum(x, v, u0, 0.0)
        value = basis_objective(x, v, u, u0, 0.0)
        assert value >= best - 1e-9
        hits += value <= best + 1e-8 * abs(best)
    assert hits >= 0.8 * trials


@pytest.mark.parametrize("method", BASIS_SOLVERS)
def test_solver_recovers_planted_basis_given_true_coefficients(method):
    view = make_synthetic_view(SyntheticSpec(seed=7), 0)
    rng = np.random.default_rng(7)
    for _ in range(3):
        u0 = random_feasible_basis(20, 6, rng)
        u, _ = solve_basis(view.x, view.v_true, u0, 0.0, BasisSolverOptions(method=method))
        # Same supports as the truth (V is given, so no column permutation is possible).
        np.testing.assert_array_equal(u > 0, view.u_true > 0)
        np.testing.assert_allclose(u, view.u_true, atol=0.05)


def test_basis_residual_vanishes_at_an_exact_factorisation_only():
    view = make_synthetic_view(SyntheticSpec(noise=0.0, seed=8), 0)
    assert basis_residual(view.x, view.v_true, view.u_true) == pytest.approx(0.0, abs=1e-18)
    other = random_feasible_basis(20, 6, np.random.default_rng(0))
    assert basis_residual(view.x, view.v_true, other) > 1e-3


@pytest.mark.parametrize("method", BASIS_SOLVERS)
def test_options_reach_the_solver(method):
    rng = np.random.default_rng(9)
    x, v, u0 = _problem(rng, d=40, r=5)
    _, info = solve_basis(x, v, u0, 1.0, BasisSolverOptions(max_outer=1, method=method))
    assert info.outer_iterations == 1
    _, info = solve_basis(x, v, u0, 1.0, BasisSolverOptions(method=method))
    assert info.outer_iterations > 1


@pytest.mark.parametrize("rho1", [0.0, 1.0])
def test_assignment_ends_where_no_single_feature_move_lowers_the_objective(rho1):
    rng = np.random.default_rng(11)
    for _ in range(10):
        x, v, u0 = _problem(rng, d=14, r=3, n=25)
        u, _ = solve_basis(x, v, u0, rho1, BasisSolverOptions(method="assignment"))
        a = 2 * x @ v.T + rho1 * u0
        value = basis_objective(x, v, u, u0, rho1)
        owner = np.argmax(u, axis=1)
        owned = u.max(axis=1) > 0
        for i in range(u.shape[0]):
            for col in range(u.shape[1]):
                moved = owner.copy()
                moved[i] = col
                keep = owned.copy()
                keep[i] = True
                if col == owner[i] and owned[i] or len(set(moved[keep])) < u.shape[1]:
                    continue
                support = np.zeros_like(u)
                support[np.flatnonzero(keep), moved[keep]] = 1.0
                other = polish_on_supports(support, a)
                assert basis_objective(x, v, other, u0, rho1) >= value - 1e-12


def test_the_loop_s_projection_step_equals_project_oblique_nonneg():
    from fedmf_app.methods.sonmf.penalty_kernel import project_step

    rng = np.random.default_rng(7)
    u = np.abs(rng.standard_normal((9, 4)))
    g = rng.standard_normal((9, 4))
    g[:, 1] = 50.0  # the step kills column 1: it becomes the unit vector at its largest entry
    for t in (1e-3, 0.5, 1.0):
        out = np.empty_like(u)
        project_step(u, g, t, out)
        np.testing.assert_allclose(out, project_oblique_nonneg(u - t * g), rtol=0, atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_penalty_loop_equals_its_interpreted_form(seed):
    """The compiled solver gives the numbers of the same code run by the Python interpreter."""
    from fedmf_app.methods.sonmf.penalty_kernel import compiled_penalty_loop, penalty_loop

    rng = np.random.default_rng(seed)
    x, v, u0 = _problem(rng, d=15, r=4, n=30)
    a = 2.0 * x @ v.T + 0.5 * u0
    scale = np.linalg.norm(a)
    o = BasisSolverOptions(max_outer=60)
    args = (
        project_oblique_nonneg(u0),
        v @ v.T / scale,
        a / scale,
        0.25,
        o.sigma0,
        o.sigma_growth,
        o.sigma_max,
        o.max_outer,
        o.max_inner,
        o.inner_tol0,
        o.inner_tol_decay,
        o.inner_tol_min,
        o.feasibility_tol,
    )
    compiled = compiled_penalty_loop()(*args)
    interpreted = penalty_loop(*args)
    assert compiled[1:3] == interpreted[1:3]  # same outer and inner iteration counts
    np.testing.assert_allclose(compiled[0], interpreted[0], rtol=0, atol=1e-10)
    assert compiled[3] == pytest.approx(interpreted[3], abs=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_the_numpy_and_the_compiled_kernel_give_the_same_basis(seed):
    rng = np.random.default_rng(100 + seed)
    x, v, u0 = _problem(rng, d=18, r=4, n=35)
    numpy_kernel = BasisSolverOptions(method="penalty", kernel="numpy")
    compiled_kernel = BasisSolverOptions(method="penalty", kernel="compiled")
    u_numpy, info_numpy = solve_basis(x, v, u0, 0.5, numpy_kernel)
    u_compiled, info_compiled = solve_basis(x, v, u0, 0.5, compiled_kernel)
    np.testing.assert_allclose(u_compiled, u_numpy, rtol=0, atol=1e-10)
    assert info_compiled.objective == pytest.approx(info_numpy.objective, rel=1e-10)
    assert (info_compiled.outer_iterations, info_compiled.kept_start) == (
        info_numpy.outer_iterations,
        info_numpy.kept_start,
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_numpy_and_the_compiled_assignment_ascent_make_the_same_moves(seed):
    from fedmf_app.methods.sonmf.assignment_kernel import assignment_ascent, compiled_assignment_ascent

    rng = np.random.default_rng(300 + seed)
    d, r = 40, 5
    sq = np.maximum(rng.normal(size=(d, r)), 0.0) ** 2
    owner = rng.integers(-1, r, size=d).astype(np.int64)
    owner[:r] = np.arange(r)  # every column owns a row
    compiled_owner, numpy_owner = owner.copy(), owner.copy()
    compiled = compiled_assignment_ascent()(sq, compiled_owner, 50, np.zeros(r), True)
    interpreted = assignment_ascent(sq, numpy_owner, 50, np.zeros(r), True)
    np.testing.assert_array_equal(compiled_owner, numpy_owner)
    assert compiled == interpreted  # same value and pass count, bit for bit
    assert not np.array_equal(compiled_owner, owner)  # the ascent moved rows


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("keep_one", [True, False])
def test_the_vectorised_assignment_ascent_makes_the_loops_moves(seed, keep_one):
    # The federation's kernel ("numpy") scores blocks of rows at once: it must still move the
    # rows one at a time in the loop's order, so the owners, the value and the passes are the
    # loop's bit for bit, with or without column costs, unowned rows and ties.
    from fedmf_app.methods.sonmf.assignment_kernel import assignment_ascent, vectorised_assignment_ascent

    rng = np.random.default_rng(700 + seed)
    d, r = int(rng.integers(3, 120)), int(rng.integers(2, 12))
    sq = np.maximum(rng.normal(size=(d, r)), 0.0) ** 2
    if seed % 2:
        sq = np.round(sq, 1)  # equal gains: the first column must win, as in the loop
    cost = np.zeros(r) if keep_one else rng.uniform(0.0, 1.0, size=r)
    owner = rng.integers(-1 if not keep_one else 0, r, size=d).astype(np.int64)
    if keep_one:
        owner[: min(r, d)] = np.arange(min(r, d))  # every column owns a row
    loop_owner, vector_owner = owner.copy(), owner.copy()
    expected = assignment_ascent(sq, loop_owner, 50, cost, keep_one)
    got = vectorised_assignment_ascent(sq, vector_owner, 50, cost, keep_one)
    np.testing.assert_array_equal(vector_owner, loop_owner)
    assert got == expected
    assert not np.array_equal(loop_owner, owner)  # the ascent moved rows


@pytest.mark.parametrize("seed", range(3))
def test_the_assignment_solver_gives_the_same_basis_with_either_kernel(seed):
    rng = np.random.default_rng(400 + seed)
    x, v, u0 = _problem(rng, d=30, r=4, n=40)
    u_numpy, info_numpy = solve_basis(x, v, u0, 0.5, BasisSolverOptions(kernel="numpy"))
    u_compiled, info_compiled = solve_basis(x, v, u0, 0.5, BasisSolverOptions(kernel="compiled"))
    np.testing.assert_array_equal(u_numpy, u_compiled)
    assert info_numpy == info_compiled


def test_every_u_step_of_the_methods_goes_through_the_runs_basis_step():
    """Only the solver's module calls ``solve_basis``; the methods call ``SONMFParams.basis_step``."""
    folder = Path(__file__).resolve().parents[3] / "fedmf_app" / "methods" / "sonmf"
    callers = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "solve_basis":
                callers.add(path.name)
    assert callers == {"nonneg_orth.py"}


@pytest.mark.parametrize("method", ["assignment", "penalty"])
def test_a_basis_step_from_v_or_from_its_products_is_the_same_step(method):
    rng = np.random.default_rng(3)
    x, v = rng.random((12, 30)), rng.random((3, 30))
    u0 = random_feasible_basis(12, 3, rng)
    step = SONMFParams(basis=BasisSolverOptions(method=method, kernel="numpy")).basis_step
    assert step.needs_gram == (method == "penalty")
    from_v = step(x, u0, v)
    from_products = step.at_products(
        x, u0, x @ v.T, np.einsum("ij,ij->i", v, v), v @ v.T, float(np.vdot(x, x))
    )
    np.testing.assert_allclose(from_products, from_v, atol=1e-12)
    assert step.weight(float(np.vdot(v, v)), 3) == pytest.approx(0.01 * 2 * np.vdot(v, v) / 3)
