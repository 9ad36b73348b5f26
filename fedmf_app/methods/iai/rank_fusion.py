"""Rank fusion of the views' neighbour lists: the global graph of ``iai.start-graph = "rank"`` and
``iai.graph-update = "rank"`` ([A]), numpy / scipy only.

Each view (each client, and optionally the server's own list from the concatenated embedding)
ranks, for every sample ``i``, its ``L`` nearest samples. A weighted Borda count merges the lists:
candidate ``j`` at rank ``t`` (0-based) in voter ``m``'s list of ``i`` scores
``w_m (1 - t / L_m)``, a candidate absent from a list scores 0 there, and row ``i`` of the fused
graph keeps the ``k`` candidates of highest total score (ties: the smaller index). A candidate
near ``i`` in most views outranks one that a single view puts first, so the fused lists behave
like an intersection of the views' neighbourhoods, but one that ranks rather than counts: with
lists longer than the graph's degree (:func:`adaptive_rank_depth`), a neighbour that one view
misses but the others rank highly still enters. Distances never leave a view: only the ranks do,
so views with different scales and distance distributions vote on equal terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["RANK_DEPTH_FACTOR", "adaptive_rank_depth", "borda_scores", "rank_fusion"]

#: Rows of the fused graph scored and ranked at a time (a block of rows x candidates, float64 and int64).
_FUSION_BLOCK_ROWS = 4096
#: List depth of the adaptive ``iai.rank-depth = 0`` in units of the graph's degree k.
RANK_DEPTH_FACTOR = 5


def adaptive_rank_depth(knn: int, num_samples: int) -> int:
    """Depth ``L`` of the views' neighbour lists for ``iai.rank-depth = 0`` ([A]).

    ``L = 5 k`` (HW and NoisyMNIST: 100 with k = 20; ORL: 25), at most ``n - 1``.

    Parameters
    ----------
    knn : int
        The graphs' degree k.
    num_samples : int
        n.

    Returns
    -------
    int
    """
    return max(1, min(RANK_DEPTH_FACTOR * knn, num_samples - 1))


def borda_scores(
    lists: list[np.ndarray], weights: np.ndarray | None = None, rows: slice = slice(None)
) -> sp.csr_matrix:
    """Summed Borda scores of the candidates of every sample (or of a block of samples).

    Parameters
    ----------
    lists : list of ndarray of int, each (n, L_m)
        Voter ``m``'s neighbours of every sample, nearest first; ``-1`` pads a shorter list (or
        marks a sample the voter does not observe: it casts no vote there).
    weights : ndarray, shape (len(lists),), optional
        Nonnegative voter weights ``w_m`` (default: all 1).
    rows : slice, optional
        The samples whose candidates are scored, a contiguous block (default: all). Each row holds
        the same numbers as in the scores of all samples.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (len(rows), n)
        Entry ``(i, j)``: ``sum_m w_m (1 - t_m(i, j) / L_m)`` over the voters that list ``j`` for
        ``i`` at rank ``t_m(i, j)``; no other entry is stored (a self vote is dropped).
    """
    import scipy.sparse as sp

    n = lists[0].shape[0]
    first, stop, _ = rows.indices(n)
    weights = np.ones(len(lists)) if weights is None else np.asarray(weights, dtype=np.float64)
    voters = []
    for voter, w in zip(lists, weights, strict=True):
        depth = voter.shape[1]
        if depth == 0 or w <= 0:
            continue
        part = voter[first:stop]
        keep = (part >= 0) & (part != np.arange(first, stop)[:, None])
        voters.append((part, keep, int(keep.sum()), w * (1.0 - np.arange(depth) / depth)))
    # every vote written once into arrays of their final size (32-bit indices where n allows):
    # at N = 100,000 and five lists of depth 100, 0.8 GB instead of 2.4 GB of copies for all rows
    total = sum(size for _, _, size, _ in voters)
    index = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    owners, cols, vals = np.empty(total, dtype=index), np.empty(total, dtype=index), np.empty(total)
    at = 0
    for part, keep, size, score in voters:
        owners[at : at + size] = np.nonzero(keep)[0]
        cols[at : at + size] = part[keep]
        vals[at : at + size] = np.broadcast_to(score, part.shape)[keep]
        at += size
    # a row's votes enter in the same order (voter by voter, nearest first) whichever block holds
    # it, so its duplicates are summed in the same order
    scores = sp.csr_matrix((vals, (owners, cols)), shape=(stop - first, n))
    scores.sum_duplicates()
    return scores


def rank_fusion(lists: list[np.ndarray], k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """The ``k`` best-scored candidates of every sample under the weighted Borda count.

    Parameters
    ----------
    lists : list of ndarray of int, each (n, L_m)
        See :func:`borda_scores`.
    k : int
        Neighbours kept per sample.
    weights : ndarray, optional
        See :func:`borda_scores`.

    Returns
    -------
    ndarray of int64, shape (n, k)
        Highest score first (ties: the smaller index); ``-1`` pads a sample with fewer than ``k``
        candidates (one that no voter lists anything for has a row of ``-1``).
    """
    n = lists[0].shape[0]
    out = np.full((n, k), -1, dtype=np.int64)
    for start in range(0, n, _FUSION_BLOCK_ROWS):
        # scored a block at a time: at N = 100,000 and five lists of depth 100 the votes of all
        # rows take 0.8 GB and their CSR matrix as much again; canonical CSR: a row's candidates
        # by ascending index
        block = borda_scores(lists, weights, slice(start, start + _FUSION_BLOCK_ROWS))
        counts = np.diff(block.indptr)
        width = max(int(counts.max(initial=0)), k)
        owner = np.repeat(np.arange(block.shape[0]), counts)
        slot = np.arange(block.nnz) - block.indptr[owner]
        # a row's candidates side by side, padding last; a stable sort by falling score keeps
        # equal scores in ascending index order
        negated = np.full((block.shape[0], width), np.inf)
        negated[owner, slot] = -block.data
        candidates = np.full((block.shape[0], width), -1, dtype=np.int64)
        candidates[owner, slot] = block.indices
        best = np.argsort(negated, axis=1, kind="stable")[:, :k]
        out[start : start + block.shape[0]] = np.take_along_axis(candidates, best, axis=1)
    return out
