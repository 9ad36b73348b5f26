"""Checks on the values a client sends and on what the server computes from them (arrays only, no Flower).

Every reply is checked per partition before any of it is used: its arrays and scalars against the
family's protocol (:func:`fedmf_app.federated.protocol.check_reply`: count, shape, dtype, names), and
their values here (:func:`check_arrays`: numeric, finite, and of magnitude at most :data:`MAX_MAGNITUDE`,
so that no product or square the server forms from it overflows float64). After the server's update the
state it broadcasts and the round's record are checked too (:func:`check_finite_state`): a round whose
result is not finite stops the run instead of being recorded, checkpointed or taken for convergence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["MAX_MAGNITUDE", "ReplyError", "check_arrays", "check_finite_state", "check_metrics"]

#: Largest magnitude of a value a client may send (its square, and a product of two such values
#: with a sum over 10^8 terms, stays finite in float64).
MAX_MAGNITUDE = 1e100

#: dtype kinds a reply array may have: booleans, integers, unsigned integers, floats.
NUMERIC_KINDS = "biuf"


class ReplyError(ValueError):
    """A client's reply, or the state computed from the replies, is unusable (the message names it)."""


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


def check_arrays(arrays: Sequence[np.ndarray], names: Sequence[str] = ()) -> None:
    """Check the values of one reply's arrays (their shapes and dtypes are the protocol's).

    Parameters
    ----------
    arrays : sequence of ndarray
    names : sequence of str, optional
        The arrays' names, for messages.

    Raises
    ------
    ReplyError
        Naming the array and what is wrong (a non-numeric dtype, non-finite or out-of-range values).
    """
    for index, array in enumerate(arrays):
        label = f"array {index}" + (f" ({names[index]})" if index < len(names) else "")
        if array.dtype.kind not in NUMERIC_KINDS:
            raise ReplyError(f"{label} has dtype {array.dtype}, expected a numeric one")
        _check_values(array, label)


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
