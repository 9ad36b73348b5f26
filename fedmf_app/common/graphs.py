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

An anchor graph (:func:`anchor_graph`) links every sample to its ``s`` nearest of ``r`` anchors
only: an ``(n, r)`` row-stochastic matrix with ``s`` nonzeros per row, :math:`O(ns)` memory
(papers B at scale and C).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.neighbour_search import ivf_neighbours, without_queries
from fedmf_app.common.sparse import issparse

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sklearn.neighbors import NearestNeighbors

__all__ = [
    "SIMILARITIES",
    "adjacency",
    "anchor_graph",
    "anchor_matrix",
    "knn_indices",
    "knn_similarity",
    "laplacian",
    "modularity",
    "num_components",
]

#: Edge weights of the kNN graph.
SIMILARITIES = ("binary", "heat")
#: Samples per block of the anchor distances (a block of ``n x r`` float64 at a time).
ANCHOR_BLOCK_ROWS = 8192


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
    import scipy.sparse as sp

    degree = np.asarray(s.sum(axis=1)).ravel()
    return (sp.diags(degree) - s).tocsr()


def knn_indices(
    x: np.ndarray | sp.spmatrix, k: int, exact_rows: int | None = None, rows: np.ndarray | None = None
) -> np.ndarray:
    """The ``k`` nearest other rows of every row, or of the listed ``rows`` (Euclidean).

    Parameters
    ----------
    x : ndarray or sparse matrix, shape (n, d)
    k : int
        Capped at ``n - 1``.
    exact_rows : int, optional
        Largest ``n`` searched exactly; a dense ``x`` of more rows is searched approximately
        (:func:`~fedmf_app.common.neighbour_search.ivf_neighbours`). Default: always exact.
    rows : ndarray of int, shape (q,), optional
        The queries, as row indices of ``x``, each searched against all ``n`` rows (default:
        every row).

    Returns
    -------
    ndarray of int64, shape (q, min(k, n - 1))
        Nearest first; a row never lists itself (among exact duplicates, scikit-learn's rule of
        :meth:`~sklearn.neighbors.NearestNeighbors.kneighbors` decides which other rows are
        kept); an approximate list may end in ``-1`` padding.
    """
    n = x.shape[0]
    k = min(k, n - 1)
    if k < 1:
        return np.empty((n if rows is None else len(rows), 0), dtype=np.int64)
    if exact_rows is not None and n > exact_rows and not issparse(x):
        return ivf_neighbours(x, k, rows)
    if rows is None:
        return _search(x, k).kneighbors(return_distance=False).astype(np.int64)
    # a query is among its own results, and not always first among exact ties: drop it wherever it is
    found = _search(x, k + 1).kneighbors(x[rows], return_distance=False)
    return without_queries(found, rows, k).astype(np.int64)


