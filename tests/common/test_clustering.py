"""Seeded clusterings: the spectral start separates what k-means cannot, and stays seeded."""

import numpy as np
import pytest

from fedmf_app.common.clustering import kmeans_labels, spectral_labels
from fedmf_app.common.metrics import clustering_scores


def rings(n, rng):
    """Two concentric rings (radii 1 and 4, noise 0.1): not linearly separable around their
    common centre, so k-means splits them by a line while their kNN graph has two components."""
    radius = np.repeat([1.0, 4.0], n // 2)
    angle = rng.uniform(0, 2 * np.pi, n)
    points = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    return points + rng.normal(0, 0.1, points.shape), np.repeat([0, 1], n // 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spectral_labels_recover_rings_that_kmeans_cuts(seed):
    points, truth = rings(400, np.random.default_rng(seed))
    spectral = clustering_scores(truth, spectral_labels(points, 2, np.random.default_rng(seed)))
    kmeans = clustering_scores(truth, kmeans_labels(points, 2, np.random.default_rng(seed)))
    assert spectral["acc"] == 1.0
    assert kmeans["acc"] < 0.75


def test_spectral_labels_are_seeded_and_take_sparse_rows():
    import scipy.sparse as sp

    points, _ = rings(200, np.random.default_rng(3))
    first = spectral_labels(points, 2, np.random.default_rng(5))
    np.testing.assert_array_equal(first, spectral_labels(points, 2, np.random.default_rng(5)))
    np.testing.assert_array_equal(first, spectral_labels(sp.csr_matrix(points), 2, np.random.default_rng(5)))
    assert first.dtype == np.int64 and set(np.unique(first)) == {0, 1}


def test_spectral_labels_on_fewer_rows_than_neighbours():
    """Fewer than 11 rows: each row is linked to all the others instead of failing."""
    points = np.random.default_rng(0).normal(size=(8, 3))
    labels = spectral_labels(points, 3, np.random.default_rng(0))
    assert labels.shape == (8,) and labels.min() >= 0 and labels.max() <= 2
