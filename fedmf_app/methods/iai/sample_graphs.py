"""Paper C's sample graphs: a client's kNN graph over its observed rows, the server's first global
graph; the parameter-free anchor graphs (:func:`~fedmf_app.common.graphs.anchor_graph`,
shared with paper B) are re-exported from :mod:`fedmf_app.common.graphs`.

A kNN graph travels as an ``(n, k)`` integer array of neighbour indices (``-1`` pads a row with
fewer neighbours, e.g. a sample the client does not observe);
:func:`fedmf_app.common.graphs.adjacency` turns it into a sparse matrix.
"""

from __future__ import annotations

import numpy as np

from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_indices

__all__ = ["START_GRAPHS", "anchor_graph", "anchor_matrix", "observed_knn", "start_graph"]

#: How the server merges the clients' kNN graphs into the first global graph.
START_GRAPHS = ("support", "union")


def observed_knn(features: np.ndarray, observed: np.ndarray, k: int) -> np.ndarray:
    """kNN graph of a client over its observed rows, in global sample indices.

    Parameters
    ----------
    features : ndarray, shape (n, d)
        All n rows; unobserved rows are ignored.
    observed : ndarray of bool, shape (n,)
    k : int

    Returns
    -------
    ndarray of int64, shape (n, k)
        Neighbour indices; rows of unobserved samples (and missing slots when fewer than ``k + 1``
        rows are observed) are ``-1``.
    """
    rows = np.flatnonzero(observed)
    out = np.full((features.shape[0], k), -1, dtype=np.int64)
    local = knn_indices(features[rows], k)
    out[rows, : local.shape[1]] = rows[local]
    return out


def start_graph(client_graphs: list[np.ndarray], k: int, rule: str = "support") -> np.ndarray:
    """First global graph A_g⁰ from the clients' kNN graphs.

    Parameters
    ----------
    client_graphs : list of ndarray of int, each (n, k_m)
        Each client's neighbour indices (``-1`` for samples it does not observe).
    k : int
        Neighbours kept per sample with ``rule="support"``.
    rule : {"support", "union"}
        ``support`` [A]: per sample, the ``k`` neighbours listed by the most views (ties:
        the smaller sum of ranks, then the smaller index). ``union``: the paper's literal
        ``1[Σ_m A^(m) > 0]``, every neighbour any view lists.

    Returns
    -------
    ndarray of int64, shape (n, k')
        Neighbour indices, ``-1`` padded (``k' = k`` for ``support``).

    Raises
    ------
    ValueError
        On an unknown rule.
    """
    if rule not in START_GRAPHS:
        raise ValueError(f"unknown start-graph rule {rule!r}; use one of {START_GRAPHS}")
    n = client_graphs[0].shape[0]
    stacked = np.concatenate(client_graphs, axis=1)
    ranks = np.concatenate([np.broadcast_to(np.arange(g.shape[1]), g.shape) for g in client_graphs], axis=1)
    width = k if rule == "support" else stacked.shape[1]
    out = np.full((n, width), -1, dtype=np.int64)
    for i in range(n):
        valid = stacked[i] >= 0
        cand, inverse = np.unique(stacked[i][valid], return_inverse=True)
        if cand.size == 0:
            continue
        support = np.bincount(inverse, minlength=cand.size)
        rank_sum = np.bincount(inverse, weights=ranks[i][valid], minlength=cand.size)
        order = np.lexsort((cand, rank_sum, -support))[:width]
        out[i, : order.size] = cand[order]
    return out
