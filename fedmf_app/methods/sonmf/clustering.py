"""Paper A's final clustering: k-means on the samples' columns of the shared factor ``V`` (no Flower)."""

from __future__ import annotations

import numpy as np

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.scaling import normalise_rows

__all__ = ["CLUSTER_COLUMNS", "READS", "cluster_columns", "hellinger_rows"]

#: How :func:`cluster_columns` reads the columns of ``V``.
READS = ("as-is", "unit-norm", "hellinger")
#: Allowed values of run config ``sonmf.cluster-columns`` (``auto`` is resolved by the strategy).
CLUSTER_COLUMNS = ("auto", *READS)


def cluster_columns(v: np.ndarray, k: int, rule: str, rng: np.random.Generator) -> np.ndarray:
    """Cluster the samples by k-means on the columns of ``V``.

    Parameters
    ----------
    v : ndarray, shape (r, n)
        The final shared factor; column ``i`` describes sample ``i``.
    k : int
        Clusters, ``<= n``.
    rule : {"as-is", "unit-norm", "hellinger"}
        Cluster the columns as they are; each scaled to unit l2 norm first (the direction of
        a sample's loadings, not their size); or each scaled to sum one and square-rooted
        (``hellinger``: a sample's loadings read as proportions, so that the Euclidean distance
        of k-means is, up to a factor sqrt(2), the Hellinger distance between them). All-zero
        columns stay zero.
    rng : numpy.random.Generator
        Seeds the k-means replicates.

    Returns
    -------
    ndarray, shape (n,)
        Cluster of every sample.
    """
    if rule not in READS:
        raise ValueError(f"cluster-columns {rule!r} is not one of {READS}")
    if rule == "unit-norm":
        return kmeans_labels(normalise_rows(v.T), k, rng)
    if rule == "hellinger":
        return kmeans_labels(hellinger_rows(v.T), k, rng)
    return kmeans_labels(v.T, k, rng)


def hellinger_rows(points: np.ndarray) -> np.ndarray:
    """Each row scaled to sum one, then square-rooted (all-zero rows kept).

    Parameters
    ----------
    points : ndarray, shape (n, r)
        Nonnegative rows (e.g. ``V^T``).

    Returns
    -------
    ndarray, shape (n, r), float64
        Rows of unit l2 norm (zero rows stay zero): ``||a - b||_2^2 = 2 H(a, b)^2`` for the
        Hellinger distance ``H`` between the proportions of two rows.
    """
    points = np.asarray(points, dtype=np.float64)
    if np.any(points < 0):
        raise ValueError("cluster-columns = hellinger needs a nonnegative V")
    sums = points.sum(axis=1, keepdims=True)
    return np.sqrt(points / np.where(sums > 0, sums, 1.0))
