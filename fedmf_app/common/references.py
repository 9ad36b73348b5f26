"""Centralised reference points on the pooled views (what a single party holding every view gets).

Both baselines see the views exactly as the clients do (after the same per-view preparation) and
are clustered with the same seeded k-means as the federated runs
(:func:`fedmf_app.common.clustering.kmeans_labels`):

* :func:`pooled_nmf_kmeans`: scikit-learn NMF of the concatenated views ``[X_1 ... X_m]``
  (``n x sum d_p``) with ``rank`` components, then k-means on the sample factor ``W`` (``n x rank``),
  the centralised counterpart of paper A's pipeline without the orthogonality and sparsity terms;
* :func:`concat_kmeans`: k-means on the concatenated views;
* :func:`single_view_kmeans`: k-means on one view; the best of them ("best single view") is chosen
  with the labels, so it is an optimistic reference.

:func:`reference_scores` runs all three for a set of seeds.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import NMF
from sklearn.exceptions import ConvergenceWarning

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.metrics import clustering_scores

__all__ = [
    "NMF_MAX_ITER",
    "REFERENCES",
    "concat_kmeans",
    "pooled_nmf_kmeans",
    "reference_scores",
    "single_view_kmeans",
]

#: Iterations of scikit-learn's NMF solver (coordinate descent, ``init="nndsvda"``).
NMF_MAX_ITER = 500


def pooled_nmf_kmeans(views: list[np.ndarray], rank: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """NMF of the concatenated views, then k-means on the sample factor.

    Parameters
    ----------
    views : list of ndarray, each shape (n, d_p)
        Nonnegative, prepared as the clients prepare them.
    rank : int
        NMF components.
    k : int
        Clusters.
    rng : numpy.random.Generator
        Seeds the NMF initialisation's random fill and the k-means replicates.

    Returns
    -------
    ndarray, shape (n,)
        Cluster of every sample.
    """
    pooled = np.hstack(views)
    model = NMF(
        n_components=rank, init="nndsvda", max_iter=NMF_MAX_ITER, random_state=int(rng.integers(2**31 - 1))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        w = model.fit_transform(pooled)
    return kmeans_labels(w, k, rng)


def concat_kmeans(views: list[np.ndarray], k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means on the concatenated views.

    Parameters
    ----------
    views : list of ndarray, each shape (n, d_p)
    k : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (n,)
    """
    return kmeans_labels(np.hstack(views), k, rng)


def single_view_kmeans(view: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means on one view.

    Parameters
    ----------
    view : ndarray, shape (n, d)
    k : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (n,)
    """
    return kmeans_labels(view, k, rng)


#: Names of the reference points, in table order.
REFERENCES = ("k-means, concatenated views", "NMF + k-means, pooled views", "best single view (k-means)")


def reference_scores(
    views: list[np.ndarray], truth: np.ndarray, k: int, seeds: list[int], rank: int | None = None
) -> dict[str, list[dict[str, float]]]:
    """The three reference points on the same prepared views, one score dict per seed.

    Parameters
    ----------
    views : list of ndarray or scipy sparse matrix, each shape (n, d_p)
        Nonnegative, prepared as the clients prepare theirs; sparse ones are made dense (the
        reference points are for data sets that fit in memory dense).
    truth : ndarray, shape (n,)
        Ground-truth classes (for scoring, and to pick the best single view).
    k : int
        Clusters.
    seeds : list of int
        One ``numpy.random.default_rng(seed)`` per seed and reference.
    rank : int, optional
        NMF components (default ``k``).

    Returns
    -------
    dict
        :data:`REFERENCES` name -> list of :func:`~fedmf_app.common.metrics.clustering_scores`
        dicts (one per seed); the single view is the one with the best mean ACC over the seeds.
    """
    views = [v.toarray() if sp.issparse(v) else v for v in views]
    concat = [clustering_scores(truth, concat_kmeans(views, k, np.random.default_rng(s))) for s in seeds]
    nmf = [
        clustering_scores(truth, pooled_nmf_kmeans(views, rank or k, k, np.random.default_rng(s)))
        for s in seeds
    ]
    per_view = [
        [clustering_scores(truth, single_view_kmeans(v, k, np.random.default_rng(s))) for s in seeds]
        for v in views
    ]
    best = max(per_view, key=lambda runs: np.mean([r["acc"] for r in runs]))
    return dict(zip(REFERENCES, (concat, nmf, best), strict=True))
