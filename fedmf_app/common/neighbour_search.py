"""Approximate nearest-neighbour search for large searches: an inverted-file index (faiss).

An exact search of every row's nearest rows compares all pairs, :math:`O(n^2 d)`: about a minute
for 100,000 rows of 64 features on one core, and a hundred times that for ten times the rows. The
inverted-file index (IVF, faiss's ``IndexIVFFlat``) first clusters the rows into ``c`` lists by
k-means, then compares a query only with the rows of the ``p`` lists whose centres are nearest to
it, :math:`O(n \\cdot n p / c \\cdot d)`. With ``c = 4 \\sqrt{n}`` lists and ``p`` =
:data:`PROBES` the cost grows as :math:`n^{1.5}`, and a true neighbour is missed only where it lies
in a list none of the query's ``p`` nearest centres owns (a neighbour near a list boundary).

Distances are single precision (faiss's own type). The k-means is seeded and runs on one thread, so
the same rows give the same lists on every machine; the search runs on the threads faiss's OpenMP
pool allows (one in a client, which runs single-threaded; every core on the server) and gives the
same lists on any number of them, each query being searched on its own.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["EXACT_SEARCH_ROWS", "PROBES", "ivf_neighbours", "without_queries"]

#: Default of the largest search that stays exact ([A]): the searches of the development sets and
#: NoisyMNIST (at most 10,000 rows) are exact, those of 100,000 rows approximate.
EXACT_SEARCH_ROWS = 20_000
#: Lists of the index a query visits.
PROBES = 64
#: Lists of the index per square root of the number of rows.
LISTS_PER_ROOT = 4


def ivf_neighbours(x: np.ndarray, k: int, rows: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """Approximately the ``k`` nearest other rows of ``x`` for each of ``rows`` (Euclidean).

    Parameters
    ----------
    x : ndarray, shape (n, d)
        The rows searched (dense; cast to float32).
    k : int
        Neighbours per query, ``1 <= k <= n - 1``.
    rows : ndarray of int, shape (q,), optional
        The queries, as row indices of ``x`` (default: every row).
    seed : int
        Seed of the index's k-means.

    Returns
    -------
    ndarray of int64, shape (q, k)
        Nearest first; a query never lists itself; ``-1`` pads the end of a list where the visited
        lists held fewer than ``k`` other rows.
    """
    import faiss  # imported here: keeps config and ClientApp imports light

    data = np.ascontiguousarray(x, dtype=np.float32)
    n, d = data.shape
    rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    # about 40 rows per list or more where n allows (faiss asks for 39 training rows per centre)
    lists = max(1, min(n // 40, round(LISTS_PER_ROOT * math.sqrt(n))))
    index = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, lists)
    index.cp.seed = int(seed)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # the k-means on one thread: the same lists on every machine
    try:
        index.train(data)
    finally:
        faiss.omp_set_num_threads(threads)
    index.add(data)
    index.nprobe = min(PROBES, lists)
    # queries are independent: the caller's threads change the speed, not the lists
    _, found = index.search(data[rows], k + 1)
    return without_queries(found.astype(np.int64), rows, k)


def without_queries(found: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Each query's ``k`` results other than itself.

    Parameters
    ----------
    found : ndarray of int, shape (q, k + 1)
        The results of searching the rows that include the queries, nearest first.
    rows : ndarray of int, shape (q,)
        The queries' own indices.
    k : int

    Returns
    -------
    ndarray of int64, shape (q, k)
        ``found`` without the query (wherever it stands among ties), or without the last result
        where the query is absent.
    """
    own = found == rows[:, None]
    drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
    keep = np.ones_like(found, dtype=bool)
    keep[np.arange(rows.size), drop] = False
    return found[keep].reshape(rows.size, k)
