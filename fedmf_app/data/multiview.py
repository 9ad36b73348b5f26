"""Multi-view data files: read the layouts people actually have, check them, hand out views.

Supported inputs
----------------
* MATLAB ``.mat``: v5 (``scipy.io``) and v7.3/HDF5 (``h5py``; it returns every array transposed
  and cells as object references, which this module undoes). The views are, in order of
  preference (:func:`~fedmf_app.data.readers.locate_views`): a 1 x V or V x 1 cell array under the
  first of :data:`VIEW_KEYS` present; numbered top-level keys of one family (``X1, X2, ...``,
  ``x_1``, ``view1``, ``View_1``, ``fea1``, ``data1``, any case, in numeric order: ``X10`` after
  ``X9``); a struct under that key whose fields are the views; one plain matrix under it (one
  view); the one cell of matrices under another key, or the one family of two or more numbered
  matrices under any other stem that share a sample count (MSRC-v1's ``msr1 ... msr5`` beside
  ``truth``). Two candidates are refused as ambiguous, with a message naming run config
  ``views``: it may name any top-level matrices (``views = "msr1,msr3"``), which are then the
  views, in its order. Each view is dense or sparse, integer or float, stored
  samples x features (N x d) or d x N: the orientation is decided per view against the label
  length (without labels, against the sample count the views share). Labels are under the first of
  :data:`LABEL_KEYS` present (or one of them in another case), N x 1 or 1 x N, possibly a cell of
  identical copies, with any coding (0-based, 1-based, offset, text): they are remapped to
  ``0..k-1`` in sorted order. Other keys (missing-view masks, names, MATLAB headers) are ignored.
* ``.npz`` (multi-view): arrays ``X_0, X_1, ...`` (the same numbered keys as above) or one array
  under a key of :data:`VIEW_KEYS`, and an optional label array under a key of :data:`LABEL_KEYS`.
* One view per file (:func:`load_single_view`, a deployment's node-config ``data-file``): ``.npy``
  (samples x features, no labels), ``.csv`` (rows are samples; an optional header row, and a
  header column named like a label key holds the labels), ``.npz`` or ``.mat`` with one view (an
  ``.npz`` written by ``scipy.sparse.save_npz`` is one sparse view); optionally with sample IDs in
  a CSV column or under an ``.npz``/``.mat`` key (:mod:`fedmf_app.data.sample_ids`).

Views that have names in the file (numbered keys, struct fields; an embedded data set's view
names) keep them (:attr:`MultiViewData.view_names`), so that run config ``views`` can pick and
order them by name or 0-based index (:func:`select_views`). Everything is returned float64,
samples x features: dense views as read-only arrays, views stored sparse as CSR matrices
(memory proportional to their nonzeros). Problems raise :class:`~fedmf_app.data.DataError` naming
the file, the key or view, and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from fedmf_app.data.errors import DataError
from fedmf_app.data.readers import LABEL_KEYS, VIEW_KEYS, read_csv, read_mat, read_npz
from fedmf_app.data.sample_ids import id_strings, read_id_array

__all__ = [
    "DataError",
    "LABEL_KEYS",
    "MultiViewData",
    "VIEW_KEYS",
    "assemble_views",
    "load_multiview",
    "load_single_view",
    "require_labels",
    "select_views",
]


@dataclass(frozen=True)
class MultiViewData:
    """A multi-view data set (views are read-only arrays).

    Attributes
    ----------
    views : list of ndarray or scipy.sparse.csr_matrix, each shape (n, d_v)
        Samples x features, float64; a view stored sparse in the file stays a CSR matrix.
    labels : ndarray, shape (n,), or None
        Ground truth coded ``0..k-1`` (int64); ``None`` when the file has none.
    name : str
        Short name, e.g. ``"hw"`` or the file stem.
    source : str
        The path, or ``"embedded:<name>"``.
    view_names : tuple of str
        The views' own names in the file (one per view), or empty when the file does not name
        them (a cell array).
    """

    views: list[np.ndarray]
    labels: np.ndarray | None
    name: str
    source: str
    view_names: tuple[str, ...] = ()

    @property
    def num_samples(self) -> int:
        """``n``."""
        return int(self.views[0].shape[0])

    @property
    def num_classes(self) -> int | None:
        """Number of ground-truth classes (``None`` without labels)."""
        return None if self.labels is None else int(self.labels.max()) + 1


# ------------------------------------------------------------------------------------ public API
def require_labels(data: MultiViewData) -> np.ndarray:
    """The ground truth of ``data``, for an evaluation that cannot run without it.

    Parameters
    ----------
    data : MultiViewData

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    DataError
        When the data set has no labels.
    """
    if data.labels is None:
        raise DataError(
            f"{data.source}: no labels under any of the keys {', '.join(LABEL_KEYS)}, "
            "but the evaluation needs the ground truth"
        )
    return data.labels


def load_multiview(path_or_name: str, views: str = "") -> MultiViewData:
    """Read a multi-view data set: an embedded name, or a ``.mat``/``.npz`` file.

    Parameters
    ----------
    path_or_name : str
        The name of an embedded data set (:data:`fedmf_app.data.embedded.EMBEDDED`) or a path
        (``~`` is expanded; a relative path is taken from the current working folder).
    views : str
        Run config ``views``: the views to keep, in this order (:func:`select_views`); empty:
        all, in file order.

    Returns
    -------
    MultiViewData

    Raises
    ------
    DataError
        When the file is missing, unreadable or malformed, or ``views`` names a view it does not
        have.
    """
    from fedmf_app.data.embedded import EMBEDDED, load_embedded

    if path_or_name in EMBEDDED:
        return select_views(load_embedded(path_or_name), views)
    path = _existing_file(path_or_name)
    stat = path.stat()
    data = _load_multiview_cached(str(path.resolve()), stat.st_mtime_ns, stat.st_size, views)
    return select_views(data, views)


def select_views(data: MultiViewData, views: str) -> MultiViewData:
    """The views run config ``views`` names, in its order.

    Parameters
    ----------
    data : MultiViewData
    views : str
        Comma-separated entries, each a view's own name (:attr:`MultiViewData.view_names`; a name
        in another case is taken when it is the only match) or a 0-based index into the file's
        views, e.g. ``"2,0"`` or ``"x3,x1"``; empty: ``data`` as it is.

    Returns
    -------
    MultiViewData
        Same labels, name and source; the chosen views (the same read-only arrays) and names.

    Raises
    ------
    DataError
        On an unknown name, an index out of range or a view named twice, naming the file, the key
        ``views``, the entry and the views there are.
    """
    if not views.strip():
        return data
    chosen: list[int] = []
    for entry in (e.strip() for e in views.split(",")):
        index = _view_index(data, entry)
        problem = None
        if index is None and entry.isdigit():
            problem = f"index {entry} is out of range"
        elif index is None:
            problem = f"{entry!r} is not a view of this file"
        elif index in chosen:
            problem = f"{entry!r} repeats view {index}"
        if problem is not None:
            raise DataError(f"{data.source}: run config 'views' = {views!r}: {problem} ({_available(data)})")
        chosen.append(index)
    return MultiViewData(
        views=[data.views[i] for i in chosen],
        labels=data.labels,
        name=data.name,
        source=data.source,
        view_names=tuple(data.view_names[i] for i in chosen) if data.view_names else (),
    )


def load_single_view(
    path: str, sample_id: str = "", origin: str = ""
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Read one organisation's view from its own file.

    Parameters
    ----------
    path : str
        ``.npy``, ``.csv``, ``.npz`` or ``.mat`` (the last two must hold exactly one view).
    sample_id : str
        The CSV column or ``.npz``/``.mat`` key holding the sample IDs (empty: none;
        :mod:`fedmf_app.data.sample_ids`).
    origin : str
        Which config named ``sample_id``, for messages.

    Returns
    -------
    features : ndarray, shape (n, d)
        Float64 (read-only).
    labels : ndarray, shape (n,), or None
        Ground truth coded ``0..k-1``, when the file has it.
    ids : ndarray of str, shape (n,), or None
        The sample IDs as text, each once (with ``sample_id`` only).

    Raises
    ------
    DataError
        When the file is missing, unreadable, malformed, holds more than one view, or has no or
        malformed sample IDs under ``sample_id``.
    """
    file = _existing_file(path)
    suffix = file.suffix.lower()
    ids = None
    if suffix == ".npy":
        if sample_id:
            raise DataError(
                f"{file}: {origin}: a .npy file holds no sample IDs (use .csv with an ID column, or "
                ".npz/.mat with an ID key)"
            )
        try:
            array = np.load(file, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise DataError(f"{file}: not a readable .npy array ({exc})") from exc
        if array.ndim != 2:
            raise DataError(
                f"{file}: the view must be a 2-D array (samples x features), got shape {array.shape}"
            )
        data = assemble_views([("array", array)], None, file.stem, str(file), orient=False)
    elif suffix == ".csv":
        columns, array, labels, raw_ids = read_csv(file, sample_id, origin)
        data = assemble_views([(columns, array)], labels, file.stem, str(file))
        if raw_ids is not None:
            ids = id_strings(raw_ids, str(file), f"(column {sample_id!r})")
    elif suffix in (".npz", ".mat"):
        data = load_multiview(str(file))
        if sample_id:
            ids = read_id_array(file, sample_id, origin)
    else:
        raise DataError(
            f"{file}: unsupported file type {suffix!r} for a single view (use .npy, .csv, .npz or .mat)"
        )
    if len(data.views) != 1:
        raise DataError(
            f"{file}: holds {len(data.views)} views; a node's data-file must hold exactly one (its own view)"
        )
    if ids is not None and ids.size != data.num_samples:
        raise DataError(f"{file}: {origin}: {ids.size} sample IDs for {data.num_samples} samples")
    return data.views[0], data.labels, ids


def assemble_views(
    raw_views: list[tuple[str, Any]],
    raw_labels: tuple[str, Any] | None,
    name: str,
    source: str,
    orient: bool = True,
    view_names: tuple[str, ...] = (),
) -> MultiViewData:
    """Check and normalise views and labels as read from a file.

    Parameters
    ----------
    raw_views : list of (str, array or sparse matrix)
        Each view with a description of where it was found (for messages), as stored.
    raw_labels : (str, array or list of arrays) or None
        The label key and its contents (a list: a cell of copies).
    name, source : str
        See :class:`MultiViewData`.
    orient : bool
        Decide each view's orientation against the labels (``False``: rows are samples).
    view_names : tuple of str
        The views' own names, one per view, or empty (see :class:`MultiViewData`).

    Returns
    -------
    MultiViewData

    Raises
    ------
    DataError
        On empty views, NaN/inf values, sample counts that do not match, or malformed labels.
    """
    if not raw_views:
        raise DataError(f"{source}: holds no views")
    labels = None if raw_labels is None else _label_vector(raw_labels, source)
    shapes = [_shape(where, v, source) for where, v in raw_views]
    n = _sample_count(shapes, labels, raw_labels, [w for w, _ in raw_views], source, orient)
    views = []
    for (where, raw), shape in zip(raw_views, shapes):
        x = _sparse_view(where, raw, shape[0] == n, source) if scipy.sparse.issparse(raw) else None
        if x is None:
            dense = np.asarray(raw)
            if dense.dtype.kind not in "biuf":
                raise DataError(f"{source}: {where} has non-numeric type {dense.dtype}")
            x = dense.astype(np.float64) if shape[0] == n else dense.T.astype(np.float64)
            _check_finite(where, x, source)
            x = np.ascontiguousarray(x)
            x.setflags(write=False)
        if x.shape[1] == 0:
            raise DataError(f"{source}: {where} is empty (no features)")
        views.append(x)
    if labels is not None:
        labels = np.unique(labels, return_inverse=True)[1].astype(np.int64).reshape(-1)
        labels.setflags(write=False)
    return MultiViewData(views=views, labels=labels, name=name, source=source, view_names=view_names)


# ------------------------------------------------------------------------------------ internals
def _sparse_view(where: str, raw: Any, rows_are_samples: bool, source: str) -> scipy.sparse.csr_matrix:
    """A view stored sparse, kept sparse: float64 CSR, samples x features, read-only values."""
    if raw.dtype.kind not in "biuf":
        raise DataError(f"{source}: {where} has non-numeric type {raw.dtype}")
    x = scipy.sparse.csr_matrix(raw if rows_are_samples else raw.T, dtype=np.float64)
    x.sum_duplicates()
    x.sort_indices()
    bad = ~np.isfinite(x.data)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(x.indptr, first, side="right") - 1)
        raise DataError(
            f"{source}: {where} has {int(bad.sum())} NaN/inf value(s), the first "
            f"at sample {i}, feature {int(x.indices[first])}"
        )
    for part in (x.data, x.indices, x.indptr):
        part.setflags(write=False)
    return x


