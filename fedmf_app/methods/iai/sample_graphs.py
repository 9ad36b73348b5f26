"""Paper C's sample graphs: a client's kNN graph over its observed rows, the server's first global
graph and its global kNN of the fused anchor graph (:func:`anchor_knn`); the parameter-free anchor
graphs (:func:`~fedmf_app.common.graphs.anchor_graph`,
shared with paper B) are re-exported from :mod:`fedmf_app.common.graphs`.

A kNN graph travels as an ``(n, k)`` integer array of neighbour indices (``-1`` pads a row with
fewer neighbours, e.g. a sample the client does not observe);
:func:`fedmf_app.common.graphs.adjacency` turns it into a sparse matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_indices
from fedmf_app.methods.iai.rank_fusion import rank_fusion

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Largest distance block (queries x candidates) :func:`anchor_knn` holds at once.
_BLOCK = 1 << 22

__all__ = [
    "START_GRAPHS",
    "anchor_graph",
    "anchor_knn",
    "anchor_matrix",
    "imputed_lists",
    "observed_knn",
    "start_graph",
]

#: How the server merges the clients' kNN graphs into the first global graph.
START_GRAPHS = ("rank", "support", "union")


def observed_knn(
    features: np.ndarray, observed: np.ndarray, k: int, exact_rows: int | None = None
) -> np.ndarray:
    """kNN graph of a client over its observed rows, in global sample indices.

    Parameters
    ----------
    features : ndarray, shape (n, d)
        All n rows; unobserved rows are ignored.
    observed : ndarray of bool, shape (n,)
    k : int
    exact_rows : int, optional
        Largest search done exactly (see :func:`~fedmf_app.common.graphs.knn_indices`).

    Returns
    -------
    ndarray of int64, shape (n, k)
        Neighbour indices; rows of unobserved samples (and missing slots when fewer than ``k + 1``
        rows are observed, or an approximate search found fewer) are ``-1``.
    """
    rows = np.flatnonzero(observed)
    out = np.full((features.shape[0], k), -1, dtype=np.int64)
    local = knn_indices(features[rows], k, exact_rows)
    out[rows, : local.shape[1]] = np.where(local >= 0, rows[local], -1)
    return out


def imputed_lists(
    features: np.ndarray,
    observed: np.ndarray,
    depth: int,
    observed_lists: np.ndarray | None = None,
    exact_rows: int | None = None,
) -> np.ndarray:
    """A view's neighbour lists after imputation: an observed row ranks the observed rows, a
    missing row ranks every row by its imputed code.

    An observed row's list is the one of :func:`observed_knn`, the same in every round (its evidence
    is its own code only); the imputation adds a list for each row the view does not observe, whose
    candidates include other imputed rows (two samples that both miss this view are near when their
    neighbourhoods in the other views are).

    Parameters
    ----------
    features : ndarray, shape (n, d)
        Every row, the unobserved ones imputed.
    observed : ndarray of bool, shape (n,)
    depth : int
        List length L (capped at the candidates available).
    observed_lists : ndarray of int, shape (n, depth), optional
        ``observed_knn(features, observed, depth)`` when the caller kept it from the set-up round
        (the codes of the observed rows do not change); computed here otherwise.
    exact_rows : int, optional
        Largest search done exactly: a missing row's search over all ``n`` rows is approximate
        above it (see :func:`~fedmf_app.common.graphs.knn_indices`). Default: exact.

    Returns
    -------
    ndarray of int64, shape (n, depth)
        Nearest first, global indices; ``-1`` pads a shorter list; a row never lists itself.
    """
    if observed_lists is None:
        out = observed_knn(features, observed, depth, exact_rows)
    else:
        out = np.array(observed_lists, dtype=np.int64)
    missing = np.flatnonzero(~observed)
    if missing.size:
        found = knn_indices(features, depth, exact_rows, rows=missing)
        out[missing, : found.shape[1]] = found
    return out


def start_graph(client_graphs: list[np.ndarray], k: int, rule: str = "support") -> np.ndarray:
    """First global graph A_g⁰ from the clients' kNN graphs.

    Parameters
    ----------
    client_graphs : list of ndarray of int, each (n, k_m)
        Each client's neighbour indices, nearest first (``-1`` for samples it does not observe).
    k : int
        Neighbours kept per sample with ``rule="rank"`` or ``"support"``.
    rule : {"rank", "support", "union"}
        ``rank`` [A]: per sample, the ``k`` best candidates of the Borda count over the views'
        lists (:func:`~fedmf_app.methods.iai.rank_fusion.rank_fusion`; the lists may be longer
        than ``k``). ``support`` [A]: the ``k`` neighbours listed by the most views (ties: the
        smaller sum of ranks, then the smaller index). ``union``: the paper's literal
        ``1[Σ_m A^(m) > 0]``, every neighbour any view lists.

    Returns
    -------
    ndarray of int64, shape (n, k')
        Neighbour indices, ``-1`` padded (``k' = k`` for ``rank`` and ``support``).

    Raises
    ------
    ValueError
        On an unknown rule.
    """
    if rule not in START_GRAPHS:
        raise ValueError(f"unknown start-graph rule {rule!r}; use one of {START_GRAPHS}")
    if rule == "rank":
        return rank_fusion(client_graphs, k)
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


def anchor_knn(graph: sp.spmatrix, k: int, probes: int) -> np.ndarray:
    """kNN graph of the rows of an anchor graph, searched within anchor lists (inverted file).

    Every sample ``j`` is filed under its ``probes`` heaviest anchors (the largest entries of its
    row ``g_j``, ties by anchor index); sample ``i`` keeps the ``k`` nearest (Euclidean) of the
    samples that share at least one list with it. The anchors play the role of the coarse
    quantiser of an IVF index, with no training: rows that are close put their weight on the same
    anchors. With balanced lists (``probes · n / r`` samples each) the cost is
    ``O(probes² n² / r · r)`` products instead of ``O(n² r)``, and memory is one block of at most
    :data:`_BLOCK` distances. With ``probes = r`` every list holds every sample and the search is
    exact. A sample that shares lists with ``k`` or fewer other samples is compared with all.

    Parameters
    ----------
    graph : sparse matrix, shape (n, r)
        Rows of nonnegative anchor weights (e.g. the fused ``G``).
    k : int
        Capped at ``n - 1``.
    probes : int
        Lists per sample (``>= 1``; capped at ``r``).

    Returns
    -------
    ndarray of int64, shape (n, min(k, n - 1))
        Nearest first (ties: the smaller index); a row never lists itself.
    """
    import scipy.sparse as sp

    n, r = graph.shape
    k, probes = min(k, n - 1), min(max(probes, 1), r)
    if k < 1:
        return np.empty((n, 0), dtype=np.int64)
    rows = np.asarray(sp.csr_matrix(graph).toarray(), dtype=np.float64)
    sq = (rows**2).sum(axis=1)
    if probes < r:
        filed = np.argsort(-rows, axis=1, kind="stable")[:, :probes]
        members = sp.csc_matrix(
            (np.ones(n * probes), (np.repeat(np.arange(n), probes), filed.ravel())), shape=(n, r)
        )
        lists = [np.sort(members.indices[members.indptr[a] : members.indptr[a + 1]]) for a in range(r)]
    else:
        lists = [np.arange(n)]
    best_d = np.full((n, k), np.inf)
    best_i = np.full((n, k), -1, dtype=np.int64)

    def merge(q: np.ndarray, candidates: np.ndarray) -> None:
        """Fold the distances of rows ``q`` to ``candidates`` into their best ``k``."""
        d = sq[q, None] + sq[None, candidates] - 2.0 * rows[q] @ rows[candidates].T
        d[candidates[None, :] == q[:, None]] = np.inf
        take = min(k, candidates.size)
        near = np.argpartition(d, take - 1, axis=1)[:, :take]
        dist = np.concatenate([best_d[q], np.take_along_axis(d, near, axis=1)], axis=1)
        idx = np.concatenate([best_i[q], candidates[near]], axis=1)
        by_index = np.argsort(idx, axis=1, kind="stable")
        idx, dist = np.take_along_axis(idx, by_index, axis=1), np.take_along_axis(dist, by_index, axis=1)
        repeated = np.zeros_like(idx, dtype=bool)
        repeated[:, 1:] = idx[:, 1:] == idx[:, :-1]
        dist[repeated | (idx < 0)] = np.inf
        keep = np.lexsort((idx, dist), axis=1)[:, :k]
        best_d[q], best_i[q] = np.take_along_axis(dist, keep, axis=1), np.take_along_axis(idx, keep, axis=1)

    for members_a in lists:
        if members_a.size < 2:
            continue
        step = max(1, _BLOCK // members_a.size)
        for start in range(0, members_a.size, step):
            merge(members_a[start : start + step], members_a)
    short = np.flatnonzero(~np.isfinite(best_d[:, -1]))
    everyone = np.arange(n)
    step = max(1, _BLOCK // n)
    for start in range(0, short.size, step):
        merge(short[start : start + step], everyone)
    return best_i
