"""simulations/iai/rounds.py: per-round records without temporary paths, and their table."""

import json
from pathlib import Path

from simulations.iai.rounds import dataset_name, rounds_table, run_rounds

from support.data import IAI_SMALL, iai_labelled_file


def test_a_record_scores_every_round_and_names_the_data_set_not_its_path(tmp_path):
    path = iai_labelled_file(tmp_path)
    record = run_rounds({**IAI_SMALL, "dataset": path, "num-server-rounds": 3})
    assert record["dataset"] == "clustered-iai" and str(tmp_path) not in json.dumps(record)
    assert [r["round"] for r in record["rounds"]] == [1, 2, 3]
    assert all(0 <= r["acc"] <= 1 for r in record["rounds"])
    assert "label_change" in record["rounds"][1] and "loss_structure" in record["rounds"][2]
    assert record["config"]["iai.pseudo-labels"] == "rank-spectral" and record["code_version"]
    table = rounds_table([record, {**record, "seed": 5}])
    # IAI_SMALL's own sizes differ from the defaults: they name the group
    assert "| clustered-iai | 0.5 | iai.ae-epochs=3 " in table and " | 2,5 | " in table


def test_dataset_names():
    assert dataset_name("/some/where/noisy_mnist.npz") == "noisy_mnist"
    assert dataset_name("hw") == "hw"


def test_the_committed_records_rebuild_the_published_table():
    """docs/iai.md's per-round table is rounds_table of docs/iai/runs/rounds (records of today's
    defaults; options removed since are not shown as changes)."""
    docs = Path(__file__).resolve().parents[3] / "docs"
    runs = docs / "iai" / "runs" / "rounds"
    records = [json.loads(line) for name in ("hw", "noisy_mnist") for line in (runs / f"{name}.jsonl").open()]
    table = rounds_table(records)
    assert table in (docs / "iai.md").read_text()
    assert "| hw | 0.5 | defaults | 0,1,2,3,4 |" in table
    for name in ("pseudo_labels", "graph_update"):
        options = [json.loads(line) for line in (runs / f"{name}.jsonl").open()]
        assert rounds_table(options) in (docs / "iai.md").read_text()
