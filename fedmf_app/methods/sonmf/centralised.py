"""Centralised reference points on the pooled views (what a single party holding every view gets).

Both baselines see the views exactly as the clients do (after the same per-view preparation) and
are clustered with the same seeded k-means as the federated runs
(:func:`fedmf_app.common.clustering.kmeans_labels`):

* :func:`pooled_nmf_kmeans`: scikit-learn NMF of the concatenated views ``[X_1 ... X_m]``
  (``n x sum d_p``) with ``rank`` components, then k-means on the sample factor ``W`` (``n x rank``),
  the centralised counterpart of paper A's pipeline without the orthogonality and sparsity terms;
* :func:`concat_kmeans`: k-means on the concatenated views.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.decomposition import NMF
from sklearn.exceptions import ConvergenceWarning

from fedmf_app.common.clustering import kmeans_labels

__all__ = ["NMF_MAX_ITER", "concat_kmeans", "pooled_nmf_kmeans"]

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
