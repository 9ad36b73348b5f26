"""Readers of the multi-view file formats: MATLAB v5 and v7.3 (HDF5), ``.npz`` and ``.csv``.

The ``.mat`` and ``.npz`` readers list a file's top-level keys and what each holds, and
:func:`locate_views` finds the views and labels among them; each returns the raw views as
``(where, array)`` pairs, the views' own names and the raw labels as ``(key, array)`` or ``None``,
exactly as stored; :func:`fedmf_app.data.multiview.assemble_views` checks and orients them.
Problems raise :class:`~fedmf_app.data.DataError` naming the file and the key.
"""

from __future__ import annotations

import csv
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedmf_app.common.sparse import issparse
from fedmf_app.data.errors import DataError

__all__ = [
    "CSV_LABEL_KEYS",
    "LABEL_KEYS",
    "VIEW_KEYS",
    "label_key",
    "locate_views",
    "pick_key",
    "read_csv",
    "read_mat",
    "read_mat_v73",
    "read_npz",
]

#: Keys that may hold the views (a cell, a struct of views or one matrix), in order of preference.
VIEW_KEYS: tuple[str, ...] = ("X", "fea", "data")
#: Label keys of a CSV header, in order of preference.
CSV_LABEL_KEYS: tuple[str, ...] = ("Y", "y", "gt", "truth", "label", "labels", "truelabel")
#: Keys that may hold the ground-truth labels of a ``.mat`` or ``.npz`` file, in order of
#: preference; a key equal to one of them but for case is taken when none matches exactly.
LABEL_KEYS: tuple[str, ...] = (
    *CSV_LABEL_KEYS,
    "gnd",
    "truelabels",
    "Y1",
    "label1",
    "class",
    "target",
    "targets",
)

#: A view as a numbered top-level key: ``X1``, ``x_2``, ``view3``, ``View_4``, ``fea5``, ``data6``...
_NUMBERED = re.compile(r"^(x|views?|fea|feat|features?|data)_?(\d+)$", re.IGNORECASE)
#: Any stem and a number (``msr1``, ``Mfeat_2``): views when two or more share a sample count.
_ANY_NUMBERED = re.compile(r"^([a-z][a-z_]*?)_?(\d+)$", re.IGNORECASE)


def _way_out(example: list[str] | tuple[str, ...] = ("X1", "X2")) -> str:
    """The way out of an ambiguous layout, said in every such message."""
    keys = ",".join(example[:2])
    return f"name the views with run config 'views', e.g. views = \"{keys}\" (top-level keys, in order)"


#: What a stored value is: a MATLAB cell (a list), a struct (a dict of fields), a numeric
#: matrix (dense or sparse), or anything else (text, scalars of other types).
CELL, STRUCT, ARRAY, OTHER = "cell", "struct", "array", "other"

RawViews = list[tuple[str, Any]]
RawLabels = tuple[str, Any] | None


#: Keys of an archive written by ``scipy.sparse.save_npz`` (CSR/CSC; COO has row/col instead).
SPARSE_NPZ_KEYS = frozenset({"data", "indices", "indptr", "format", "shape"})


def pick_key(keys: list[str], wanted: tuple[str, ...]) -> str | None:
    return next((k for k in wanted if k in keys), None)


def label_key(keys: list[str]) -> str | None:
    """The label key among ``keys``: the first of :data:`LABEL_KEYS` present, else one equal to
    one of them but for case (``Label``, ``GND``), else ``None``."""
    exact = pick_key(keys, LABEL_KEYS)
    if exact is not None:
        return exact
    lowered = {k.lower(): k for k in reversed(keys)}
    return next((lowered[w.lower()] for w in LABEL_KEYS if w.lower() in lowered), None)


