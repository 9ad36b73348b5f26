"""Checks on what a client sends and on what the server computes from it (arrays only, no Flower).

Every reply is checked per partition before any of it is used (:func:`check_arrays`): the number
of arrays, each array's shape and dtype (the method declares them, :class:`ArraySpec`), and its
values (finite, and of magnitude at most :data:`MAX_MAGNITUDE`, so that no product or square the
server forms from it overflows float64). After the server's update the state it broadcasts and the
round's record are checked too (:func:`check_finite_state`): a round whose result is not finite
stops the run instead of being recorded, checkpointed or taken for convergence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MAX_MAGNITUDE", "ArraySpec", "ReplyError", "check_arrays", "check_finite_state", "check_metrics"]

#: Largest magnitude of a value a client may send (its square, and a product of two such values
#: with a sum over 10^8 terms, stays finite in float64).
MAX_MAGNITUDE = 1e100

#: dtype kinds a reply array may have: booleans, integers, unsigned integers, floats.
NUMERIC_KINDS = "biuf"


class ReplyError(ValueError):
    """A client's reply, or the state computed from the replies, is unusable (the message names it)."""


@dataclass(frozen=True)
class ArraySpec:
    """What one array of a reply must be.

    Attributes
    ----------
    name : str
        For messages (e.g. ``"V_p"``).
    shape : tuple of int or None
        Exact shape; ``None`` in an entry: any length along that axis.
    kinds : str
        Allowed ``numpy.dtype.kind`` values (``"f"``: floats; ``"iu"``: integers; ``"u"``: the
        uint64 words of a masked upload).
    optional : bool
        Whether a reply may leave this array out (only trailing arrays may be optional).
    index_range : tuple of int or None
        For an array of indices: ``(low, high)``, every value in ``low <= v < high``.
    """

    name: str
    shape: tuple[int | None, ...]
    kinds: str = "f"
    optional: bool = False
    index_range: tuple[int, int] | None = None


def _describe(index: int, spec: ArraySpec | None) -> str:
    return f"array {index}" + (f" ({spec.name})" if spec is not None else "")


def _check_values(array: np.ndarray, label: str) -> None:
    if array.dtype.kind != "f" or array.size == 0:
        return
    bad = ~np.isfinite(array)
    if bad.any():
        raise ReplyError(f"{label} holds {int(bad.sum())} non-finite value(s) (first at index {_first(bad)})")
    largest = float(np.max(np.abs(array)))
    if largest > MAX_MAGNITUDE:
        big = np.abs(array) > MAX_MAGNITUDE
        raise ReplyError(
            f"{label} holds {int(big.sum())} value(s) of magnitude above {MAX_MAGNITUDE:g} "
            f"(largest {largest:.3g}, first at index {_first(big)})"
        )


def _first(mask: np.ndarray) -> tuple[int, ...] | int:
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))
    return index[0] if len(index) == 1 else index


def check_arrays(arrays: Sequence[np.ndarray], specs: Sequence[ArraySpec] | None) -> None:
    """Check one reply's arrays.

    Parameters
    ----------
    arrays : sequence of ndarray
    specs : sequence of ArraySpec or None
        What the method expects, in order; ``None``: any number of numeric arrays.

    Raises
    ------
    ReplyError
        Naming the array and what is wrong (count, shape, dtype, non-finite or out-of-range values).
    """
    required = sum(not s.optional for s in specs) if specs is not None else 0
    if specs is not None and not required <= len(arrays) <= len(specs):
        wanted = f"{len(specs)}" if required == len(specs) else f"{required} to {len(specs)}"
        names = ", ".join(s.name for s in specs)
        raise ReplyError(f"{len(arrays)} array(s), expected {wanted} ({names})")
    for index, array in enumerate(arrays):
        spec = specs[index] if specs is not None else None
        label = _describe(index, spec)
        kinds = spec.kinds if spec is not None else NUMERIC_KINDS
        if array.dtype.kind not in kinds:
            raise ReplyError(f"{label} has dtype {array.dtype}, expected kind {kinds!r}")
        if spec is not None and (
            array.ndim != len(spec.shape)
            or any(want is not None and have != want for have, want in zip(array.shape, spec.shape))
        ):
            wanted = "(" + ", ".join("any" if s is None else str(s) for s in spec.shape) + ")"
            raise ReplyError(f"{label} has shape {array.shape}, expected {wanted}")
        _check_values(array, label)
        if spec is not None and spec.index_range is not None and array.size:
            low, high = spec.index_range
            if int(array.min()) < low or int(array.max()) >= high:
                raise ReplyError(
                    f"{label} holds indices from {int(array.min())} to {int(array.max())}, "
                    f"expected {low} to {high - 1}"
                )


def check_metrics(metrics: Mapping[str, Any]) -> None:
    """Check that every number among a reply's metrics is finite.

    Raises
    ------
    ReplyError
        Naming the metric.
    """
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ReplyError(f"metric {key!r} = {value}")


def check_finite_state(arrays: Sequence[np.ndarray], record: Mapping[str, Any]) -> None:
    """Check the server's next broadcast and the round's record after an update.

    Parameters
    ----------
    arrays : sequence of ndarray
        The next broadcast.
    record : mapping
        The round's record (numbers, lists, nested dicts, ``None``).

    Raises
    ------
    ReplyError
        Naming the first non-finite broadcast array or record entry.
    """
    for index, array in enumerate(arrays):
        array = np.asarray(array)
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise ReplyError(f"the next broadcast's array {index} is not finite")
    for key, value in _numbers(record):
        if not math.isfinite(value):
            raise ReplyError(f"the round's {key!r} = {value}")


def _numbers(value: Any, key: str = "") -> list[tuple[str, float]]:
    if isinstance(value, Mapping):
        return [pair for k, v in value.items() for pair in _numbers(v, f"{key}.{k}" if key else str(k))]
    if isinstance(value, list | tuple):
        return [pair for i, v in enumerate(value) for pair in _numbers(v, f"{key}[{i}]")]
    if isinstance(value, float | np.floating):
        return [(key, float(value))]
    return []
