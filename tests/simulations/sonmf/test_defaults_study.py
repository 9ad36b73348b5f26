"""The defaults study's table on constructed run records, and the published tables from theirs."""

from pathlib import Path

import pytest

from simulations.sonmf.defaults_study import NMF_REFERENCE_ACC, read_records, table
from simulations.spread import SPREAD


def _record(seed, acc, unit_acc):
    scores = {"acc": acc, "nmi": 0.5, "purity": acc, "ari": 0.1}
    return {
        "name": "defaults",
        "set": "Sonar",
        "seed": seed,
        "rank": 2,
        "rounds": 50 + seed,
        "wall_s": 2.0,
        "read": "as-is",
        "default": scores,
        "as-is": scores,
        "unit-norm": {**scores, "acc": unit_acc},
        "hellinger": {**scores, "acc": 0.4},
    }


def test_table_gives_mean_and_std_over_seeds_per_read_beside_the_reference():
    text = table([_record(0, 0.6, 0.5), _record(1, 0.7, 0.5)])
    row = next(line for line in text.splitlines() if line.startswith("| Sonar"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:7] == ["Sonar", "defaults", "2", "2", "50", "2", "as-is"]
    assert cells[7] == "65.0 ± 5.0" and cells[8] == "50.0 ± 0.0"  # the run's own read: ACC, NMI
    assert cells[9] == "65.0 ± 5.0" and cells[10] == "50.0 ± 0.0"  # ACC as-is, ACC unit-norm
    assert cells[11] == "40.0 ± 0.0"  # ACC hellinger
    assert SPREAD in text  # the table names its statistic
    assert cells[-1] == str(NMF_REFERENCE_ACC["Sonar"])


DOCS = Path(__file__).resolve().parents[3] / "docs" / "sonmf"


@pytest.mark.parametrize(
    "folder",
    [
        "defaults_study",
        "defaults_study/before_objective_stop",
        "table1",
        "table1/before_label_stop",
        "table1/before_objective_stop",
    ],
)
def test_the_published_tables_are_what_the_committed_records_give(folder):
    assert (DOCS / folder / "table.md").read_text() == table(read_records(DOCS / folder / "runs.jsonl"))
