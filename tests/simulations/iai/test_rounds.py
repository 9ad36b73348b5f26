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


def _records(*names):
    runs = Path(__file__).resolve().parents[3] / "docs" / "iai" / "runs" / "rounds"
    return [json.loads(line) for name in names for line in (runs / f"{name}.jsonl").open()]


def _scores(record):
    """A record's rounds without their wall times."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in record["rounds"]]


def test_the_committed_records_rebuild_the_published_tables():
    """docs/iai.md's per-round tables are rounds_table of the records in docs/iai/runs/rounds: the
    missing-rate grid, the ablation and the row-l2 runs made with today's defaults (the ablation's
    default runs equal to the grid's, round for round), the steps beside the grid's runs of the same
    seeds (the options each row names)."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "iai.md").read_text()
    main = _records("hw", "noisy_mnist")
    assert {r["dataset"] for r in main} == {"hw", "noisy_mnist"}
    assert all(r["config"]["iai.pseudo-labels"] == "rank-spectral" for r in main)
    assert all(r["config"]["iai.ae-steps"] == 1000 for r in main if r["dataset"] == "noisy_mnist")
    assert rounds_table(main) in doc and "| hw | 0.5 | defaults | 0,1,2,3,4 |" in rounds_table(main)
    steps = _records("steps")
    assert all(r["config"]["iai.ae-steps"] == 1000 for r in steps)
    seeds = {(r["dataset"], r["seed"]) for r in steps}
    same = [r for r in main if r["missing_rate"] == 0.5 and (r["dataset"], r["seed"]) in seeds]
    assert rounds_table(steps + same) in doc
    ablation = _records("noisy_mnist_ablation")
    assert all(r["config"]["iai.ae-steps"] == 1000 for r in ablation)
    assert rounds_table(ablation) in doc
    grid = {(r["missing_rate"], r["seed"]): r for r in main if r["dataset"] == "noisy_mnist"}
    defaults = [r for r in ablation if r["config"] == grid[r["missing_rate"], r["seed"]]["config"]]
    assert len(defaults) == 9 and all(
        _scores(r) == _scores(grid[r["missing_rate"], r["seed"]]) for r in defaults
    )
    row_l2 = _records("noisy_mnist_row_l2")
    assert all(r["config"]["iai.ae-steps"] == 1000 for r in row_l2)
    assert rounds_table(row_l2) in doc
