"""Row scaling shared by the data layer and the methods (numpy/scipy only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.sparse import issparse

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["normalise_rows"]


def normalise_rows(x: np.ndarray | sp.spmatrix) -> np.ndarray | sp.csr_matrix:
    """Each row divided by its l2 norm (all-zero rows kept).

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (n, d)

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix, shape (n, d), float64
        Sparse when ``x`` is.
    """
    if issparse(x):
        import scipy.sparse as sp

        out = sp.csr_matrix(x, dtype=np.float64, copy=True)
        norms = np.sqrt(np.asarray(out.multiply(out).sum(axis=1)).ravel())
        out.data /= np.repeat(np.where(norms > 0, norms, 1.0), np.diff(out.indptr))
        return out
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)
