"""Clustering metrics against hand-computed cases."""

import itertools

import numpy as np
import pytest

from fedmf_app.common.clustering import kmeans_basis, kmeans_labels
from fedmf_app.common.metrics import clustering_scores, label_change


def test_a_permuted_labelling_is_perfect():
    truth = np.array([0, 0, 1, 1, 2, 2, 2])
    scores = clustering_scores(truth, np.array([5, 5, 3, 3, 9, 9, 9]))
    assert scores == pytest.approx({"acc": 1.0, "nmi": 1.0, "purity": 1.0, "ari": 1.0})


def test_known_contingency_tables():
    # classes x clusters [[2, 2, 0], [0, 0, 2]]: every cluster is pure, but a one-to-one matching
    # can use only one of the two clusters of class 0.
    split = clustering_scores(np.array([0, 0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, 2, 2]))
    assert split["purity"] == pytest.approx(1.0)
    assert split["acc"] == pytest.approx(4 / 6)
    # classes x clusters [[2, 1, 0], [0, 3, 0], [1, 0, 1]]: majorities 2 + 3 + 1, matching 2 + 3 + 1.
    mixed = clustering_scores(np.array([0, 0, 0, 1, 1, 1, 2, 2]), np.array([0, 0, 1, 1, 1, 1, 2, 0]))
    assert mixed["purity"] == pytest.approx(6 / 8) and mixed["acc"] == pytest.approx(6 / 8)
    # one cluster: purity and ACC are the largest class share; NMI and ARI are 0.
    one = clustering_scores(np.array([0, 0, 0, 1, 1, 2, 2, 2]), np.zeros(8, dtype=int))
    assert one == pytest.approx({"acc": 3 / 8, "purity": 3 / 8, "nmi": 0.0, "ari": 0.0})


def test_label_change_is_zero_for_a_renamed_partition_and_counts_moved_samples():
    a = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    assert label_change(a, np.array([7, 7, 4, 4, 1, 1, 1, 1])) == 0.0
    # one sample of cluster 2 joins cluster 1: 1 of 8 moved, whatever the numbering
    assert label_change(a, np.array([2, 2, 0, 0, 1, 0, 1, 1])) == pytest.approx(1 / 8)


def test_label_change_is_the_least_share_moved_over_every_renaming():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = int(rng.integers(2, 5))
        a, b = rng.integers(0, k, 30), rng.integers(0, k, 30)
        # brute force over the renamings of b's clusters onto a's
        least = min(np.mean(a != np.array(perm)[b]) for perm in itertools.permutations(range(k)))
        assert label_change(a, b) == pytest.approx(least)
        assert label_change(b, a) == pytest.approx(least)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one length"):
        clustering_scores(np.zeros(3), np.zeros(4))


def test_kmeans_is_seeded_and_finds_separated_groups():
    rng = np.random.default_rng(1)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = np.repeat([0, 1, 2], 20)
    points = centres[truth] + rng.standard_normal((60, 2))
    a = kmeans_labels(points, 3, np.random.default_rng(7))
    b = kmeans_labels(points, 3, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert clustering_scores(truth, a)["acc"] == 1.0


def test_kmeans_basis_is_feasible_and_groups_features_that_share_a_row_of_v():
    rng = np.random.default_rng(4)
    v = np.abs(rng.standard_normal((3, 50)))
    groups = np.array([0, 0, 1, 1, 1, 2, 2, 0, 2, 1])
    x = (1 + rng.random(10))[:, None] * v[groups]  # feature j = positive multiple of row groups[j]
    u = kmeans_basis(x, 3, np.random.default_rng(0))
    assert u.min() >= 0
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-12)
    found = u.argmax(axis=1)
    assert clustering_scores(groups, found)["acc"] == 1.0
    # fewer distinct features than r: still feasible (an empty group takes a feature)
    flat = kmeans_basis(np.ones((4, 5)), 3, np.random.default_rng(0))
    np.testing.assert_allclose(flat.T @ flat, np.eye(3), atol=1e-12)
