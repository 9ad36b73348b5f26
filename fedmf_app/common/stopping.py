"""Stop rules that read a run's history of one quantity.

A run may stop once a quantity it minimises has stopped moving: the relative change between
consecutive rounds,

    c_t = |F_t - F_{t-1}| / max(|F_{t-1}|, eps),

has stayed at or below a tolerance for ``patience`` consecutive rounds (:func:`plateau`). Or once
a change the run measures itself, such as the fraction of samples whose label moved, has stayed at
or below a tolerance for ``patience`` consecutive rounds (:func:`settled`). The patience guards
against one flat round between two that still move.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["plateau", "relative_changes", "settled"]

_EPS = np.finfo(np.float64).tiny


def relative_changes(values: Sequence[float]) -> np.ndarray:
    """:math:`c_t = |F_t - F_{t-1}| / \\max(|F_{t-1}|, \\varepsilon)` for every value after the first.

    Parameters
    ----------
    values : sequence of float, shape (t,)
        The quantity after each round, oldest first.

    Returns
    -------
    ndarray, shape (t - 1,)
    """
    f = np.asarray(values, dtype=np.float64)
    return np.abs(np.diff(f)) / np.maximum(np.abs(f[:-1]), _EPS)


def plateau(values: Sequence[float], tol: float, patience: int) -> bool:
    """Whether the last ``patience`` relative changes of ``values`` are all at most ``tol``.

    Parameters
    ----------
    values : sequence of float, shape (t,)
        The quantity after each round, oldest first.
    tol : float
        Largest relative change that counts as flat (``<= 0``: never flat).
    patience : int
        Consecutive flat changes needed (>= 1); ``values`` needs ``patience + 1`` entries.

    Returns
    -------
    bool
        ``False`` while fewer than ``patience + 1`` values are known, or when any of them is not
        finite.
    """
    if patience < 1 or len(values) < patience + 1:
        return False
    # a non-finite value makes a non-finite change, which settled() never counts
    with np.errstate(invalid="ignore", over="ignore"):
        changes = relative_changes(values[-(patience + 1) :])
    return settled(list(changes), tol, patience)


def settled(changes: Sequence[float | None], tol: float, patience: int) -> bool:
    """Whether the last ``patience`` changes are all known and at most ``tol``.

    Parameters
    ----------
    changes : sequence of float or None, shape (t,)
        A change measured in each round, oldest first (``None``: a round that measured none).
    tol : float
        Largest change that counts as settled (``<= 0``: never settled).
    patience : int
        Consecutive settled rounds needed (>= 1).

    Returns
    -------
    bool
        ``False`` while fewer than ``patience`` changes are known, or when any of the last
        ``patience`` is ``None`` or not finite.
    """
    if tol <= 0 or patience < 1 or len(changes) < patience:
        return False
    last = changes[-patience:]
    if any(c is None for c in last):
        return False
    values = np.asarray(last, dtype=np.float64)
    return bool(np.all(np.isfinite(values)) and np.all(values <= tol))
