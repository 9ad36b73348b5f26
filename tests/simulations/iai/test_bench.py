"""simulations/iai/bench.py: the published cost tables are what its --table makes of the records."""

import json
from pathlib import Path

from simulations.iai.bench import table
from simulations.spread import SPREAD

from support.data import IAI_SMALL

DOCS = Path(__file__).resolve().parents[3] / "docs" / "iai"


def test_the_committed_records_rebuild_the_scale_tables():
    assert table(DOCS / "scale") == (DOCS / "scale.md").read_text()


def test_the_quality_table_names_its_statistic(tmp_path):
    summary = {"views": 3, "train_round_client_s_mean": 1.0, "peak_rss_mb": 512.0}
    for seed, acc in ((0, 0.8), (1, 0.9)):
        record = {
            "config": {**IAI_SMALL, "dataset": "hw", "seed": seed},
            "summary": summary,
            "final": {"acc": acc, "nmi": acc, "ari": acc},
        }
        (tmp_path / f"s{seed}.json").write_text(json.dumps(record))
    caption, blank, head, rule, row = table(tmp_path).splitlines()
    assert SPREAD in caption and row.startswith("| hw | 0,1 | 0.850 ± 0.050 |")
