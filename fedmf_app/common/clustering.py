"""Seeded clusterings: the final clustering of paper A's protocol, a k-means start for ``U_p``
and a spectral start.

Paper A labels samples by k-means on the columns of ``V`` (rows of ``V^T``) with
10 replicates of at most 300 iterations each, keeping the replicate of least inertia.
:func:`kmeans_basis` starts a client's basis from k-means on its own features.
:func:`spectral_labels` clusters the samples' kNN graph (scikit-learn's spectral clustering).

scikit-learn is imported inside the functions: a deployed SuperNode starts a fresh ClientApp
process for every message, and only round 1 (the start of ``U_p``) needs it there.
"""

from __future__ import annotations

import warnings

import numpy as np

from fedmf_app.common.scaling import normalise_rows
from fedmf_app.common.sparse import issparse

__all__ = [
    "KMEANS_MAX_ITER",
    "KMEANS_REPLICATES",
    "SPECTRAL_ARPACK_MAX_ROWS",
    "SPECTRAL_NEIGHBOURS",
    "kmeans_basis",
    "kmeans_labels",
    "spectral_labels",
]

#: Replicates (k-means++ restarts) of the final k-means (paper A: 10).
KMEANS_REPLICATES = 10
#: Iterations per replicate (paper A: 300).
KMEANS_MAX_ITER = 300
#: [A] Neighbours of each sample in the graph of :func:`spectral_labels` (scikit-learn's default).
SPECTRAL_NEIGHBOURS = 10
#: Rows up to which :func:`spectral_labels` computes its eigenvectors by ARPACK (LOBPCG above).
SPECTRAL_ARPACK_MAX_ROWS = 5000


def kmeans_labels(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster the rows of ``points``.

    Parameters
    ----------
    points : ndarray or sparse matrix, shape (n, r)
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
    from sklearn.cluster import KMeans

    model = KMeans(
        n_clusters=k,
        n_init=KMEANS_REPLICATES,
        max_iter=KMEANS_MAX_ITER,
        random_state=int(rng.integers(2**31 - 1)),
    )
    if issparse(points):  # scikit-learn's k-means takes CSR as it is
        import scipy.sparse as sp

        return model.fit_predict(sp.csr_matrix(points, dtype=np.float64)).astype(np.int64)
    return model.fit_predict(np.asarray(points, dtype=np.float64)).astype(np.int64)


def spectral_labels(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster the rows of ``points`` by spectral clustering of their kNN graph.

    The graph links every row to its :data:`SPECTRAL_NEIGHBOURS` nearest other rows (Euclidean; all
    the others when there are fewer),
    symmetrised as :math:`(A + A^\\top)/2`; the rows are clustered by k-means
    (:data:`KMEANS_REPLICATES` replicates) on the ``k`` leading eigenvectors of its normalised
    adjacency, computed by ARPACK up to :data:`SPECTRAL_ARPACK_MAX_ROWS` rows and by LOBPCG above
    (ARPACK's shift-invert factorises the whole Laplacian: over 5 minutes at 100,000 rows, where
    LOBPCG takes 20 s and 0.4 GB). A graph of several components is clustered as it is.

    Parameters
    ----------
    points : ndarray or sparse matrix, shape (n, r)
        One row per sample, ``n >= 2``.
    k : int
        Number of clusters, ``1 <= k <= n``.
    rng : numpy.random.Generator
        Seeds the eigenvector start and the k-means replicates.

    Returns
    -------
    ndarray, shape (n,)
        Cluster of every sample, ``0..k-1`` (int64).
    """
    from sklearn.cluster import SpectralClustering

    model = SpectralClustering(
        n_clusters=k,
        affinity="nearest_neighbors",
        n_neighbors=min(SPECTRAL_NEIGHBOURS, points.shape[0] - 1),
        eigen_solver="arpack" if points.shape[0] <= SPECTRAL_ARPACK_MAX_ROWS else "lobpcg",
        n_init=KMEANS_REPLICATES,
        random_state=int(rng.integers(2**31 - 1)),
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Graph is not fully connected")
        return model.fit_predict(points).astype(np.int64)


def kmeans_basis(x: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """A feasible basis from k-means on the features: ``U[j, c] = 1/sqrt(|G_c|)`` for ``j`` in group ``c``.

    With ``U >= 0`` and ``U^T U = I`` every feature loads on one column, so ``x_j ~ U[j, c] v_c``:
    features of one group point the same way. The features (rows of ``x``, scaled to unit norm)
    are grouped by k-means into ``r`` groups; an empty group takes a feature of the largest one.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
        The view, features x samples; ``d >= r``.
    r : int
        Rank.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (d, r)
        Nonnegative with orthonormal columns (disjoint supports).
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    d = x.shape[0]
    if d < r:
        raise ValueError(f"a nonnegative orthonormal basis needs d >= r, got d={d}, r={r}")
    points = normalise_rows(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fewer distinct features than r
        groups = KMeans(
            n_clusters=r,
            n_init=KMEANS_REPLICATES,
            max_iter=KMEANS_MAX_ITER,
            random_state=int(rng.integers(2**31 - 1)),
        ).fit_predict(points)
    counts = np.bincount(groups, minlength=r)
    for c in np.flatnonzero(counts == 0):
        donor = int(np.argmax(counts))
        j = int(np.flatnonzero(groups == donor)[0])
        groups[j] = c
        counts[donor] -= 1
        counts[c] = 1
    u = np.zeros((d, r))
    u[np.arange(d), groups] = 1.0 / np.sqrt(counts[groups])
    return u
