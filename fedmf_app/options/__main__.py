"""``python -m fedmf_app.options``: print the key table.

``--toml`` prints the ``pyproject.toml`` table instead; ``--update-docs PAGE`` rewrites the key
table between the ``<!-- options:start -->`` and ``<!-- options:end -->`` lines of PAGE
(``docs/options.md``).
"""

import argparse
import sys
from pathlib import Path

from fedmf_app.options.run_config import markdown_table, pyproject_table

START, END = "<!-- options:start -->\n", "<!-- options:end -->"

parser = argparse.ArgumentParser(prog="python -m fedmf_app.options", description=__doc__.splitlines()[0])
parser.add_argument("--toml", action="store_true", help="print the pyproject.toml table")
parser.add_argument("--update-docs", type=Path, metavar="PAGE", help="rewrite the key table of PAGE")
args = parser.parse_args()
if args.update_docs is not None:
    page = args.update_docs.read_text()
    if START not in page or END not in page:
        sys.exit(f"{args.update_docs}: no '{START.strip()}' ... '{END}' lines to write the table between")
    head, rest = page.split(START, 1)
    args.update_docs.write_text(head + START + markdown_table() + "\n" + END + rest.split(END, 1)[1])
else:
    sys.stdout.write((pyproject_table() if args.toml else markdown_table()) + "\n")
