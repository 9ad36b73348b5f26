"""simulations/iai/bench.py: the published cost tables are what its --table makes of the records."""

from pathlib import Path

from simulations.iai.bench import table
from simulations.spread import SPREAD

DOCS = Path(__file__).resolve().parents[3] / "docs" / "iai"


def test_the_committed_records_rebuild_the_scale_tables_with_the_statistic_named():
    text = table(DOCS / "scale")
    assert text == (DOCS / "scale.md").read_text()
    assert SPREAD in text.splitlines()[0]
