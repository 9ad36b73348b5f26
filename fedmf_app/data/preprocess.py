"""Paper A's real-data preparation of one view, done by each client on its own view.

1. Views with negative entries (the NMF-type methods need ``X >= 0``) are handled by the named
   choice ``negative-values`` ([A]; the paper's data sets are nonnegative, so it does not say):

   * ``"min-max"`` (default): each feature of that view scaled to ``[0, 1]``,
     ``(x - min_j) / (max_j - min_j)`` (a constant feature becomes 0); the choice measured on HW's
     ``kar`` view;
   * ``"shift"``: the view's most negative value subtracted from every entry (keeps the view's
     geometry, distances and relative feature scales);
   * ``"error"``: refuse the view, naming it.

   Nonnegative views are never changed by this step.
2. ``sample-normalisation``: each sample's row of the view scaled to unit l2 norm (``"l2"``), kept
   (``"none"``), or ``"auto"`` ([A], the default): ``"l2"`` on sparse nonnegative views
   (:func:`is_sparse_nonnegative`: at least :data:`SPARSE_ZERO_FRACTION` of the entries are zero,
   as in word counts and other bag-of-features views, where a document's length says nothing of
   its topic), ``"none"`` on the others. All-zero rows stay zero.
3. ``view-normalisation``: ``"frobenius"`` (paper A: ``X_p / ||X_p||_F``, so every view weighs the
   same in the sum of the clients' losses) or ``"none"``.

A view stored sparse (``scipy.sparse``) stays sparse through steps 2 and 3 (memory proportional to
its nonzeros); only step 1, which shifts every entry, makes a sparse view with negative entries
dense.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.scaling import normalise_rows
from fedmf_app.common.sparse import issparse
from fedmf_app.common.threads import one_blas_thread
from fedmf_app.data.errors import DataError

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "NEGATIVE_VALUES",
    "SAMPLE_NORMALISATIONS",
    "SPARSE_ZERO_FRACTION",
    "VIEW_NORMALISATIONS",
    "is_sparse_nonnegative",
    "normalise_rows",
    "prepare_view",
]

#: Allowed values of run-config ``negative-values``.
NEGATIVE_VALUES: tuple[str, ...] = ("min-max", "shift", "error")
#: Allowed values of run-config ``view-normalisation``.
VIEW_NORMALISATIONS: tuple[str, ...] = ("frobenius", "none")
#: Allowed values of run-config ``sample-normalisation``.
SAMPLE_NORMALISATIONS: tuple[str, ...] = ("auto", "l2", "none")
#: [A] A nonnegative view with at least this fraction of zero entries is treated as sparse
#: (counts, bag of words): word-count views have 95-98 %, dense image or signal features < 40 %.
SPARSE_ZERO_FRACTION = 0.9


def is_sparse_nonnegative(x: np.ndarray | sp.spmatrix) -> bool:
    """Whether a view looks like counts or bag-of-features data.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (n, d)

    Returns
    -------
    bool
        ``True`` when ``x >= 0`` everywhere and at least :data:`SPARSE_ZERO_FRACTION` of its
        entries are zero.
    """
    if issparse(x):
        size = x.shape[0] * x.shape[1]
        data = x.tocsr().data
        nonneg = data.size == 0 or bool(data.min() >= 0)
        return size > 0 and nonneg and 1.0 - np.count_nonzero(data) / size >= SPARSE_ZERO_FRACTION
    x = np.asarray(x)
    return x.size > 0 and bool(x.min() >= 0) and float(np.mean(x == 0)) >= SPARSE_ZERO_FRACTION


def prepare_view(
    x: np.ndarray | sp.spmatrix,
    negative_values: str,
    normalisation: str,
    where: str,
    sample_normalisation: str = "none",
) -> np.ndarray | sp.csr_matrix:
    """Make one view nonnegative (if needed), then normalise its rows and the whole view.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (n, d)
        Samples x features, finite.
    negative_values : str
        One of :data:`NEGATIVE_VALUES`.
    normalisation : str
        One of :data:`VIEW_NORMALISATIONS`.
    where : str
        The view's source, for messages.
    sample_normalisation : str
        One of :data:`SAMPLE_NORMALISATIONS` (``"auto"`` decides on the view as given).

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix, shape (n, d)
        A new float64 matrix, ``>= 0``; sparse when ``x`` is, unless step 1 had to shift it.

    Raises
    ------
    DataError
        When the view has negative entries and ``negative_values = "error"``, or is all zeros
        under Frobenius normalisation.
    """
    if issparse(x):
        import scipy.sparse as sp

        out = sp.csr_matrix(x, dtype=np.float64, copy=True)
    else:
        out = np.array(x, dtype=np.float64)
    rows_l2 = sample_normalisation == "l2" or (sample_normalisation == "auto" and is_sparse_nonnegative(out))
    low = _minimum(out)
    if low < 0.0:
        if negative_values == "error":
            raise DataError(
                f"{where} has negative values (minimum {low:.4g}) but the method needs nonnegative "
                'input; set run config \'negative-values\' to "min-max" or "shift"'
            )
        if issparse(out):
            out = out.toarray()
        if negative_values == "min-max":
            col_min = out.min(axis=0)
            span = out.max(axis=0) - col_min
            out = (out - col_min) / np.where(span > 0, span, 1.0)
        else:
            out -= low
    if rows_l2:
        out = normalise_rows(out)
    if normalisation == "frobenius":
        values = out.data if issparse(out) else out
        # one BLAS thread: a threaded dot sums in another order, and the view's scale (hence
        # every number of the run) would follow the machine's cores
        with one_blas_thread():
            norm = float(np.linalg.norm(values))
        if norm == 0.0:
            raise DataError(f"{where} is all zeros: it cannot be normalised by its Frobenius norm")
        values /= norm
    return out


def _minimum(x: np.ndarray | sp.csr_matrix) -> float:
    """Smallest entry, implicit zeros of a sparse matrix included."""
    if not issparse(x):
        return float(x.min())
    low = float(x.data.min()) if x.data.size else 0.0
    return min(low, 0.0) if x.nnz < x.shape[0] * x.shape[1] else low
