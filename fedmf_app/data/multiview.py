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
* One view per file (:func:`load_single_view`: a deployment's node-config ``data-file``, or an
  entry of run config ``dataset`` naming per-view files, :mod:`fedmf_app.data.view_files`):
  ``.npy`` (samples x features, no labels), ``.csv`` (rows are samples; an optional header row,
  and a header column named like a label key holds the labels), ``.npz`` or ``.mat`` with one view
  (an ``.npz`` written by ``scipy.sparse.save_npz`` is one sparse view); optionally with sample IDs
  in a CSV column or under an ``.npz``/``.mat`` key (:mod:`fedmf_app.data.sample_ids`).

Views that have names in the file (numbered keys, struct fields; an embedded data set's view
names) keep them (:attr:`MultiViewData.view_names`), so that run config ``views`` can pick and
order them by name or 0-based index (:func:`select_views`). Everything is returned float64,
samples x features: dense views as read-only arrays, views stored sparse as CSR matrices
(memory proportional to their nonzeros). Problems raise :class:`~fedmf_app.data.DataError` naming
the file, the key or view, and what is wrong.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from fedmf_app.data.assemble import MultiViewData, assemble_views
from fedmf_app.data.embedded import EMBEDDED, load_embedded
from fedmf_app.data.errors import DataError
from fedmf_app.data.readers import LABEL_KEYS, VIEW_KEYS, read_csv, read_mat, read_npz
from fedmf_app.data.sample_ids import id_strings, read_id_array

#: ``setting`` of :func:`load_single_view`: a SuperNode's own file.
DATA_FILE = "node config 'data-file'"
#: ``setting`` of :func:`load_single_view`: an entry of run config ``dataset`` naming per-view files.
VIEW_FILES = "run config 'dataset' (per-view files)"

__all__ = [
    "DATA_FILE",
    "VIEW_FILES",
    "DataError",
    "LABEL_KEYS",
    "MultiViewData",
    "VIEW_KEYS",
    "assemble_views",
    "load_multiview",
    "load_single_view",
    "read_view_file",
    "require_labels",
    "select_views",
]


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
        transposed=tuple(data.transposed[i] for i in chosen) if data.transposed else (),
    )


def load_single_view(
    path: str, sample_id: str = "", origin: str = "", setting: str = DATA_FILE
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
    setting : str
        Which setting named ``path`` (:data:`DATA_FILE`, a node's ``data-file``, or
        :data:`VIEW_FILES`, run config ``dataset``), for the hint of a message.

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
    data, ids = read_view_file(path, sample_id, origin, setting)
    return data.views[0], data.labels, ids


def read_view_file(
    path: str, sample_id: str = "", origin: str = "", setting: str = DATA_FILE
) -> tuple[MultiViewData, np.ndarray | None]:
    """:func:`load_single_view`'s reading, with what was read: the one view as a
    :class:`MultiViewData` (its source, where the view was found, its orientation) and the IDs.

    Parameters
    ----------
    path, sample_id, origin, setting
        As :func:`load_single_view`.

    Returns
    -------
    data : MultiViewData
        Exactly one view.
    ids : ndarray of str, shape (n,), or None

    Raises
    ------
    DataError
        As :func:`load_single_view`.
    """
    file = _existing_file(path, setting)
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
            f"{file}: holds {len(data.views)} views; {setting} names one file per view, so each must "
            "hold exactly one (name the views of a multi-view file with run config 'dataset' alone)"
        )
    if ids is not None and ids.size != data.num_samples:
        raise DataError(f"{file}: {origin}: {ids.size} sample IDs for {data.num_samples} samples")
    return data, ids


# ------------------------------------------------------------------------------------ internals
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


def _existing_file(path: str, setting: str = "run config 'dataset'") -> Path:
    """``path`` as a Path when it is a file; else a DataError whose hint fits the ``setting`` that
    named it (a node's ``data-file``, per-view files of ``dataset``, or ``dataset`` itself)."""
    file = Path(path).expanduser()
    if file.is_file():
        return file
    where = "" if file.is_absolute() else f", relative to {Path.cwd()}"
    if setting == DATA_FILE:
        hint = (
            f"{DATA_FILE} names it; the path is read on the SuperNode's machine{where}: give the "
            "SuperNode an absolute path to its own file"
        )
    elif setting == VIEW_FILES:
        hint = f"{VIEW_FILES} names it{where}: give absolute paths, one file per client"
    else:
        hint = (
            f"run config 'dataset' is 'synthetic', an embedded name ({', '.join(sorted(EMBEDDED))}), "
            f"the path of a .mat or .npz file, or per-view files{where}"
        )
    raise DataError(f"{file}: no such file ({hint})")


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