def locate_views(
    file: Path, kinds: dict[str, str], get: Callable[[str], Any], views: str = ""
) -> tuple[RawViews, tuple[str, ...], RawLabels]:
    """Find the views and labels among a file's top-level keys.

    When ``views`` (run config ``views``) names top-level matrices only, those are the views, in
    its order. Otherwise, in order: a cell under the first of :data:`VIEW_KEYS` present; views as
    numbered top-level keys of one family (``X1, X2, ...``, any case, with or without ``_``,
    ordered by number); a struct under that key (its fields are the views, in stored order); one
    matrix under it (one view); then the one candidate among the cells of matrices under another
    key and the families of two or more numbered matrices under any other stem (``msr1 ... msr5``)
    that share a sample count. Labels: :func:`label_key`.

    Parameters
    ----------
    file : Path
        For messages.
    kinds : dict of str
        Each top-level key (file order) and what it holds: :data:`CELL`, :data:`STRUCT`,
        :data:`ARRAY` or :data:`OTHER`.
    get : callable
        ``get(key)``: the value in MATLAB's orientation (a cell as a list, a struct as a dict).
    views : str
        Run config ``views`` (comma-separated); taken here only when every entry is a top-level
        matrix key (exactly, or but for case when that is the only match).

    Returns
    -------
    raw_views : list of (str, value)
        Where each view was found (for messages) and its value, as stored.
    names : tuple of str
        The views' own names (numbered keys, struct fields, the one matrix's key); empty for a cell.
    raw_labels : (str, value) or None

    Raises
    ------
    DataError
        When no key holds views, or two could (naming the candidates).
    """
    keys = list(kinds)
    lkey = label_key(keys)
    raw_labels = None if lkey is None else (lkey, get(lkey))
    named = _named_keys(views, keys, kinds)
    if named:
        return [(f"view {i} ('{k}')", get(k)) for i, k in enumerate(named)], tuple(named), raw_labels
    vkey = pick_key(keys, VIEW_KEYS)
    groups = _numbered_families(keys, kinds, lkey, _NUMBERED)
    if len(groups) > 1:
        found = "; ".join(", ".join(k for _, k in g) for g in groups.values())
        raise DataError(
            f"{file}: ambiguous layout: more than one family of numbered keys could hold the views "
            f"({found}); {_way_out([k for _, k in next(iter(groups.values()))])}"
        )
    numbered = next(iter(groups.values()), [])
    _check_numbers(file, numbered)
    if vkey is not None and kinds[vkey] == CELL:
        cells = get(vkey)
        raw = [(f"view {i} ('{vkey}'{{{i + 1}}})", c) for i, c in enumerate(cells)]
        return raw, (), raw_labels
    if numbered:
        return (
            [(f"view {i} ('{k}')", get(k)) for i, (_, k) in enumerate(numbered)],
            tuple(k for _, k in numbered),
            raw_labels,
        )
    if vkey is not None and kinds[vkey] == STRUCT:
        fields = get(vkey)
        raw = [(f"view {i} ('{vkey}.{name}')", v) for i, (name, v) in enumerate(fields.items())]
        return raw, tuple(fields), raw_labels
    if vkey is not None:
        return [(f"view 0 ('{vkey}')", get(vkey))], (vkey,), raw_labels
    cells = [k for k in keys if kinds[k] == CELL and k != lkey and _holds_matrices(get(k))]
    stems = {
        stem: family
        for stem, family in _numbered_families(keys, kinds, lkey, _ANY_NUMBERED).items()
        if len(family) >= 2 and _share_sample_count([get(k) for _, k in family], raw_labels)
    }
    candidates = [f"the cell {k}" for k in cells] + [
        ", ".join(k for _, k in family) for family in stems.values()
    ]
    if len(candidates) > 1:
        raise DataError(
            f"{file}: ambiguous layout: no views under any of the keys {', '.join(VIEW_KEYS)} and "
            f"several cells of matrices or numbered families could hold them ({'; '.join(candidates)}); "
            f"{_way_out([k for _, k in next(iter(stems.values()))] if stems else ('X1', 'X2'))}"
        )
    if cells:
        raw = [(f"view {i} ('{cells[0]}'{{{i + 1}}})", c) for i, c in enumerate(get(cells[0]))]
        return raw, (), raw_labels
    if stems:
        family = next(iter(stems.values()))
        _check_numbers(file, family)
        return (
            [(f"view {i} ('{k}')", get(k)) for i, (_, k) in enumerate(family)],
            tuple(k for _, k in family),
            raw_labels,
        )
    raise DataError(
        f"{file}: no views under any of the keys {', '.join(VIEW_KEYS)} "
        f"(keys found: {', '.join(keys) or 'none'}); nor numbered keys (X1, X2, ...; x_1, view1, "
        "fea1, data1, msr1, ...) sharing a sample count, nor one cell of matrices under another key; "
        f"{_way_out()}"
    )


def _named_keys(views: str, keys: list[str], kinds: dict[str, str]) -> list[str]:
    """The top-level matrix keys run config ``views`` names, in its order; empty when ``views``
    is empty or one of its entries is not such a key (a view name or index of another layout)."""
    entries = [e.strip() for e in views.split(",") if e.strip()]
    found = []
    for entry in entries:
        if entry in kinds:
            key = entry
        else:
            folded = [k for k in keys if k.lower() == entry.lower()]
            key = folded[0] if len(folded) == 1 else None
        if key is None or kinds[key] != ARRAY:
            return []
        found.append(key)
    return found


