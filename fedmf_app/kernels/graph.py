"""kNN similarity graphs and their Laplacians, kept sparse (paper B, ``spec/ALGORITHMS.md`` 2.1).

A view's graph has :math:`O(Np)` edges for ``p`` neighbours, so every matrix here is a
``scipy.sparse`` CSR matrix; nothing ``N x N`` is ever dense.

(8) similarity [A]: :math:`S_{ij} = 1` if :math:`x_j \\in N_p(x_i)` or :math:`x_i \\in N_p(x_j)`
(``binary``), or the heat kernel :math:`\\exp(-\\|x_i - x_j\\|^2/t)` on the same support (``heat``,
the GNMF convention) with :math:`t` the mean squared distance over the kNN edges [A].
Laplacian [P]: :math:`L = D - S`, :math:`D_{ii} = \\sum_j S_{ij}`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["SIMILARITIES", "knn_similarity", "laplacian"]

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
    from sklearn.neighbors import kneighbors_graph  # imported here: keeps config imports light

    dist = kneighbors_graph(x, neighbours, mode="distance", include_self=False).tocsr()
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