def _check_finite(where: str, x: np.ndarray, source: str) -> None:
    """Refuse NaN/inf, naming the first one."""
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataError(
            f"{source}: {where} has {int(bad.sum())} NaN/inf value(s), the first at sample {i}, feature {j}"
        )


def _view_index(data: MultiViewData, entry: str) -> int | None:
    """The index of the view ``entry`` names (its name, else a 0-based index), or ``None``."""
    names = data.view_names
    if entry in names:
        return names.index(entry)
    folded = [i for i, n in enumerate(names) if n.lower() == entry.lower()]
    if len(folded) == 1:
        return folded[0]
    if entry.isdigit() and int(entry) < len(data.views):
        return int(entry)
    return None


def _available(data: MultiViewData) -> str:
    indices = f"0-based indices 0..{len(data.views) - 1}"
    if data.view_names:
        return f"its views: {', '.join(data.view_names)}, or {indices}"
    return f"its {len(data.views)} views have no names: use {indices}"


def _existing_file(path: str) -> Path:
    from fedmf_app.data.embedded import EMBEDDED

    file = Path(path).expanduser()
    if not file.is_file():
        raise DataError(
            f"{file}: no such file (a data set is 'synthetic', an embedded name "
            f"({', '.join(sorted(EMBEDDED))}) or the path of a .mat or .npz file)"
        )
    return file


