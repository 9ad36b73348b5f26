"""Final clustering of a learned representation: seeded k-means with paper A's protocol.

Paper A (spec 1.11) labels samples by k-means on the columns of ``V`` (rows of ``V^T``) with
10 replicates of at most 300 iterations each, keeping the replicate of least inertia.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

__all__ = ["KMEANS_MAX_ITER", "KMEANS_REPLICATES", "kmeans_labels"]

#: Replicates (k-means++ restarts) of the final k-means (paper A: 10).
KMEANS_REPLICATES = 10
#: Iterations per replicate (paper A: 300).
KMEANS_MAX_ITER = 300


def kmeans_labels(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster the rows of ``points``.

    Parameters
    ----------
    points : ndarray, shape (n, r)
        One row per sample (e.g. ``V^T``).
    k : int
        Number of clusters, ``1 <= k <= n``.
    rng : numpy.random.Generator
        Seeds the replicates.

    Returns
    -------
    ndarray, shape (n,)
        Cluster of every sample, ``0..k-1`` (int64).
    """
    model = KMeans(n_clusters=k, n_init=KMEANS_REPLICATES, max_iter=KMEANS_MAX_ITER,
                   random_state=int(rng.integers(2**31 - 1)))
    return model.fit_predict(np.asarray(points, dtype=np.float64)).astype(np.int64)
