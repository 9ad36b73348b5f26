"""Compiled row-assignment ascent of the ``U`` solver (``BasisSolverOptions.method = "assignment"``).

On the feasible set ``{U >= 0, U^T U = I}`` the columns of ``U`` have disjoint supports ``S_j``, and
for fixed supports the best unit columns are ``u_j = A^+_{S_j, j} / ||A^+_{S_j, j}||``. The
subproblem is therefore the choice of one owner column per feature (row),

.. math::
    \\max_{S_1, \\dots, S_r \\text{ disjoint}} \\;
    \\sum_j \\sqrt{\\textstyle\\sum_{i \\in S_j} (A^+_{ij})^2} ,

and :func:`assignment_ascent` moves one row at a time to the column that raises this value most,
until no single move raises it. Each pass costs ``O(d r)``.

A view with fewer features than columns (``d < r``) has the feasible set
:math:`\\{U \\ge 0,\\ U^\\top U = \\operatorname{diag}(\\delta),\\ \\delta_j \\in
\\{0, 1\\}\\}`: a column is either a unit vector or zero. There an active column ``j`` also costs
:math:`c_j = \\|V_{j\\cdot}\\|^2 + \\rho_1/2` (the terms of :math:`\\|UV\\|_F^2 + \\frac{\\rho_1}2
\\|U\\|_F^2` that are constant when every column is a unit vector), a column is active exactly when
it gains, and the value is :math:`\\sum_j \\max(\\sqrt{s_j} - c_j, 0)`, columns may lose their last
row. With ``cost = 0`` and ``keep_one`` the two values agree and so do the moves.

:func:`assignment_ascent` is the ascent as a loop; :func:`compiled_assignment_ascent` compiles it
with numba (``sonmf.basis-kernel = "compiled"``). :func:`vectorised_assignment_ascent`
(``"numpy"``: no numba import, no compilation) makes the same moves with numpy: it scores a block
of rows against every column at once, moves the first row of the block that gains, and goes on
from the row after it, so every row still sees the sums its predecessors left; the values are the
loop's, bit for bit.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = ["assignment_ascent", "compiled_assignment_ascent", "vectorised_assignment_ascent"]

#: Rows :func:`vectorised_assignment_ascent` scores at once after a move; the block grows
#: :data:`_BLOCK_GROWTH`-fold while no row of it moves.
_FIRST_BLOCK = 8
_BLOCK_GROWTH = 4


def assignment_ascent(sq, owner, max_passes, cost, keep_one):
    """Move rows between columns while a single move raises :math:`\\sum_j h_j(s_j)`,
    :math:`h_j(s) = \\max(\\sqrt{s} - c_j, 0)`.

    Parameters
    ----------
    sq : ndarray, shape (d, r)
        Squared positive part of the linear term, :math:`(A^+_{ij})^2`.
    owner : ndarray of int64, shape (d,)
        Owner column of every row (``-1``: none); updated in place.
    max_passes : int
        Maximum number of passes over the rows.
    cost : ndarray, shape (r,)
        :math:`c_j \\ge 0`: zero when every column is a unit vector (``U^T U = I``), else the cost
        of an active column (module docstring).
    keep_one : bool
        A column's last row never leaves it (``U^T U = I``: every column must own a row at the
        start and keeps one); false where columns may be empty.

    Returns
    -------
    value : float
        :math:`\\sum_j h_j(s_j)` at the returned owners, :math:`s_j = \\sum_{i \\in S_j} sq_{ij}`.
    passes : int
        Passes done (the last one moved no row unless ``max_passes`` was reached).
    """
    d, r = sq.shape
    s = np.zeros(r)
    count = np.zeros(r, np.int64)
    for i in range(d):
        j = owner[i]
        if j >= 0:
            s[j] += sq[i, j]
            count[j] += 1
    passes = 0
    for passes in range(1, max_passes + 1):  # noqa: B007 (the count is returned)
        moved = 0
        for i in range(d):
            j = owner[i]
            loss = 0.0
            if j >= 0:
                if keep_one and count[j] <= 1:
                    continue
                remaining = math.sqrt(max(s[j] - sq[i, j], 0.0))
                loss = max(math.sqrt(s[j]) - cost[j], 0.0) - max(remaining - cost[j], 0.0)
            best = j
            best_gain = 1e-14 * (1.0 + loss)
            for col in range(r):
                if col != j:
                    gain = (
                        max(math.sqrt(s[col] + sq[i, col]) - cost[col], 0.0)
                        - max(math.sqrt(s[col]) - cost[col], 0.0)
                        - loss
                    )
                    if gain > best_gain:
                        best_gain = gain
                        best = col
            if best != j:
                if j >= 0:
                    s[j] = max(s[j] - sq[i, j], 0.0)
                    count[j] -= 1
                s[best] += sq[i, best]
                count[best] += 1
                owner[i] = best
                moved += 1
        if moved == 0:
            break
    value = 0.0
    for j in range(r):
        value += max(math.sqrt(s[j]) - cost[j], 0.0)
    return value, passes


@cache
def compiled_assignment_ascent():
    """:func:`assignment_ascent` compiled by numba (cached on disk, compiled once per machine).

    Returns
    -------
    callable
        Same signature and results as :func:`assignment_ascent`.
    """
    import numba  # only where U is solved with the compiled kernel

    return numba.njit(cache=True)(assignment_ascent)


def vectorised_assignment_ascent(sq, owner, max_passes, cost, keep_one):
    """:func:`assignment_ascent` with numpy: the same moves, value and passes, bit for bit.

    Within a pass the rows are scored a block at a time against the current column sums; rows
    before the first one that gains make no move in the loop either, so that row moves and the
    next block starts after it (the block is :data:`_FIRST_BLOCK` rows after a move and grows
    :data:`_BLOCK_GROWTH`-fold while none moves). Every gain is the loop's expression in the
    loop's order, so ties and the threshold fall the same way.

    Parameters
    ----------
    sq : ndarray, shape (d, r)
    owner : ndarray of int64, shape (d,)
        Updated in place.
    max_passes : int
    cost : ndarray, shape (r,)
    keep_one : bool
        As :func:`assignment_ascent`.

    Returns
    -------
    value : float
    passes : int
        As :func:`assignment_ascent`.
    """
    d, r = sq.shape
    owned = np.flatnonzero(owner >= 0)
    # bincount adds in row order from 0.0, as the loop does
    s = np.bincount(owner[owned], weights=sq[owned, owner[owned]], minlength=r).astype(np.float64)
    count = np.bincount(owner[owned], minlength=r).astype(np.int64)
    passes = 0
    for passes in range(1, max_passes + 1):  # noqa: B007 (the count is returned)
        moved = 0
        start, width = 0, _FIRST_BLOCK
        while start < d:
            block = sq[start : start + width]
            rows = np.arange(block.shape[0])
            own = owner[start : start + width]
            has = own >= 0
            col = np.where(has, own, 0)
            base = np.maximum(np.sqrt(s) - cost, 0.0)
            remaining = np.sqrt(np.maximum(s[col] - block[rows, col], 0.0))
            loss = np.where(has, base[col] - np.maximum(remaining - cost[col], 0.0), 0.0)
            gain = (np.maximum(np.sqrt(s + block) - cost, 0.0) - base) - loss[:, None]
            gain[rows[has], col[has]] = -np.inf
            best = np.argmax(gain, axis=1)  # the first of equal gains, as the loop keeps it
            moves = gain[rows, best] > 1e-14 * (1.0 + loss)
            if keep_one:
                moves &= ~(has & (count[col] <= 1))
            hits = np.flatnonzero(moves)
            if hits.size == 0:
                start += block.shape[0]
                width *= _BLOCK_GROWTH
                continue
            row, to = start + int(hits[0]), int(best[hits[0]])
            j = owner[row]
            if j >= 0:
                s[j] = max(s[j] - sq[row, j], 0.0)
                count[j] -= 1
            s[to] += sq[row, to]
            count[to] += 1
            owner[row] = to
            moved += 1
            start, width = row + 1, _FIRST_BLOCK
        if moved == 0:
            break
    value = 0.0
    for j in range(r):
        value += max(math.sqrt(s[j]) - cost[j], 0.0)
    return value, passes