def _search(x: np.ndarray | sp.spmatrix, k: int) -> NearestNeighbors:
    """The one kNN search of this module, fitted on ``x``: queried with ``X=None`` it gives each
    sample's ``k`` nearest *other* samples (what :func:`knn_similarity` and :func:`knn_indices`
    rely on), queried with rows of ``x`` their ``k`` nearest, themselves included.
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
    import scipy.sparse as sp

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
    from scipy.sparse.csgraph import connected_components  # imported here: keeps config imports light

    return int(connected_components(a, directed=False)[0])


def modularity(a: sp.spmatrix, labels: np.ndarray) -> float:
    """Newman's modularity of a partition of an undirected weighted graph.

    :math:`Q = \\sum_c \\left[\\frac{W_{cc}}{2m} - \\left(\\frac{d_c}{2m}\\right)^2\\right]`, with
    :math:`W_{cc}` the summed weights of the entries inside cluster :math:`c` (both directions),
    :math:`d_c` its summed degrees and :math:`2m` the summed degrees of the graph: the share of
    edges inside the clusters minus its expectation for random edges with the same degrees.

    Parameters
    ----------
    a : sparse matrix, shape (n, n)
        Symmetric, nonnegative.
    labels : ndarray of int, shape (n,)
        Cluster of every node, ``0..K-1``.

    Returns
    -------
    float
        In ``[-1/2, 1)``; 0 for a graph without edges.
    """
    import scipy.sparse as sp

    a = sp.csr_matrix(a, dtype=np.float64)
    degree = np.asarray(a.sum(axis=1)).ravel()
    total = degree.sum()
    if total <= 0:
        return 0.0
    k = int(labels.max()) + 1
    member = sp.csr_matrix((np.ones(labels.size), (np.arange(labels.size), labels)), shape=(labels.size, k))
    inside = np.asarray((member.T @ a @ member).diagonal()).ravel()
    volume = member.T @ degree
    return float(np.sum(inside / total - (volume / total) ** 2))


def anchor_graph(
    embedding: np.ndarray | sp.spmatrix, anchors: np.ndarray | sp.spmatrix, neighbours: int
) -> tuple[np.ndarray, np.ndarray]:
    """Parameter-free anchor graph of SFMC (Li et al. 2020).

    For sample i with squared distances ``d_i1 <= ... <= d_i,s+1`` to its nearest anchors,

        G_ij = (d_i,s+1 - d_ij) / (s d_i,s+1 - Σ_{l<=s} d_il)   for its s nearest anchors, else 0,

    so every row sums to one (uniform ``1/s`` when the s+1 distances tie). The distances are
    computed :data:`ANCHOR_BLOCK_ROWS` samples at a time, so the memory is :math:`O(ns)` plus one
    block; a sparse ``embedding`` stays sparse (only the ``r`` anchors are made dense).

    Parameters
    ----------
    embedding : ndarray or sparse matrix, shape (n, d)
    anchors : ndarray or sparse matrix, shape (r, d)
    neighbours : int
        Anchors per sample s; needs ``r >= s + 1``.

    Returns
    -------
    indices : ndarray of int64, shape (n, s)
        Anchor index of each nonzero.
    values : ndarray of float64, shape (n, s)
        The weights G_ij; nonnegative, rows sum to one.

    Raises
    ------
    ValueError
        When ``r < s + 1``.
    """
    r, s = anchors.shape[0], neighbours
    if r < s + 1:
        raise ValueError(f"an anchor graph with s = {s} neighbours needs at least {s + 1} anchors, got {r}")
    anchors = anchors.toarray() if issparse(anchors) else np.asarray(anchors)
    anchor_sq = (anchors**2).sum(1)[None, :]
    n = embedding.shape[0]
    indices = np.empty((n, s), dtype=np.int64)
    values = np.empty((n, s))
    for start in range(0, n, ANCHOR_BLOCK_ROWS):
        block = embedding[start : start + ANCHOR_BLOCK_ROWS]
        if issparse(block):
            block_sq = np.asarray(block.multiply(block).sum(1))
        else:
            block_sq = (block**2).sum(1)[:, None]
        sq = np.maximum(block_sq - 2.0 * block @ anchors.T + anchor_sq, 0.0)
        nearest = np.argpartition(sq, s, axis=1)[:, : s + 1]
        d = np.take_along_axis(sq, nearest, axis=1)
        order = np.argsort(d, axis=1)
        nearest = np.take_along_axis(nearest, order, axis=1)
        d = np.take_along_axis(d, order, axis=1)
        top, last = d[:, :s], d[:, s : s + 1]
        numer = last - top
        denom = numer.sum(axis=1, keepdims=True)
        tied = denom[:, 0] <= 1e-12 * np.maximum(last[:, 0], 1e-300)
        stop = start + block.shape[0]
        indices[start:stop] = nearest[:, :s]
        values[start:stop] = np.where(tied[:, None], 1.0 / s, numer / np.where(tied[:, None], 1.0, denom))
    return indices, values


def anchor_matrix(indices: np.ndarray, values: np.ndarray, num_anchors: int) -> sp.csr_matrix:
    """Sparse ``(n, r)`` anchor graph from :func:`anchor_graph`'s output.

    Parameters
    ----------
    indices : ndarray of int, shape (n, s)
    values : ndarray, shape (n, s)
    num_anchors : int

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, r)
    """
    import scipy.sparse as sp

    n, s = indices.shape
    rows = np.repeat(np.arange(n), s)
    return sp.csr_matrix((values.ravel(), (rows, indices.ravel())), shape=(n, num_anchors))
