"""Proximal map of the joint-sparsity regulariser h(V) = mu * ||V||_{2,1} + indicator(V >= 0).

Paper A, Section 2.2 and ``docs/sonmf.md``
"""

from __future__ import annotations

import numpy as np

__all__ = ["l21_norm", "l21_row_scale", "prox_l21_nonneg"]


def l21_norm(v: np.ndarray) -> float:
    r"""Row-wise l_{2,1} norm :math:`\|V\|_{2,1} = \sum_i \|V_{i\cdot}\|_2`.

    Parameters
    ----------
    v : ndarray, shape (r, n)

    Returns
    -------
    float
    """
    return float(np.linalg.norm(v, axis=1).sum())


def prox_l21_nonneg(z: np.ndarray, t: float) -> np.ndarray:
    r"""Proximal map :math:`P_t(Z) = \arg\min_{V \ge 0} \tfrac12\|V - Z\|_F^2 + t\|V\|_{2,1}`.

    Computed row by row: with :math:`z^+ = \max(Z_{i\cdot}, 0)`,

    .. math::
        V_{i\cdot} = \max\Bigl(0,\; 1 - \frac{t}{\|z^+\|_2}\Bigr)\, z^+ ,

    and :math:`V_{i\cdot} = 0` when :math:`z^+ = 0`. The map is nonexpansive in the Frobenius norm.

    Parameters
    ----------
    z : ndarray, shape (r, n)
        Point to be mapped.
    t : float
        Threshold, ``step * mu``; must be nonnegative.

    Returns
    -------
    ndarray, shape (r, n)
        A new array; ``z`` is not modified.
    """
    if t < 0:
        raise ValueError(f"prox threshold must be nonnegative, got {t}")
    zp = np.maximum(z, 0.0)
    zp *= l21_row_scale(np.linalg.norm(zp, axis=1, keepdims=True), t)
    return zp


def l21_row_scale(norms: np.ndarray, t: float) -> np.ndarray:
    r"""The factor :math:`\max(0, 1 - t/\|z^+\|_2)` that :func:`prox_l21_nonneg` applies to each row.

    Parameters
    ----------
    norms : ndarray
        Row norms :math:`\|z^+\|_2` of :math:`\max(Z, 0)` (any shape; zero norms give 0).
    t : float
        Threshold, nonnegative.

    Returns
    -------
    ndarray, the shape of ``norms``
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > t, 1.0 - t / norms, 0.0)
