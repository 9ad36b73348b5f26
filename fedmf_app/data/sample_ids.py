"""Sample IDs: which column or key of a data file holds them, read as text, checked.

Run config ``sample-id`` (a node's config ``sample-id`` overrides it for that node) names a CSV
header column or an ``.npz``/``.mat`` key holding one ID per sample, integers or strings. IDs are
compared as text: strings with surrounding white space removed, integers (and integral floats,
as MATLAB stores numbers) in decimal. Messages name rows, never an ID: they reach the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedmf_app.data.errors import DataError

__all__ = ["id_origin", "id_strings", "read_id_array", "sample_id_key"]


def sample_id_key(cfg: Mapping[str, Any], node_config: Mapping[str, Any] | None) -> str:
    """The ID column or key of this node: node config ``sample-id``, else run config ``sample-id``.

    Returns
    -------
    str
        Empty: this node's data has no IDs (no alignment).
    """
    node = node_config or {}
    return str(node["sample-id"] if "sample-id" in node else cfg.get("sample-id", "")).strip()


def id_origin(node_config: Mapping[str, Any] | None, key: str) -> str:
    """Which config set the key, for messages: ``node config 'sample-id' = 'id'``."""
    which = "node config" if "sample-id" in (node_config or {}) else "run config"
    return f"{which} 'sample-id' = {key!r}"


def id_strings(values: Any, source: str, where: str) -> np.ndarray:
    """IDs as text, checked: one per sample, none empty, none twice.

    Parameters
    ----------
    values : array-like or list
        As stored: a vector of integers, integral floats or strings, or a list of them (a MATLAB
        cell of strings).
    source, where : str
        The file and the column or key, for messages.

    Returns
    -------
    ndarray of str, shape (n,)

    Raises
    ------
    DataError
        On a non-vector, a non-integral or non-finite number, an empty ID or a repeated one
        (naming the rows, not the ID).
    """
    if isinstance(values, list) or (isinstance(values, np.ndarray) and values.dtype == object):
        items = [_text(v, source, where) for v in np.asarray(values, dtype=object).ravel(order="F")]
        ids = np.array(items, dtype=str)
    else:
        array = np.asarray(values)
        if array.ndim not in (1, 2) or (array.ndim == 2 and min(array.shape) != 1):
            raise DataError(f"{source}: sample IDs {where} must be a vector, got shape {array.shape}")
        array = array.reshape(-1)
        if array.dtype.kind in "iu":
            ids = np.array([str(int(v)) for v in array], dtype=str)
        elif array.dtype.kind == "f":
            if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
                raise DataError(
                    f"{source}: sample IDs {where} must be integers or strings; it holds fractions"
                )
            ids = np.array([str(int(v)) for v in array], dtype=str)
        elif array.dtype.kind in "US":
            ids = np.char.strip(array.astype(str))
        else:
            raise DataError(f"{source}: sample IDs {where} have unsupported type {array.dtype}")
    if ids.size == 0:
        raise DataError(f"{source}: sample IDs {where} are empty")
    empty = np.flatnonzero(ids == "")
    if empty.size:
        raise DataError(f"{source}: sample IDs {where}: row {int(empty[0])} has an empty ID")
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if np.any(counts > 1):
        value = ids[first[np.argmax(counts > 1)]]
        rows = np.flatnonzero(ids == value)
        raise DataError(
            f"{source}: sample IDs {where}: {int((counts > 1).sum())} ID(s) appear more than once, "
            f"e.g. rows {int(rows[0])} and {int(rows[1])} share one; every sample needs its own ID"
        )
    return ids


def _text(value: Any, source: str, where: str) -> str:
    array = np.asarray(value)
    if array.dtype.kind in "US":
        return "".join(map(str, array.ravel()))
    if array.size == 1 and array.dtype.kind in "iuf" and float(array.item()).is_integer():
        return str(int(array.item()))
    raise DataError(f"{source}: sample IDs {where} must be integers or strings (a cell holds {array.dtype})")


def read_id_array(file: Path, key: str, origin: str) -> np.ndarray:
    """The IDs under ``key`` of an ``.npz`` or ``.mat`` file.

    Parameters
    ----------
    file : Path
    key : str
    origin : str
        :func:`id_origin`, for messages.

    Returns
    -------
    ndarray of str, shape (n,)
        Checked by :func:`id_strings`.

    Raises
    ------
    DataError
        When the file has no such key (naming the keys it has) or the IDs are malformed.
    """
    suffix = file.suffix.lower()
    if suffix == ".npz":
        with np.load(file, allow_pickle=False) as contents:
            keys = list(contents.files)
            values = contents[key] if key in keys else None
    elif suffix == ".mat":
        values, keys = _mat_ids(file, key)
    else:
        raise DataError(f"{file}: {origin}: a {suffix} file holds no sample IDs (use .csv, .npz or .mat)")
    if values is None:
        raise DataError(
            f"{file}: {origin}: no such key; the file holds {', '.join(keys) or 'nothing'} "
            "(every party needs an ID column for the alignment)"
        )
    return id_strings(values, str(file), f"'{key}'")


def _mat_ids(file: Path, key: str) -> tuple[Any, list[str]]:
    import h5py

    if h5py.is_hdf5(file):
        with h5py.File(file, "r") as f:
            keys = [k for k in f.keys() if not k.startswith("#")]
            if key not in keys:
                return None, keys
            node = f[key]
            value = node[()].T
            if node.attrs.get("MATLAB_class", b"") in (b"char", "char"):
                value = np.array(["".join(map(chr, row)) for row in np.atleast_2d(value)])
            return value, keys
    import scipy.io

    contents = scipy.io.loadmat(str(file))
    keys = [k for k in contents if not k.startswith("__")]
    if key not in keys:
        return None, keys
    value = contents[key]
    if value.dtype == object:
        return list(value.ravel(order="F")), keys
    return value, keys
