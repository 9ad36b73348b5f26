"""The app folder as ``flwr run`` packs it, copied without walking the folders it would drop.

Flower 1.42's ``flwr run <folder>`` lists every file under the folder before it applies
``.gitignore`` and its own include and exclude rules: with a virtual environment inside the app
folder (the README's set-up) that is tens of thousands of files and about 4 s of every run.
:func:`stage_app` walks the folder once, skipping the folders that ``.gitignore`` or Flower's
rules exclude as a whole, and copies the files Flower could pack; ``flwr run`` on the copy builds
the same app bundle, byte for byte (a test compares the two).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from flwr.cli.utils import build_pathspec, load_gitignore_patterns
from flwr.common.constant import FAB_CONFIG_FILE, FAB_EXCLUDE_PATTERNS, FAB_INCLUDE_PATTERNS

__all__ = ["stage_app"]

#: Folders never packed that Flower's rules do not name: version control.
_NEVER_PACKED = (".git", ".hg", ".svn")


def stage_app(app_dir: str | Path, into: str | Path) -> Path:
    """Copy the files of ``app_dir`` that Flower could pack into a FAB to ``into``.

    Parameters
    ----------
    app_dir : str or Path
        The app folder (with ``pyproject.toml`` and, optionally, ``.gitignore``).
    into : str or Path
        Destination folder, outside ``app_dir``; replaced if it exists.

    Returns
    -------
    Path
        ``into``, resolved: a folder to pass to ``flwr run``.

    Notes
    -----
    A folder is skipped when ``.gitignore`` ignores it as a whole, when Flower's exclude rules
    cover everything under it (``.venv/``, ``__pycache__/``, ...), when it is a version-control
    folder, or when it is a symbolic link (Flower does not follow those either). Of the other
    files, those with a name Flower packs (``*.py``, ``*.toml``, ``*.md``, ...) are copied, with
    ``pyproject.toml`` and ``.gitignore``; Flower applies its rules to the copy again.
    """
    root = Path(app_dir).resolve()
    out = Path(into).resolve()
    if out == root or root in out.parents:
        raise ValueError(f"stage_app: the copy {out} must be outside the app folder {root}")
    ignored = build_pathspec(load_gitignore_patterns(root / ".gitignore"))
    excluded = build_pathspec(FAB_EXCLUDE_PATTERNS)
    packed = build_pathspec(FAB_INCLUDE_PATTERNS)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root)
        dirnames[:] = [
            d
            for d in dirnames
            if d not in _NEVER_PACKED
            and not (Path(dirpath) / d).is_symlink()
            and not ignored.match_file(f"{(here / d).as_posix()}/")
            and not excluded.match_file(f"{(here / d).as_posix()}/file")
        ]
        for name in filenames:
            rel = (here / name).as_posix()
            top_level = here == Path(".") and name in (FAB_CONFIG_FILE, ".gitignore")
            if (Path(dirpath) / name).is_symlink() or not (top_level or packed.match_file(rel)):
                continue
            (out / here).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(dirpath) / name, out / rel)
    return out
