"""The U step's proximal weight on the data's scale, and the federated sketch start."""

import numpy as np
import pytest

from fedmf_app.methods.sonmf.nonneg_orth import is_feasible_basis, random_feasible_basis, solve_basis
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.reference import synthetic_views
from fedmf_app.methods.sonmf.start import (
    basis_from_coefficients,
    coefficients_from_sketch,
    gram_sketch,
    sketch_test_matrix,
)
from fedmf_app.methods.sonmf.updates import SONMFParams, local_loss, local_round, regulariser, server_step


def _normalised_view(seed=0):
    """One planted view scaled to unit Frobenius norm, as real views are prepared."""
    x = synthetic_views(m=1, h=0.0, seed=seed)[0].x
    return x / np.linalg.norm(x)


def test_u_step_with_the_data_scaled_weight_does_not_depend_on_the_data_scale():
    # X -> cX, V -> cV multiplies phi by c^2 when rho1 is relative to the data term; c = 4 keeps
    # every floating-point operation exact, so the two solves take the same steps.
    rng = np.random.default_rng(0)
    x = _normalised_view()
    v = np.abs(rng.standard_normal((6, x.shape[1]))) * 0.05
    u0 = random_feasible_basis(x.shape[0], 6, rng)
    params = SONMFParams()
    u_small, _ = solve_basis(x, v, u0, params.basis_weight(v), params.basis)
    u_large, _ = solve_basis(4.0 * x, 4.0 * v, u0, params.basis_weight(4.0 * v), params.basis)
    np.testing.assert_array_equal(u_small, u_large)
    assert params.basis_weight(4.0 * v) == 16.0 * params.basis_weight(v)


def _alternating_run(x, params, rounds, seed=0):
    """One client, tau = 1, eta_g = 1: alternating U step and proximal gradient step on V from a
    start at the data's scale; returns the objective after every round and the first and last U."""
    rng = np.random.default_rng(seed)
    r = 6
    u = random_feasible_basis(x.shape[0], r, rng)
    u_start = u.copy()
    v_bar = np.abs(rng.standard_normal((r, x.shape[1]))) * np.linalg.norm(x) / np.sqrt(r * x.shape[1])
    v = prox_l21_nonneg(v_bar, params.effective_lr * params.mu)
    objective = [local_loss(x, u, v) + regulariser(v, params.mu)]
    for _ in range(rounds):
        out = local_round(x, u, v_bar, params, None, None)
        u = out.u
        v_bar, v = server_step(v, [out.v_hat], params)
        objective.append(local_loss(x, u, v) + regulariser(v, params.mu))
    return np.array(objective), u_start, u


@pytest.mark.parametrize("seed", [0, 1])
def test_objective_decreases_and_u_learns_with_the_default_weight(seed):
    # With tau = 1 and eta_g = 1 a round is a U step (never worse than its start: f_p falls for
    # any rho1 >= 0) and a proximal gradient step of size alpha <= 1/L_2 = 1/2 on V, so
    # F = f + h is nonincreasing; on data of unit Frobenius norm the default weight lets U move.
    x = _normalised_view(seed)
    params = SONMFParams(local_steps=1, global_lr=1.0, local_lr=0.25)
    objective, u_start, u_end = _alternating_run(x, params, rounds=25, seed=seed)
    assert np.all(np.diff(objective) <= 1e-12 * objective[0])
    assert objective[-1] < 0.5 * objective[0]
    assert is_feasible_basis(u_end)
    assert np.any(np.argmax(u_end, axis=1) != np.argmax(u_start, axis=1))


def test_absolute_weight_freezes_u_on_normalised_data():
    # The absolute weight (rho1 = 1 as it is) outweighs the data term of a unit-norm view: no
    # feature ever leaves the component of its random start.
    x = _normalised_view()
    params = SONMFParams(local_steps=1, global_lr=1.0, local_lr=0.25, rho1=1.0, rho1_scale="absolute")
    _, u_start, u_end = _alternating_run(x, params, rounds=10)
    np.testing.assert_array_equal(np.argmax(u_end, axis=1), np.argmax(u_start, axis=1))


def test_sketch_sum_gives_the_stacked_views_singular_pairs():
    # The sum of the clients' shares is the stacked views' sketch; with l >= rank(X) the Nystrom
    # approximation is exact, so V^1's rows come from the exact leading singular pairs.
    rng = np.random.default_rng(3)
    n, r, m = 60, 4, 3
    latent = np.abs(rng.standard_normal((r + 2, n)))
    xs = [np.abs(rng.standard_normal((d, r + 2))) @ latent for d in (9, 14, 7)]
    omega = sketch_test_matrix(n, r, rng)
    shares = [gram_sketch(x, omega) for x in xs]
    stacked = np.vstack(xs)
    np.testing.assert_allclose(np.sum(shares, axis=0), stacked.T @ stacked @ omega, rtol=1e-12)
    v1 = coefficients_from_sketch(np.sum(shares, axis=0), omega, r, m, "nndsvd")
    _, s, wt = np.linalg.svd(stacked, full_matrices=False)
    for j in range(r):
        row = v1[j] / (s[j] / np.sqrt(m))
        expected = max(np.maximum(wt[j], 0), np.maximum(-wt[j], 0), key=np.linalg.norm)
        np.testing.assert_allclose(row, expected, atol=1e-8)
    assert np.all(v1 >= 0)


def test_clusters_reading_starts_each_component_as_one_planted_group_of_samples():
    # Samples planted in r groups, each group a different nonnegative profile of the features of
    # every view (plus a common part, so that the leading singular vector is the mean sample):
    # the clusters reading gives one indicator row per planted group, the same energy as the
    # leading singular values, and the same groups at every seed of its k-means.
    rng = np.random.default_rng(4)
    n, r, m = 90, 3, 2
    groups = np.repeat(np.arange(r), n // r)
    profiles = [np.abs(rng.standard_normal((d, r))) * 3 + 1.0 for d in (12, 15)]
    xs = [p[:, groups] + 0.05 * np.abs(rng.standard_normal((p.shape[0], n))) for p in profiles]
    omega = sketch_test_matrix(n, r, rng)
    y = np.sum([gram_sketch(x, omega) for x in xs], axis=0)
    _, s, _ = np.linalg.svd(np.vstack(xs), full_matrices=False)
    for seed in range(3):
        v1 = coefficients_from_sketch(y, omega, r, m, "clusters", np.random.default_rng(seed))
        assert np.all(np.count_nonzero(v1, axis=0) == 1)  # every sample in exactly one component
        found = np.argmax(v1, axis=0)
        assert len(set(zip(found, groups))) == r  # the planted groups, up to their order
        # the noise makes rank(X) > l, so the sketch's singular values are close, not exact
        assert np.sum(v1**2) == pytest.approx(np.sum(s[:r] ** 2) / m, rel=1e-4)
    with pytest.raises(ValueError, match="rng"):
        coefficients_from_sketch(y, omega, r, m, "clusters")


def test_basis_from_coefficients_is_feasible_and_recovers_planted_supports():
    # Features planted in disjoint groups, one per component: fitting U to the planted V recovers
    # the groups, and every component gets a feature even when V favours one component.
    view = synthetic_views(m=1, h=0.0, seed=2)[0]
    u = basis_from_coefficients(view.x, view.v_true)
    assert is_feasible_basis(u)
    np.testing.assert_array_equal(np.argmax(u, axis=1), np.argmax(view.u_true, axis=1))
    skewed = np.vstack([view.v_true[:1] * 100, view.v_true[1:]])
    assert is_feasible_basis(basis_from_coefficients(view.x, skewed))
