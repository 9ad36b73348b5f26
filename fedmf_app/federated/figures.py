"""Writing a run's figure (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["save_figure"]


#: The folders of a path in a title (``/data/x/``, ``C:\\data\\``), which :func:`save_figure` drops.
_FOLDERS = re.compile(r"(?:[A-Za-z]:)?[^\s,=:]*[/\\]")


def save_figure(fig: plt.Figure, path: str | Path, title: str) -> Path:
    """Title ``fig``, lay it out, write it as a PNG and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or Path
        PNG file to write.
    title : str
        The figure's title (the run: algorithm, data, seed); a path in it is shown by its file
        name only (``/data/views/a.csv,/data/views/b.csv`` as ``a.csv,b.csv``).

    Returns
    -------
    Path
        ``path``.
    """
    fig.suptitle(_FOLDERS.sub("", title), fontsize=9)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
