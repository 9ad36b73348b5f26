"""Compiled row-assignment ascent of the ``U`` solver (``sonmf.basis-solver = "assignment"``).

On the feasible set ``{U >= 0, U^T U = I}`` the columns of ``U`` have disjoint supports ``S_j``, and
for fixed supports the best unit columns are ``u_j = A^+_{S_j, j} / ||A^+_{S_j, j}||``. The
subproblem is therefore the choice of one owner column per feature (row),

.. math::
    \\max_{S_1, \\dots, S_r \\text{ disjoint}} \\;
    \\sum_j \\sqrt{\\textstyle\\sum_{i \\in S_j} (A^+_{ij})^2} ,

and :func:`assignment_ascent` moves one row at a time to the column that raises this value most,
until no single move raises it. Each pass costs ``O(d r)``. :func:`assignment_ascent` is plain
Python (``sonmf.basis-kernel = "numpy"``: no numba import, no compilation);
:func:`compiled_assignment_ascent` compiles the same function with numba (``"compiled"``), so the
two make the same moves.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = ["assignment_ascent", "compiled_assignment_ascent"]


def assignment_ascent(sq, owner, max_passes):
    """Move rows between columns while a single move raises :math:`\\sum_j \\sqrt{s_j}`.

    Parameters
    ----------
    sq : ndarray, shape (d, r)
        Squared positive part of the linear term, :math:`(A^+_{ij})^2`.
    owner : ndarray of int64, shape (d,)
        Owner column of every row (``-1``: none); updated in place. Every column must own a row;
        a column's last row never leaves it, so every column keeps one.
    max_passes : int
        Maximum number of passes over the rows.

    Returns
    -------
    value : float
        :math:`\\sum_j \\sqrt{s_j}` at the returned owners, :math:`s_j = \\sum_{i \\in S_j} sq_{ij}`.
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
                if count[j] <= 1:
                    continue
                loss = math.sqrt(s[j]) - math.sqrt(max(s[j] - sq[i, j], 0.0))
            best = j
            best_gain = 1e-14 * (1.0 + loss)
            for col in range(r):
                if col != j:
                    gain = math.sqrt(s[col] + sq[i, col]) - math.sqrt(s[col]) - loss
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
        value += math.sqrt(s[j])
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
