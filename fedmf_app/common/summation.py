"""Adding arrays up in order, as ``np.sum`` over a stack does, without the stack."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["add_up"]


def add_up(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The sum of equally shaped arrays, added in order into one new array.

    The same numbers, to the last bit, as ``np.sum(np.stack(arrays), axis=0)`` (which adds along
    the stacked axis in order), without that stack's copy of every array: at n = 100,000 four
    200-column distance matrices are 640 MB.

    Parameters
    ----------
    arrays : sequence of ndarray, each of the same shape
        At least one.

    Returns
    -------
    ndarray
        Same shape; the arrays' common dtype.
    """
    total = np.array(arrays[0], dtype=np.result_type(*arrays), copy=True)
    for array in arrays[1:]:
        total += array
    return total
