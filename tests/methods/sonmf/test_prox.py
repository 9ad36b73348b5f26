"""The prox of mu*||.||_{2,1} + nonnegativity: optimality conditions and nonexpansiveness."""

import numpy as np
import pytest

from fedmf_app.methods.sonmf.prox import l21_norm, prox_l21_nonneg


@pytest.mark.parametrize("t", [0.0, 0.3, 2.0, 50.0])
def test_prox_satisfies_optimality_conditions(t):
    rng = np.random.default_rng(0)
    z = rng.standard_normal((30, 8)) * rng.uniform(0.1, 5, size=(30, 1))
    v = prox_l21_nonneg(z, t)
    assert np.all(v >= 0)
    for zi, vi in zip(z, v):
        norm = np.linalg.norm(vi)
        if norm == 0:
            # 0 in z - 0 - t*B - N_{>=0}(0)  <=>  ||max(z, 0)|| <= t
            assert np.linalg.norm(np.maximum(zi, 0)) <= t + 1e-12
        else:
            pos = vi > 0
            # on the support: z - v = t v/||v||; off it: z <= 0 (normal cone of v >= 0)
            np.testing.assert_allclose((zi - vi)[pos], t * vi[pos] / norm, atol=1e-12)
            assert np.all(zi[~pos] <= 1e-12)


def test_prox_minimises_its_objective_against_perturbations():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((5, 6))
    t = 0.7

    def objective(v):
        return 0.5 * np.sum((v - z) ** 2) + t * l21_norm(v)

    v = prox_l21_nonneg(z, t)
    for _ in range(500):
        w = np.maximum(v + 0.05 * rng.standard_normal(v.shape), 0)
        assert objective(w) >= objective(v) - 1e-12


def test_prox_is_nonexpansive():
    rng = np.random.default_rng(2)
    for _ in range(200):
        a, b = rng.standard_normal((2, 6, 10)) * 3
        t = rng.uniform(0, 3)
        assert np.linalg.norm(prox_l21_nonneg(a, t) - prox_l21_nonneg(b, t)) <= np.linalg.norm(a - b) + 1e-12


def test_prox_with_zero_threshold_is_projection_and_does_not_modify_input():
    z = np.array([[1.0, -2.0, 3.0], [-1.0, -1.0, -1.0]])
    copy = z.copy()
    np.testing.assert_array_equal(prox_l21_nonneg(z, 0.0), np.maximum(z, 0))
    np.testing.assert_array_equal(z, copy)


def test_prox_and_averaging_do_not_commute():
    # The motivation for variable splitting (paper A, Section 2.2).
    z1, z2 = np.array([[2.0, 0.0]]), np.array([[-2.0, 0.0]])
    t = 1.0
    assert l21_norm(prox_l21_nonneg((z1 + z2) / 2, t)) == 0.0
    assert l21_norm((prox_l21_nonneg(z1, t) + prox_l21_nonneg(z2, t)) / 2) == pytest.approx(0.5)


def test_negative_threshold_is_rejected():
    with pytest.raises(ValueError, match="nonnegative"):
        prox_l21_nonneg(np.ones((2, 2)), -1.0)