def _numbered_families(
    keys: list[str], kinds: dict[str, str], lkey: str | None, pattern: re.Pattern
) -> dict[str, list[tuple[int, str]]]:
    """Top-level matrix keys that ``pattern`` reads as stem + number, grouped by stem (any case),
    each family ordered by number."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for k in keys:
        match = pattern.match(k)
        if match and kinds[k] == ARRAY and k != lkey:
            groups.setdefault(match.group(1).lower(), []).append((int(match.group(2)), k))
    return {stem: sorted(family) for stem, family in groups.items()}


def _check_numbers(file: Path, numbered: list[tuple[int, str]]) -> None:
    numbers = [i for i, _ in numbered]
    if len(set(numbers)) < len(numbers):
        raise DataError(
            f"{file}: ambiguous layout: numbered view keys {', '.join(k for _, k in numbered)} "
            f"repeat a number; {_way_out([k for _, k in numbered])}"
        )


def _share_sample_count(values: list[Any], raw_labels: RawLabels) -> bool:
    """Whether matrices (not vectors) could be views of the same samples: one dimension common to
    all of them (the label length, when there are labels)."""
    shapes = [v.shape if issparse(v) else np.shape(v) for v in values]
    if any(len(s) != 2 or min(s) < 2 for s in shapes):
        return False
    common = set(shapes[0]).intersection(*map(set, shapes[1:]))
    if raw_labels is not None:
        n = np.size(raw_labels[1]) if not isinstance(raw_labels[1], list) else None
        return n in common if n is not None else bool(common)
    return bool(common)


def _holds_matrices(cells: list[Any]) -> bool:
    """Whether a cell could hold views: nonempty, every element a numeric matrix (not a vector)."""

    def matrix(c: Any) -> bool:
        if issparse(c):
            return min(c.shape) >= 2
        return isinstance(c, np.ndarray) and c.ndim == 2 and min(c.shape) >= 2 and c.dtype.kind in "biuf"

    return bool(cells) and all(matrix(c) for c in cells)


def read_mat(file: Path, views: str = "") -> tuple[RawViews, tuple[str, ...], RawLabels]:
    """Views, their names and labels of a MATLAB file (v7.3 files go to :func:`read_mat_v73`);
    ``views`` as :func:`locate_views`."""
    import h5py
    import scipy.io

    if h5py.is_hdf5(file):
        return read_mat_v73(file, views)
    try:
        contents = scipy.io.loadmat(str(file))
    except NotImplementedError:  # a v7.3 file h5py did not recognise
        return read_mat_v73(file, views)
    except Exception as exc:  # scipy raises several types on a corrupt file
        raise DataError(f"{file}: not a readable MATLAB file ({exc})") from exc
    values = {k: _v5_value(v) for k, v in contents.items() if not k.startswith("__")}
    return locate_views(file, {k: _kind(v) for k, v in values.items()}, values.__getitem__, views)


def _v5_value(value: Any) -> Any:
    """A value of ``scipy.io.loadmat`` with a cell as a list and a 1 x 1 struct as a dict."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        return list(value.ravel(order="F"))
    if isinstance(value, np.ndarray) and value.dtype.names and value.size == 1:
        return {name: _v5_value(value[name].flat[0]) for name in value.dtype.names}
    return value


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return CELL
    if isinstance(value, dict):
        return STRUCT
    if issparse(value) or (isinstance(value, np.ndarray) and value.dtype.kind in "biuf"):
        return ARRAY
    return OTHER


def read_mat_v73(file: Path, views: str = "") -> tuple[RawViews, tuple[str, ...], RawLabels]:
    """Views, their names and labels of a MATLAB v7.3 (HDF5) file, in MATLAB's orientation."""
    import h5py

    try:
        with h5py.File(file, "r") as f:
            kinds = {k: _h5_kind(f[k]) for k in f.keys() if not k.startswith("#")}

            def get(key: str) -> Any:
                value = _h5_value(f, f[key])
                if isinstance(value, list):
                    return [_h5_leaf(v, file, key) for v in value]
                return value

            return locate_views(file, kinds, get, views)
    except OSError as exc:
        raise DataError(f"{file}: not a readable MATLAB v7.3 (HDF5) file ({exc})") from exc


