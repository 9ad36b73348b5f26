"""Per-view files in run config ``dataset`` (a list or a folder, one file per client), read exactly as
a node's ``data-file``; ``python -m fedmf_app.data check``; the one-command federation checking
every node's file before it starts a process; ``num-clients = 0`` resolved without SuperNodes."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io

from fedmf_app.data import DataError, views_to_federate
from fedmf_app.data.check import Preparation, check_dataset
from fedmf_app.data.check import main as check_main
from fedmf_app.data.view_files import absolute_dataset, is_dataset, names_view_files, view_files
from fedmf_app.deployment import federation
from fedmf_app.deployment.superlink import format_config
from fedmf_app.federated.node_count import with_num_clients
from fedmf_app.federated.results import load_result
from fedmf_app.in_process import run_in_process
from fedmf_app.options import ConfigError
from fedmf_app.registry import validate_run_config

from support.data import client_view, view_csv_files
from support.flower import ROOT, flwr_run


@pytest.mark.parametrize(
    "dataset, per_view",
    [
        ("synthetic", False),
        ("hw", False),
        ("/d/all.mat", False),
        ("/d/all.npz", False),
        ("/d/a.csv", True),
        ("/d/a.npy", True),
        ("/d/a.npz,/d/b.mat", True),
        ("/d/views", True),
        ("~/views", True),
    ],
)
def test_the_text_of_dataset_says_whether_it_names_per_view_files(dataset, per_view):
    assert is_dataset(dataset)
    assert names_view_files(dataset) is per_view


@pytest.mark.parametrize("dataset", ["hw2", "/d/a.txt,/d/b.csv", "/d/a.csv,", ""])
def test_a_value_that_is_neither_is_refused_by_the_run_config(dataset):
    assert not is_dataset(dataset)
    with pytest.raises(ConfigError, match="'dataset'"):
        validate_run_config({"dataset": dataset})


def test_a_folder_lists_its_view_files_in_natural_order(tmp_path):
    for name in ("view10.csv", "view2.npy", "view1.mat", "notes.txt", "view3.npz"):
        (tmp_path / name).write_text("")
    assert [f.name for f in view_files(str(tmp_path))] == [
        "view1.mat",
        "view2.npy",
        "view3.npz",
        "view10.csv",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no view file"):
        view_files(str(tmp_path / "empty"))


def test_relative_paths_are_made_absolute_for_the_apps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert absolute_dataset("a.csv,sub/b.npy") == f"{tmp_path / 'a.csv'},{tmp_path / 'sub' / 'b.npy'}"
    assert absolute_dataset("all.mat") == str(tmp_path / "all.mat")
    assert absolute_dataset("hw") == "hw" and absolute_dataset("synthetic") == "synthetic"


def test_each_client_reads_its_file_of_the_list_as_its_node_would_read_its_data_file(tmp_path):
    paths, y = view_csv_files(tmp_path / "views")
    for dataset in (",".join(map(str, paths)), str(tmp_path / "views")):
        cfg = validate_run_config({"dataset": dataset, "num-clients": 3})
        as_node = validate_run_config({"num-clients": 3})
        for p, path in enumerate(paths):
            view = client_view(cfg, p)
            node = client_view(as_node, p, {"data-file": str(path)})
            np.testing.assert_array_equal(view.features, node.features)
            np.testing.assert_array_equal(view.labels, y)
            assert str(path) in view.source


def test_a_list_and_a_data_file_per_node_give_the_same_run(tmp_path):
    paths, _ = view_csv_files(tmp_path / "views")
    base = {"algorithm": "fmvc-imk", "num-server-rounds": 3, "imk.tol": 0.0}
    listed = run_in_process({**base, "dataset": str(tmp_path / "views")}, tmp_path, "listed")
    noded = run_in_process(
        {**base, "num-clients": 3}, tmp_path, "noded", node_config=lambda p: {"data-file": str(paths[p])}
    )
    assert listed.cfg["num-clients"] == 3  # num-clients = 0: one client per file
    assert listed.recorder.data["final"]["labels"] == noded.recorder.data["final"]["labels"]
    assert listed.recorder.data["final"]["acc"] > 0.9


def test_counts_and_views_that_do_not_fit_per_view_files_are_refused(tmp_path):
    paths, _ = view_csv_files(tmp_path / "views")
    dataset = ",".join(map(str, paths))
    with pytest.raises(DataError, match="names 3 per-view files but num-clients = 2: .*set num-clients = 3"):
        client_view(validate_run_config({"dataset": dataset, "num-clients": 2}), 0)
    with pytest.raises(ConfigError, match="'views' = '0,1' is invalid with per-view files"):
        validate_run_config({"dataset": dataset, "views": "0,1"})


def test_a_missing_file_hint_names_the_setting_that_named_it(tmp_path):
    missing = tmp_path / "org2.csv"
    cfg = validate_run_config({"num-clients": 2})
    with pytest.raises(DataError) as node:
        client_view(cfg, 1, {"data-file": str(missing)})
    assert str(node.value).startswith(f"{missing}: no such file (node config 'data-file' names it")
    assert "dataset" not in str(node.value)
    listed = validate_run_config({"dataset": f"{tmp_path / 'org1.csv'},{missing}", "num-clients": 2})
    with pytest.raises(DataError, match=r"no such file \(run config 'dataset' \(per-view files\) names it"):
        client_view(listed, 1)


def test_num_clients_zero_is_the_data_sets_view_count_without_supernodes(tmp_path):
    paths, _ = view_csv_files(tmp_path / "views")
    assert views_to_federate(validate_run_config({"dataset": "hw"})) == 6
    assert views_to_federate(validate_run_config({"dataset": str(tmp_path / "views")})) == 3
    assert views_to_federate(validate_run_config({})) == 10  # synthetic: paper A's m
    assert views_to_federate(validate_run_config({"dataset": "hw", "num-clients": 4})) == 4
    with pytest.raises(DataError, match="cannot read run config 'dataset'"):
        views_to_federate(validate_run_config({"dataset": str(tmp_path / "elsewhere.mat")}))


def test_a_clientapp_takes_num_clients_zero_from_its_node_config():
    assert with_num_clients({"num-clients": 0}, {"num-partitions": 4})["num-clients"] == 4
    assert with_num_clients({"num-clients": 3}, {"num-partitions": 4})["num-clients"] == 3
    with pytest.raises(DataError, match="node config has no 'num-partitions'"):
        with_num_clients({"num-clients": 0}, {"partition-id": 0})


# ----------------------------------------------------------------------------- data check
def test_check_describes_every_file_and_the_files_together(tmp_path, capsys):
    paths, _ = view_csv_files(tmp_path / "views", n=90, dims=(8, 12, 6))
    assert check_main(["check", str(tmp_path / "views")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and not any(line.startswith("ERROR") for line in out)
    for p, (line, d) in enumerate(zip(out, (8, 12, 6))):
        assert line.startswith(f"{paths[p]} (client {p}): 90 samples x {d} features (rows are samples)")
        assert "labels: 3 classes" in line
    assert out[3].startswith("together: 3 files, one per client (num-clients = 3), 90 samples each")


def test_check_flags_a_corrupt_file_in_one_line_and_exits_non_zero(tmp_path, capsys):
    paths, _ = view_csv_files(tmp_path / "views")
    paths[1].write_text("1.0,2.0\n3.0,4.0,5.0\n")
    assert check_main(["check", *map(str, paths)]) == 1
    errors = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ERROR")]
    assert errors == [f"ERROR {paths[1]}: rows have different numbers of columns ([2, 3])"]


def test_check_reports_a_view_stored_features_by_samples_and_a_sample_count_mismatch(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(
        tmp_path / "two.mat", {"X1": rng.random((5, 30)), "X2": rng.random((30, 4)), "Y": np.arange(30) % 3}
    )
    report = check_dataset(str(tmp_path / "two.mat"))
    assert report.ok and report.lines[0].endswith(
        "2 views (client p takes view p); labels: 3 classes, 10 to 10 samples each"
    )
    assert "30 samples x 5 features (stored features x samples, turned)" in report.lines[1]
    assert "30 samples x 4 features (rows are samples)" in report.lines[2]
    np.save(tmp_path / "a.npy", rng.random((30, 3)))
    np.save(tmp_path / "b.npy", rng.random((29, 3)))
    report = check_dataset(f"{tmp_path / 'a.npy'},{tmp_path / 'b.npy'}")
    assert not report.ok and "different numbers of samples" in report.errors[0]


def test_check_applies_the_preparation_a_run_would(tmp_path):
    np.save(tmp_path / "neg.npy", np.arange(20.0).reshape(10, 2) - 1)
    report = check_dataset(str(tmp_path / "neg.npy"))
    assert report.ok and "negative values (minimum -1) made nonnegative (min-max)" in report.lines[0]
    refused = check_dataset(str(tmp_path / "neg.npy"), prep=Preparation(negative_values="error"))
    assert "has negative values (minimum -1)" in refused.errors[0]
    np.save(tmp_path / "constant.npy", -np.ones((10, 2)))  # min-max makes it all zeros
    assert "all zeros" in check_dataset(str(tmp_path / "constant.npy")).errors[0]


# -------------------------------------------------------------------- federation pre-check
def test_the_federation_command_checks_every_nodes_file_before_starting_anything(
    tmp_path, caplog, monkeypatch
):
    started = []
    monkeypatch.setattr(federation.LocalFederation, "start", lambda self: started.append(self))
    paths, _ = view_csv_files(tmp_path / "views")
    paths[2].write_text("1.0,2.0\n3.0,oops\n")
    argv = [a for p in paths for a in ("--data-file", str(p))]
    assert federation.main(argv) == 2
    assert not started
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1
    assert f"{paths[2]}: holds a non-numeric feature value" in errors[0]
    assert errors[0].endswith("(SuperNode 2, its --data-file); no process was started")


def test_the_federation_command_takes_its_size_from_the_files_or_the_data_set(tmp_path):
    paths, _ = view_csv_files(tmp_path / "views")
    assert federation.federation_size(None, list(map(str, paths)), {}) == 3
    assert federation.federation_size(None, None, {"dataset": "hw"}) == 6
    assert federation.federation_size(None, None, {"dataset": str(tmp_path / "views")}) == 3
    assert federation.federation_size(4, None, {}) == 4
    with pytest.raises(ValueError, match="how many SuperNodes"):
        federation.federation_size(None, None, {})


# ------------------------------------------------------------------------------------ e2e
@pytest.mark.e2e
def test_the_same_csv_files_give_the_same_labels_under_flwr_run_hydra_and_the_federation(tmp_path, superlink):
    paths, y = view_csv_files(tmp_path / "views")
    folder = tmp_path / "views"
    base = {"num-server-rounds": 2, "num-clusters": 3, "secure-aggregation": False}
    base["sonmf.basis-kernel"] = "numpy"  # what the federation command sets
    # flwr run on the simulation engine: the folder in run config dataset, num-clients from it
    flwr = flwr_run(superlink, tmp_path, {**base, "dataset": str(folder)}, num_supernodes=3).completed()
    # the hydra runner: the same folder by a relative path (the job hands the apps the absolute one)
    job = tmp_path / "hydra"
    relative = os.path.relpath(folder, ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "simulations.run", f"run.dataset={relative}", f"hydra.run.dir={job}"]
        + [f"run.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in base.items()],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    hydra = load_result(job)
    # the one-command federation: one --data-file per SuperNode, no node count given
    overrides = format_config({**base, "out-dir": str(tmp_path / "fed"), "run-name": "run"})
    argv = [a for p in paths for a in ("--data-file", str(p))]
    argv += [
        "--permissive-nodes",
        "--app-dir",
        str(ROOT),
        "--workdir",
        str(tmp_path / "w"),
        "--run-config",
        overrides,
    ]
    assert federation.main(argv) == 0
    deployed = load_result(tmp_path / "fed" / "run")
    for result in (flwr, hydra, deployed):
        assert result["status"] == "completed" and result["config"]["num-clients"] == 3
        assert result["config"]["dataset"] in (str(folder), ",".join(map(str, paths)))
        assert [c["partition-id"] for c in result["clients"]] == [0, 1, 2]
    assert flwr["final"]["labels"] == hydra["final"]["labels"] == deployed["final"]["labels"]
    assert flwr["final"]["acc"] > 0.5
