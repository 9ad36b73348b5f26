"""``python -m fedmf_app.options``: print the key table (``--toml``: the pyproject table)."""

import sys

from fedmf_app.options.run_config import markdown_table, pyproject_table

sys.stdout.write((pyproject_table() if "--toml" in sys.argv[1:] else markdown_table()) + "\n")
