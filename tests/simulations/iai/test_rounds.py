"""simulations/iai/rounds.py: per-round records without temporary paths, and their table."""

import json

from simulations.iai.rounds import dataset_name, rounds_table, run_rounds

from support.data import IAI_SMALL, iai_labelled_file


def test_a_record_scores_every_round_and_names_the_data_set_not_its_path(tmp_path):
    path = iai_labelled_file(tmp_path)
    record = run_rounds({**IAI_SMALL, "dataset": path, "num-server-rounds": 3})
    assert record["dataset"] == "clustered-iai" and str(tmp_path) not in json.dumps(record)
    assert [r["round"] for r in record["rounds"]] == [1, 2, 3]
    assert all(0 <= r["acc"] <= 1 for r in record["rounds"])
    assert "label_change" in record["rounds"][1] and "loss_structure" in record["rounds"][2]
    assert record["config"]["iai.pseudo-labels"] == "anchor-kmeans" and record["code_version"]
    table = rounds_table([record, {**record, "seed": 5}])
    # IAI_SMALL's own sizes differ from the defaults: they name the group
    assert "| clustered-iai | 0.5 | iai.ae-epochs=3 " in table and " | 2,5 | " in table


def test_dataset_names():
    assert dataset_name("/some/where/noisy_mnist.npz") == "noisy_mnist"
    assert dataset_name("hw") == "hw"