@lru_cache(maxsize=2)
def _load_multiview_cached(path: str, mtime_ns: int, size: int, views: str = "") -> MultiViewData:
    """Read a file once per version and ``views`` (clients are rebuilt for every message)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".mat":
        raw_views, names, raw_labels = read_mat(file, views)
    elif suffix == ".npz":
        raw_views, names, raw_labels = read_npz(file, views)
    else:
        raise DataError(
            f"{file}: unsupported file type {suffix!r} for a multi-view data set (use .mat or .npz)"
        )
    return assemble_views(raw_views, raw_labels, file.stem, str(file), view_names=names)


def _shape(where: str, raw: Any, source: str) -> tuple[int, int]:
    shape = raw.shape if scipy.sparse.issparse(raw) else np.shape(raw)
    if len(shape) != 2:
        raise DataError(f"{source}: {where} must be a 2-D matrix, got shape {tuple(shape)}")
    if 0 in shape:
        raise DataError(f"{source}: {where} is empty (shape {shape[0]}x{shape[1]})")
    return int(shape[0]), int(shape[1])


def _label_vector(raw_labels: tuple[str, Any], source: str) -> np.ndarray:
    key, value = raw_labels
    if isinstance(value, list):
        vectors = [_label_vector((key, v), source) for v in value]
        if not vectors:
            raise DataError(f"{source}: label cell '{key}' is empty")
        if any(v.shape != vectors[0].shape or np.any(v != vectors[0]) for v in vectors[1:]):
            raise DataError(
                f"{source}: label cell '{key}' holds {len(vectors)} label vectors "
                "that differ; expected identical copies"
            )
        return vectors[0]
    if scipy.sparse.issparse(value):
        value = value.toarray()
    labels = np.asarray(value)
    if labels.ndim not in (1, 2) or (labels.ndim == 2 and min(labels.shape) != 1):
        raise DataError(
            f"{source}: labels '{key}' must be a vector (N x 1 or 1 x N), got shape {labels.shape}"
        )
    labels = labels.reshape(-1)
    if labels.size == 0:
        raise DataError(f"{source}: labels '{key}' are empty")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise DataError(f"{source}: labels '{key}' hold NaN/inf values")
    if labels.dtype.kind not in "biufUS":
        raise DataError(f"{source}: labels '{key}' have unsupported type {labels.dtype}")
    return labels


def _sample_count(
    shapes: list[tuple[int, int]],
    labels: np.ndarray | None,
    raw_labels: tuple[str, Any] | None,
    wheres: list[str],
    source: str,
    orient: bool,
) -> int:
    """``n``: the label length, or the sample count the views share; checks every view."""
    if not orient:
        n = shapes[0][0]
    elif labels is not None:
        n = labels.size
    else:
        common = set(shapes[0]).intersection(*map(set, shapes[1:]))
        rows = {s[0] for s in shapes}
        if len(rows) == 1:
            n = rows.pop()
        elif len(common) == 1:
            n = common.pop()
        else:
            detail = ", ".join(f"{w}: {a}x{b}" for w, (a, b) in zip(wheres, shapes))
            raise DataError(
                f"{source}: the views do not share one sample count and there are no "
                f"labels to tell samples from features ({detail})"
            )
    for where, (a, b) in zip(wheres, shapes):
        if n not in (a, b) or (not orient and a != n):
            against = (
                f"the {n} labels under '{raw_labels[0]}'"
                if labels is not None and orient
                else f"the {n} samples of the first view"
            )
            raise DataError(f"{source}: {where} is {a}x{b}: its sample count does not match {against}")
    return n
