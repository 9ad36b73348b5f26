"""Sample graphs shared by the methods: kNN search, kNN similarities, Laplacians, adjacency.

A view's graph has :math:`O(Np)` edges for ``p`` neighbours, so every matrix here is a
``scipy.sparse`` CSR matrix; nothing ``N x N`` is ever dense. A kNN graph is either a weighted
symmetric similarity (:func:`knn_similarity`, paper B) or an ``(n, k)`` array of neighbour indices
(:func:`knn_indices`, paper C, ``-1`` padding a row with fewer neighbours), which
:func:`adjacency` turns into the binary symmetric matrix ``max(A, Aᵀ)``.

(8) similarity [A]: :math:`S_{ij} = 1` if :math:`x_j \\in N_p(x_i)` or :math:`x_i \\in N_p(x_j)`
(``binary``), or the heat kernel :math:`\\exp(-\\|x_i - x_j\\|^2/t)` on the same support (``heat``,
the GNMF convention) with :math:`t` the mean squared distance over the kNN edges [A].
Laplacian [P]: :math:`L = D - S`, :math:`D_{ii} = \\sum_j S_{ij}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

if TYPE_CHECKING:
    from sklearn.neighbors import NearestNeighbors

__all__ = ["SIMILARITIES", "adjacency", "knn_indices", "knn_similarity", "laplacian", "num_components"]

#: Edge weights of the kNN graph.
SIMILARITIES = ("binary", "heat")


def knn_similarity(x: np.ndarray, neighbours: int, similarity: str = "binary") -> sp.csr_matrix:
    """Symmetric kNN similarity :math:`S` of the rows of ``x``.

    Parameters
    ----------
    x : ndarray, shape (N, d)
        Samples x features.
    neighbours : int
        ``p``, neighbours per sample (excluding itself); must be < N.
    similarity : {"binary", "heat"}
        Edge weight: 1, or :math:`\\exp(-\\|x_i - x_j\\|^2/t)`.

    Returns
    -------
    csr_matrix, shape (N, N)
        Symmetric, zero diagonal, entries in (0, 1].
    """
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity {similarity!r} is not one of {SIMILARITIES}")
    n = x.shape[0]
    if not 1 <= neighbours < n:
        raise ValueError(f"neighbours = {neighbours} must be in [1, {n - 1}] for {n} samples")
    dist = _search(x, neighbours).kneighbors_graph(mode="distance").tocsr()
    if similarity == "binary":
        dist.data = np.ones_like(dist.data)
    else:
        sq = dist.data**2
        t = float(sq.mean()) if sq.mean() > 0 else 1.0
        dist.data = np.exp(-sq / t)
    # union of the two directions: S_ij = max(A_ij, A_ji)
    s = dist.maximum(dist.T).tocsr()
    s.setdiag(0.0)
    s.eliminate_zeros()
    return s


def laplacian(s: sp.spmatrix) -> sp.csr_matrix:
    """Graph Laplacian :math:`L = D - S`.

    Parameters
    ----------
    s : sparse matrix, shape (N, N)
        Symmetric similarity with zero diagonal.

    Returns
    -------
    csr_matrix, shape (N, N)
        Symmetric positive semi-definite; rows sum to zero.
    """
    degree = np.asarray(s.sum(axis=1)).ravel()
    return (sp.diags(degree) - s).tocsr()


def knn_indices(x: np.ndarray | sp.spmatrix, k: int) -> np.ndarray:
    """The ``k`` nearest other rows of every row (Euclidean).

    Parameters
    ----------
    x : ndarray or sparse matrix, shape (n, d)
    k : int
        Capped at ``n - 1``.

    Returns
    -------
    ndarray of int64, shape (n, min(k, n - 1))
        Nearest first; a row never lists itself (among exact duplicates, scikit-learn's rule of
        :meth:`~sklearn.neighbors.NearestNeighbors.kneighbors` decides).
    """
    n = x.shape[0]
    k = min(k, n - 1)
    if k < 1:
        return np.empty((n, 0), dtype=np.int64)
    return _search(x, k).kneighbors(return_distance=False).astype(np.int64)


def _search(x: np.ndarray | sp.spmatrix, k: int) -> NearestNeighbors:
    """The one kNN search of this module: each sample's ``k`` nearest *other* samples.

    Querying the fitted data itself (``X=None``) excludes every sample from its own neighbours,
    which :func:`knn_similarity` and :func:`knn_indices` both rely on.
    """
    from sklearn.neighbors import NearestNeighbors  # imported here: keeps config imports light

    return NearestNeighbors(n_neighbors=k).fit(x)


def adjacency(neighbours: np.ndarray, n: int | None = None) -> sp.csr_matrix:
    """Binary symmetric adjacency ``max(A, Aᵀ)`` of a neighbour-index array, no self loops.

    Parameters
    ----------
    neighbours : ndarray of int, shape (n, k)
        ``-1`` entries are ignored.
    n : int, optional
        Number of nodes (default ``neighbours.shape[0]``).

    Returns
    -------
    scipy.sparse.csr_matrix of float64, shape (n, n)
    """
    n = neighbours.shape[0] if n is None else n
    rows = np.repeat(np.arange(neighbours.shape[0]), neighbours.shape[1])
    cols = neighbours.ravel()
    keep = (cols >= 0) & (cols != rows)
    a = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    a = a.maximum(a.T).tocsr()
    a.data[:] = 1.0
    return a


def num_components(a: sp.spmatrix) -> int:
    """Connected components of an undirected graph.

    Parameters
    ----------
    a : sparse matrix, shape (n, n)

    Returns
    -------
    int
    """
    return int(connected_components(a, directed=False)[0])
