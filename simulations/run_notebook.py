"""Run a page's Python cells as a notebook would, and write the table they make into the page.

Usage::

    python -m simulations.run_notebook docs/estimators.md --also README.md

The ```` ```python ```` blocks of the page run in order in one namespace, exactly as written (so
the page cannot show code that does not run); the last of them leaves the markdown text of its
result in the variable ``table``, which replaces the text between the page's
``<!-- notebook-output:start -->`` and ``<!-- notebook-output:end -->`` lines (of the page, and of
the pages given with ``--also``) and is printed.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["OUTPUT_END", "OUTPUT_START", "python_cells", "run_cells", "write_output"]

OUTPUT_START, OUTPUT_END = "<!-- notebook-output:start -->", "<!-- notebook-output:end -->"
_CELL = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_cells(page: str) -> list[str]:
    """The source of every ```` ```python ```` block of a Markdown page, in order.

    Parameters
    ----------
    page : str

    Returns
    -------
    list of str
    """
    return _CELL.findall(page)


def run_cells(cells: list[str], name: str = "notebook") -> dict[str, Any]:
    """Execute ``cells`` in order in one fresh namespace and return it.

    Parameters
    ----------
    cells : list of str
    name : str
        The namespace's ``__name__`` (functions defined in the cells report it).

    Returns
    -------
    dict
    """
    namespace: dict[str, Any] = {"__name__": name}
    for i, cell in enumerate(cells):
        exec(compile(cell, f"<{name} cell {i + 1}>", "exec"), namespace)  # noqa: S102 (the page's own code)
    return namespace


def write_output(path: Path, text: str) -> None:
    """Replace the text between the page's output markers with ``text``.

    Parameters
    ----------
    path : Path
    text : str

    Raises
    ------
    ValueError
        When the page has no markers.
    """
    page = path.read_text()
    if OUTPUT_START not in page or OUTPUT_END not in page:
        raise ValueError(f"{path}: no '{OUTPUT_START}' ... '{OUTPUT_END}' lines to write the output between")
    head, rest = page.split(OUTPUT_START, 1)
    path.write_text(f"{head}{OUTPUT_START}\n{text}\n{OUTPUT_END}{rest.split(OUTPUT_END, 1)[1]}")


def main(argv: list[str] | None = None) -> None:
    """Command line: run the page's cells, write and print its table."""
    parser = argparse.ArgumentParser(
        prog="python -m simulations.run_notebook", description=__doc__.splitlines()[0]
    )
    parser.add_argument("page", type=Path, help="a Markdown page with python cells and output markers")
    parser.add_argument("--no-write", action="store_true", help="print the table without writing the page")
    parser.add_argument("--also", type=Path, nargs="*", default=[], help="further pages that show the table")
    args = parser.parse_args(argv)
    logging.getLogger("flwr").setLevel(logging.WARNING)
    namespace = run_cells(python_cells(args.page.read_text()), args.page.stem)
    if "table" not in namespace:
        sys.exit(f"{args.page}: its last cell must leave its markdown result in the variable 'table'")
    if not args.no_write:
        for page in (args.page, *args.also):
            write_output(page, namespace["table"])
    sys.stdout.write(namespace["table"] + "\n")


if __name__ == "__main__":
    main()