def _h5_kind(node: Any) -> str:
    import h5py

    if isinstance(node, h5py.Group):
        return ARRAY if "MATLAB_sparse" in node.attrs else STRUCT
    if h5py.check_dtype(ref=node.dtype) is not None:
        return CELL
    matlab_class = node.attrs.get("MATLAB_class", b"double")
    if isinstance(matlab_class, bytes):
        matlab_class = matlab_class.decode()
    return OTHER if matlab_class == "char" or node.dtype.kind not in "biuf" else ARRAY


def _h5_leaf(value: Any, file: Path, key: str) -> Any:
    if isinstance(value, list):
        raise DataError(f"{file}: '{key}' is a nested cell array; expected a cell of matrices")
    return value


def _h5_value(f: Any, node: Any) -> Any:
    """A MATLAB value from an HDF5 node, in MATLAB's orientation (a cell becomes a list, a struct
    a dict of its fields in MATLAB's order)."""
    import h5py

    if isinstance(node, h5py.Group):
        if "MATLAB_sparse" in node.attrs:
            nrows = int(node.attrs["MATLAB_sparse"])
            jc = node["jc"][()]
            ir = node["ir"][()] if "ir" in node else np.zeros(0, dtype=np.int64)
            data = node["data"][()] if "data" in node else np.ones(len(ir))
            import scipy.sparse

            return scipy.sparse.csc_matrix((data, ir, jc), shape=(nrows, len(jc) - 1))
        if "MATLAB_fields" in node.attrs:
            names = [b"".join(np.asarray(c, dtype="S1")).decode() for c in node.attrs["MATLAB_fields"]]
        else:
            names = list(node.keys())
        return {name: _h5_value(f, node[name]) for name in names}
    value = node[()]
    if h5py.check_dtype(ref=node.dtype) is not None:
        return [_h5_value(f, f[ref]) for ref in value.T.ravel(order="F")]
    return value.T


def read_npz(file: Path, views: str = "") -> tuple[RawViews, tuple[str, ...], RawLabels]:
    """Views, their names and labels of an ``.npz`` archive (``views`` as :func:`locate_views`).

    An archive written by ``scipy.sparse.save_npz`` is one sparse view (samples x features) without
    labels.
    """
    try:
        with np.load(file, allow_pickle=False) as contents:
            arrays = {k: contents[k] for k in contents.files}
        if set(arrays) in (SPARSE_NPZ_KEYS, SPARSE_NPZ_KEYS - {"indices", "indptr"} | {"row", "col"}):
            import scipy.sparse

            return [("sparse matrix", scipy.sparse.load_npz(file))], ("sparse matrix",), None
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:  # corrupt or truncated
        raise DataError(f"{file}: not a readable .npz archive ({exc})") from exc
    return locate_views(file, {k: _kind(v) for k, v in arrays.items()}, arrays.__getitem__, views)


def read_csv(
    file: Path, id_column: str = "", origin: str = ""
) -> tuple[str, np.ndarray, tuple[str, np.ndarray] | None, np.ndarray | None]:
    """Features, labels and sample IDs of a CSV table (rows are samples, optional header).

    Parameters
    ----------
    file : Path
    id_column : str
        The header column holding the sample IDs (empty: none); it is not a feature.
    origin : str
        Which config named ``id_column``, for messages.

    Returns
    -------
    where : str
    values : ndarray, shape (n, d)
    labels : (str, ndarray) or None
        The label column's header and its values as text.
    ids : ndarray of str, shape (n,), or None
        The ID column's values as text (not yet checked).
    """
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
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise DataError(f"{file}: rows have different numbers of columns ({sorted(widths)})")
    table = np.array(rows, dtype=object).reshape(len(rows), -1)
    ids = None
    if id_column:
        if header is None or id_column not in header:
            columns = f"its columns: {', '.join(header)}" if header else "it has no header row"
            raise DataError(
                f"{file}: {origin}: no such column ({columns}); every party needs an ID column for the "
                "alignment"
            )
        j = header.index(id_column)
        ids = np.array([str(c) for c in table[:, j]])
        table = np.delete(table, j, axis=1)
        header = header[:j] + header[j + 1 :]
    label_col = None if header is None else pick_key(header, CSV_LABEL_KEYS)
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
            f"needs a header named one of {', '.join(CSV_LABEL_KEYS)}"
        ) from exc
    return "the CSV table", values, labels, ids


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
