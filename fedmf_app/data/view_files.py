"""Per-view files: run config ``dataset`` naming one file per client.

Besides ``synthetic``, an embedded name and one multi-view ``.mat``/``.npz`` file, ``dataset`` may
name the organisations' own files, one view each, exactly what a deployment's node config
``data-file`` names on each SuperNode:

* a comma-separated list of files (``"/data/a.csv,/data/b.npy,/data/c.npz"``): client ``p`` takes
  the ``p``-th;
* one ``.csv`` or ``.npy`` file (a single view);
* a folder: its ``.csv``, ``.npy``, ``.npz`` and ``.mat`` files in natural order of their names
  (``view2`` before ``view10``), client ``p`` taking the ``p``-th.

Each file is read as a node's ``data-file`` is (:func:`fedmf_app.data.multiview.load_single_view`):
one view, samples x features, optional labels and sample IDs. The functions here decide from the
text alone whether ``dataset`` names per-view files (:func:`names_view_files`, so that the run
config can be checked on a machine that does not hold the files) and list them
(:func:`view_files`).
"""

from __future__ import annotations

import re
from pathlib import Path

from fedmf_app.data.embedded import EMBEDDED
from fedmf_app.data.errors import DataError

__all__ = [
    "MULTIVIEW_SUFFIXES",
    "VIEW_FILE_SUFFIXES",
    "absolute_dataset",
    "is_dataset",
    "names_view_files",
    "view_file_count",
    "view_files",
]

#: Suffixes of a file that holds one view (a node's ``data-file``, an entry of a per-view list).
VIEW_FILE_SUFFIXES: tuple[str, ...] = (".csv", ".npy", ".npz", ".mat")
#: Suffixes of a multi-view file named alone in ``dataset``.
MULTIVIEW_SUFFIXES: tuple[str, ...] = (".mat", ".npz")


def _entries(dataset: str) -> list[str]:
    return [e.strip() for e in dataset.split(",")]


def _looks_like_folder(entry: str) -> bool:
    """A path without a view-file suffix that is written as a path (or exists as a folder)."""
    if Path(entry).suffix.lower() in VIEW_FILE_SUFFIXES:
        return False
    return "/" in entry or "\\" in entry or entry.startswith("~") or Path(entry).expanduser().is_dir()


def names_view_files(dataset: str) -> bool:
    """Whether run config ``dataset`` names per-view files (a list, a ``.csv``/``.npy`` file or a
    folder) rather than synthetic data, an embedded set or one multi-view file.

    Parameters
    ----------
    dataset : str

    Returns
    -------
    bool
    """
    entries = _entries(dataset)
    if len(entries) > 1:
        return True
    entry = entries[0]
    if entry == "synthetic" or entry in EMBEDDED:
        return False
    suffix = Path(entry).suffix.lower()
    return suffix in (".csv", ".npy") or (suffix not in MULTIVIEW_SUFFIXES and _looks_like_folder(entry))


def is_dataset(dataset: str) -> bool:
    """Whether ``dataset`` is a value run config ``dataset`` accepts (checked on the text alone).

    Parameters
    ----------
    dataset : str

    Returns
    -------
    bool
        ``synthetic``, an embedded name, a ``.mat``/``.npz`` path, a list of view files (every
        entry a nonempty path ending in ``.csv``, ``.npy``, ``.npz`` or ``.mat``), one ``.csv`` or
        ``.npy`` path, or a folder path.
    """
    entries = _entries(dataset)
    if len(entries) > 1:
        return all(e and Path(e).suffix.lower() in VIEW_FILE_SUFFIXES for e in entries)
    entry = entries[0]
    return (
        entry == "synthetic"
        or entry in EMBEDDED
        or Path(entry).suffix.lower() in VIEW_FILE_SUFFIXES
        or (bool(entry) and _looks_like_folder(entry))
    )


def _folder(dataset: str) -> Path | None:
    """The folder ``dataset`` names, or ``None`` when it lists files."""
    entries = _entries(dataset)
    return Path(entries[0]).expanduser() if len(entries) == 1 and _looks_like_folder(entries[0]) else None


def _natural_key(path: Path) -> list[object]:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


def view_files(dataset: str) -> list[Path]:
    """The per-view files ``dataset`` names, in client order.

    Parameters
    ----------
    dataset : str
        Run config ``dataset`` for which :func:`names_view_files` is true.

    Returns
    -------
    list of Path
        ``~`` expanded; a relative path stays relative (to the working folder of whoever reads it).

    Raises
    ------
    DataError
        When a folder does not exist or holds no view file.
    """
    folder = _folder(dataset)
    if folder is None:
        return [Path(e).expanduser() for e in _entries(dataset)]
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (run config 'dataset' names a folder of per-view files)")
    files = sorted(
        (f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in VIEW_FILE_SUFFIXES),
        key=_natural_key,
    )
    if not files:
        raise DataError(
            f"{folder}: holds no view file (run config 'dataset' names a folder of per-view files: "
            f"{', '.join(VIEW_FILE_SUFFIXES)}, one per client)"
        )
    return files


def view_file_count(dataset: str) -> int | None:
    """How many per-view files ``dataset`` names, when that is known on this machine.

    Parameters
    ----------
    dataset : str
        Run config ``dataset`` for which :func:`names_view_files` is true.

    Returns
    -------
    int or None
        The list's length; a folder's file count when this machine has the folder, else ``None``.
    """
    folder = _folder(dataset)
    if folder is None:
        return len(_entries(dataset))
    return len(view_files(dataset)) if folder.is_dir() else None


def absolute_dataset(dataset: str) -> str:
    """``dataset`` with every path in it made absolute (from this process's working folder).

    The apps do not run in the folder a command was started from, so a command that takes a
    relative path hands them the absolute one.

    Parameters
    ----------
    dataset : str
        Run config ``dataset``.

    Returns
    -------
    str
        ``synthetic`` and embedded names unchanged; each path of a per-view list, a folder or a
        multi-view file resolved.
    """
    if names_view_files(dataset):
        return ",".join(str(Path(e).expanduser().resolve()) for e in _entries(dataset))
    if Path(dataset).suffix.lower() in MULTIVIEW_SUFFIXES:
        return str(Path(dataset).expanduser().resolve())
    return dataset
