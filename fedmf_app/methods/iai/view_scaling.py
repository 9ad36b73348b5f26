"""A client's feature scaling before the autoencoder, for dense and sparse (CSR) views.

A dense view is scaled as a whole. A ``scipy.sparse`` view is never densified as a whole: its
column statistics are taken a block of columns at a time, and :class:`ScaledRows` hands out dense
blocks of scaled rows on demand (a mini-batch of the autoencoder, a block to encode), computed
with the same element-wise and row-wise operations as the dense path, so every row equals the
dense result exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fedmf_app.data.preprocess import SPARSE_ZERO_FRACTION, is_sparse_nonnegative, normalise_rows

__all__ = ["ScaledRows", "scale_features"]

#: Entries of the dense blocks a sparse view is read in.
_BLOCK_ENTRIES = 1 << 23


@dataclass(frozen=True)
class ScaledRows:
    """A scaled sparse view, densified a block of rows at a time.

    Row ``i`` is ``x_i`` zeroed when unobserved, divided by its l2 norm (``row_l2``), then
    ``(x_i - shift) / scale`` (when ``shift`` is given) and zeroed again when unobserved.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix, shape (n, d)
    observed : ndarray of bool, shape (n,)
    row_l2 : bool
    shift, scale : ndarray, shape (d,), or None
    """

    matrix: sp.csr_matrix
    observed: np.ndarray
    row_l2: bool
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, d)``."""
        return self.matrix.shape

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        """Dense scaled rows, shape (len(rows), d), float64."""
        rows = np.asarray(rows)
        keep = self.observed[rows]
        x = np.where(keep[:, None], self.matrix[rows].toarray(order="C").astype(np.float64), 0.0)
        if self.row_l2:
            x = normalise_rows(x)
        if self.shift is not None:
            x = (x - self.shift) / self.scale
            x[~keep] = 0.0
        return x

    def take(self, rows: np.ndarray) -> ScaledRows:
        """The same scaling restricted to ``rows`` (in that order)."""
        return ScaledRows(self.matrix[rows], self.observed[rows], self.row_l2, self.shift, self.scale)

    def blocks(self) -> list[np.ndarray]:
        """Row indices in blocks of at most ``_BLOCK_ENTRIES`` dense entries."""
        n, d = self.shape
        step = max(1, _BLOCK_ENTRIES // max(d, 1))
        return [np.arange(start, min(start + step, n)) for start in range(0, n, step)]


def _column_stats(rows: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of every column, computed by numpy on C-ordered blocks of
    columns (so each column's sums run in the order of the dense path's)."""
    n, d = rows.shape
    csc = sp.csc_matrix(rows)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    mean, std = np.empty(d), np.empty(d)
    for start in range(0, d, step):
        block = csc[:, start : start + step].toarray(order="C").astype(np.float64)
        mean[start : start + step], std[start : start + step] = block.mean(axis=0), block.std(axis=0)
    return mean, std


def _sparse_nonnegative(rows: sp.csr_matrix) -> bool:
    """:func:`~fedmf_app.data.preprocess.is_sparse_nonnegative` of a sparse matrix."""
    size = rows.shape[0] * rows.shape[1]
    nonzero = int(np.count_nonzero(rows.data))
    return (
        size > 0
        and bool(rows.data.size == 0 or rows.data.min() >= 0)
        and (size - nonzero) / size >= SPARSE_ZERO_FRACTION
    )


def scale_features(x: np.ndarray | sp.spmatrix, observed: np.ndarray, rule: str) -> np.ndarray | ScaledRows:
    """Scale a view with statistics of its observed rows only.

    Parameters
    ----------
    x : ndarray or scipy.sparse matrix, shape (n, d)
    observed : ndarray of bool, shape (n,)
    rule : {"auto", "standard", "row-l2", "none"}
        ``standard``: subtract the observed mean, divide by the observed standard deviation
        (constant features are only centred); ``row-l2``: every row to unit l2 norm; ``auto``:
        ``row-l2`` when the observed rows are sparse and nonnegative
        (:func:`~fedmf_app.data.preprocess.is_sparse_nonnegative`), else ``standard``.

    Returns
    -------
    ndarray, shape (n, d), or ScaledRows
        Unobserved rows are zero. A sparse ``x`` gives a :class:`ScaledRows` whose rows equal
        those of the dense result.
    """
    if sp.issparse(x):
        matrix = sp.csr_matrix(x)
        rows = matrix[np.flatnonzero(observed)]
        if rule == "auto":
            rule = "row-l2" if _sparse_nonnegative(rows) else "standard"
        if rule != "standard":
            return ScaledRows(matrix, observed, rule == "row-l2")
        mean, std = _column_stats(rows)
        return ScaledRows(matrix, observed, False, mean, np.where(std > 0, std, 1.0))
    x = np.where(observed[:, None], np.asarray(x, dtype=np.float64), 0.0)
    if rule == "auto":
        rule = "row-l2" if is_sparse_nonnegative(x[observed]) else "standard"
    if rule == "row-l2":
        x = normalise_rows(x)
    if rule == "standard":
        rows = x[observed]
        std = rows.std(axis=0)
        x = (x - rows.mean(axis=0)) / np.where(std > 0, std, 1.0)
        x[~observed] = 0.0
    return x
