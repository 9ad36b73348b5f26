"""Products with the residual ``UV - X`` of one client's factorisation, for a dense or sparse ``X``.

The products with the thin factors never form the residual: the expansions below need ``X`` only
in products with ``U`` or ``V``, so memory stays in proportion to ``X`` (its nonzeros when sparse)
plus ``(d + n) r``, and a dense ``X`` is read once per product. The squared residual of a dense
``X`` is the norm of the residual itself (exact where the expansion would cancel), formed a block
of samples at a time so that it stays in cache. A caller that already holds ``X V^T`` or
``||X||_F^2`` (they are the same for every product of a round at one ``V``) passes them in.

.. math::
    \\|X - UV\\|_F^2 = \\|X\\|_F^2 - 2\\langle XV^\\top, U\\rangle + \\langle U^\\top U, VV^\\top\\rangle,
    \\quad (UV - X)V^\\top = U(VV^\\top) - XV^\\top,
    \\quad U^\\top(UV - X) = (U^\\top U)V - (X^\\top U)^\\top .
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.sparse import issparse

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["squared_norm", "squared_residual", "residual_times_vt", "ut_times_residual"]

#: Words of one block of the dense residual (2 MiB of float64: it stays in cache).
_BLOCK_WORDS = 2**18


def _block_width(d: int) -> int:
    """Samples per block of a ``d x n`` dense residual."""
    return max(1, _BLOCK_WORDS // max(d, 1))


def squared_norm(x: np.ndarray | sp.spmatrix) -> float:
    """:math:`\\|X\\|_F^2`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)

    Returns
    -------
    float
    """
    data = x.data if issparse(x) else x.ravel(order="K")  # a view in either memory order
    return float(np.vdot(data, data))


def squared_residual(x: np.ndarray | sp.spmatrix, u: np.ndarray, v: np.ndarray) -> float:
    """:math:`\\|X - UV\\|_F^2`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
    v : ndarray, shape (r, n)

    Returns
    -------
    float
        Nonnegative (the sparse expansion is clipped at 0 against rounding).
    """
    if not issparse(x):
        total = 0.0
        width = _block_width(x.shape[0])
        for start in range(0, x.shape[1], width):
            block = u @ v[:, start : start + width]
            block -= x[:, start : start + width]
            total += float(np.vdot(block, block))
        return total
    x_sq = squared_norm(x)
    cross = float(np.vdot(x @ v.T, u))
    return max(x_sq - 2.0 * cross + float(np.vdot(u.T @ u, v @ v.T)), 0.0)


def residual_times_vt(
    x: np.ndarray | sp.spmatrix, u: np.ndarray, v: np.ndarray, xvt: np.ndarray | None = None
) -> np.ndarray:
    """:math:`(UV - X)V^\\top`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
    v : ndarray, shape (r, n)
    xvt : ndarray, shape (d, r), optional
        :math:`XV^\\top` when the caller has it (then ``x`` is not read).

    Returns
    -------
    ndarray, shape (d, r)
    """
    return u @ (v @ v.T) - (np.asarray(x @ v.T) if xvt is None else xvt)


def ut_times_residual(x: np.ndarray | sp.spmatrix, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:math:`U^\\top(UV - X)`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
    v : ndarray, shape (r, n)

    Returns
    -------
    ndarray, shape (r, n)
    """
    out = (u.T @ u) @ v
    if issparse(x):
        out -= np.asarray(x.T @ u).T
    else:
        out -= u.T @ x  # (r, n) in the layout of ``out``: no strided pass over a transposed product
    return out
