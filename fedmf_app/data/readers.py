"""Readers of the multi-view file formats: MATLAB v5 and v7.3 (HDF5), ``.npz`` and ``.csv``.

Each returns the raw views as ``(where, array)`` pairs and the raw labels as ``(key, array)`` or
``None``, exactly as stored; :func:`fedmf_app.data.multiview.assemble_views` checks and orients
them. Problems raise :class:`~fedmf_app.data.DataError` naming the file and the key.
"""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse

from fedmf_app.data.errors import DataError

__all__ = ["LABEL_KEYS", "VIEW_KEYS", "pick_key", "read_csv", "read_mat", "read_mat_v73", "read_npz"]

#: Keys that may hold the views, in order of preference.
VIEW_KEYS: tuple[str, ...] = ("X", "fea", "data")
#: Keys that may hold the ground-truth labels, in order of preference.
LABEL_KEYS: tuple[str, ...] = ("Y", "y", "gt", "truth", "label", "labels", "truelabel")

_NPZ_VIEW = re.compile(r"^(?:X|fea|data|view)_?(\d+)$")


def pick_key(keys: list[str], wanted: tuple[str, ...]) -> str | None:
    return next((k for k in wanted if k in keys), None)


def read_mat(file: Path) -> tuple[list[tuple[str, Any]], tuple[str, Any] | None]:
    import h5py

    if h5py.is_hdf5(file):
        return read_mat_v73(file)
    try:
        contents = scipy.io.loadmat(str(file))
    except NotImplementedError:  # a v7.3 file h5py did not recognise
        return read_mat_v73(file)
    except Exception as exc:  # scipy raises several types on a corrupt file
        raise DataError(f"{file}: not a readable MATLAB file ({exc})") from exc
    keys = [k for k in contents if not k.startswith("__")]
    vkey = pick_key(keys, VIEW_KEYS)
    if vkey is None:
        raise DataError(
            f"{file}: no views under any of the keys {', '.join(VIEW_KEYS)} "
            f"(keys found: {', '.join(keys) or 'none'})"
        )
    stored = contents[vkey]
    if isinstance(stored, np.ndarray) and stored.dtype == object:
        cells = list(stored.ravel(order="F"))
        raw_views = [(f"view {i} ('{vkey}'{{{i + 1}}})", c) for i, c in enumerate(cells)]
    else:
        raw_views = [(f"view 0 ('{vkey}')", stored)]
    lkey = pick_key(keys, LABEL_KEYS)
    raw_labels = None
    if lkey is not None:
        value = contents[lkey]
        if isinstance(value, np.ndarray) and value.dtype == object:
            value = list(value.ravel(order="F"))
        raw_labels = (lkey, value)
    return raw_views, raw_labels


def read_mat_v73(file: Path) -> tuple[list[tuple[str, Any]], tuple[str, Any] | None]:
    import h5py

    try:
        with h5py.File(file, "r") as f:
            keys = [k for k in f.keys() if not k.startswith("#")]
            vkey = pick_key(keys, VIEW_KEYS)
            if vkey is None:
                raise DataError(
                    f"{file}: no views under any of the keys {', '.join(VIEW_KEYS)} "
                    f"(keys found: {', '.join(keys) or 'none'})"
                )
            stored = _h5_value(f, f[vkey])
            if isinstance(stored, list):
                raw_views = [
                    (f"view {i} ('{vkey}'{{{i + 1}}})", _h5_leaf(v, file, vkey)) for i, v in enumerate(stored)
                ]
            else:
                raw_views = [(f"view 0 ('{vkey}')", stored)]
            lkey = pick_key(keys, LABEL_KEYS)
            raw_labels = None if lkey is None else (lkey, _h5_value(f, f[lkey]))
    except OSError as exc:
        raise DataError(f"{file}: not a readable MATLAB v7.3 (HDF5) file ({exc})") from exc
    return raw_views, raw_labels


def _h5_leaf(value: Any, file: Path, key: str) -> Any:
    if isinstance(value, list):
        raise DataError(f"{file}: '{key}' is a nested cell array; expected a cell of matrices")
    return value


def _h5_value(f: Any, node: Any) -> Any:
    """A MATLAB value from an HDF5 node, in MATLAB's orientation (a cell becomes a list)."""
    import h5py

    if isinstance(node, h5py.Group):
        if "MATLAB_sparse" in node.attrs:
            nrows = int(node.attrs["MATLAB_sparse"])
            jc = node["jc"][()]
            ir = node["ir"][()] if "ir" in node else np.zeros(0, dtype=np.int64)
            data = node["data"][()] if "data" in node else np.ones(len(ir))
            return scipy.sparse.csc_matrix((data, ir, jc), shape=(nrows, len(jc) - 1))
        raise DataError(f"{f.filename}: '{node.name}' is a MATLAB struct, not a matrix or cell")
    value = node[()]
    if h5py.check_dtype(ref=node.dtype) is not None:
        return [_h5_value(f, f[ref]) for ref in value.T.ravel(order="F")]
    return value.T


def read_npz(file: Path) -> tuple[list[tuple[str, Any]], tuple[str, Any] | None]:
    try:
        with np.load(file, allow_pickle=False) as contents:
            arrays = {k: contents[k] for k in contents.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:  # corrupt or truncated
        raise DataError(f"{file}: not a readable .npz archive ({exc})") from exc
    numbered = sorted((int(m.group(1)), k) for k in arrays if (m := _NPZ_VIEW.match(k)))
    if not numbered:
        single = pick_key(list(arrays), VIEW_KEYS)
        if single is None:
            raise DataError(
                f"{file}: no views (expected arrays X_0, X_1, ... or one array under "
                f"{', '.join(VIEW_KEYS)}; keys found: {', '.join(arrays) or 'none'})"
            )
        numbered = [(0, single)]
    lkey = pick_key(list(arrays), LABEL_KEYS)
    raw_views = [(f"view {i} ('{k}')", arrays[k]) for i, (_, k) in enumerate(numbered)]
    return raw_views, (None if lkey is None else (lkey, arrays[lkey]))


def read_csv(file: Path) -> tuple[str, np.ndarray, tuple[str, np.ndarray] | None]:
    try:
        with file.open(newline="") as handle:
            rows = [r for r in csv.reader(handle) if r]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{file}: not a readable CSV file ({exc})") from exc
    if not rows:
        raise DataError(f"{file}: is empty")
    header = None
    if not all(_is_number(c) for c in rows[0]):
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    label_col = None if header is None else pick_key(header, LABEL_KEYS)
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise DataError(f"{file}: rows have different numbers of columns ({sorted(widths)})")
    table = np.array(rows, dtype=object).reshape(len(rows), -1)
    labels = None
    if label_col is not None:
        j = header.index(label_col)
        labels = (label_col, np.array([str(c).strip() for c in table[:, j]]))
        table = np.delete(table, j, axis=1)
    try:
        values = table.astype(np.float64)
    except ValueError as exc:
        raise DataError(
            f"{file}: holds a non-numeric feature value ({exc}); a label column "
            f"needs a header named one of {', '.join(LABEL_KEYS)}"
        ) from exc
    return "the CSV table", values, labels


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
