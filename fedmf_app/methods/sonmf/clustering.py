"""Paper A's final clustering: k-means on the samples' columns of the shared factor ``V`` (no Flower)."""

from __future__ import annotations

import numpy as np

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.scaling import normalise_rows

__all__ = ["CLUSTER_COLUMNS", "READS", "cluster_columns"]

#: How :func:`cluster_columns` reads the columns of ``V``.
READS = ("as-is", "unit-norm")
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
    rule : {"as-is", "unit-norm"}
        Cluster the columns as they are, or each scaled to unit l2 norm first (the direction of
        a sample's loadings, not their size; all-zero columns stay zero).
    rng : numpy.random.Generator
        Seeds the k-means replicates.

    Returns
    -------
    ndarray, shape (n,)
        Cluster of every sample.
    """
    if rule not in READS:
        raise ValueError(f"cluster-columns {rule!r} is not one of {READS}")
    points = normalise_rows(v.T) if rule == "unit-norm" else v.T
    return kmeans_labels(points, k, rng)
