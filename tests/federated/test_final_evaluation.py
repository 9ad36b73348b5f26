"""End-of-run clustering: labels from the algorithm, ground truth from the clients, only to score.

The ground truth comes with the clients' first replies (fmvc-imk's set-up, the other families'
round 1), so a run without a sample-ID alignment ends with its last round: no end-of-run exchange."""

import json

import numpy as np
import pytest
import scipy.io

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data import DataError
from fedmf_app.federated.client import ViewClient
from fedmf_app.federated.strategy import FederationError
from fedmf_app.methods.sonmf.params import resolve_cluster_columns, resolve_rank, sonmf_options
from fedmf_app.registry import validate_run_config

from support.data import IAI_SMALL, client_view, iai_labelled_file
from support.federation import federation, run_federation

N_PER_CLASS, K = 10, 3


def _separable_views(tmp_path):
    """Three nonnegative views whose samples form K well-separated groups, labels 1-based."""
    rng = np.random.default_rng(3)
    truth = np.repeat(np.arange(K), N_PER_CLASS)
    views = []
    for d in (6, 5, 4):
        centres = 5.0 * np.eye(K, d) + 0.1
        views.append(centres[truth] + 0.05 * rng.random((truth.size, d)))
    cell = np.empty((1, 3), dtype=object)
    for i, v in enumerate(views):
        cell[0, i] = v.T if i == 1 else v  # one view stored d x N
    scipy.io.savemat(tmp_path / "toy.mat", {"X": cell, "Y": (truth + 1)[:, None]})
    return str(tmp_path / "toy.mat"), truth


def _cfg(path, **overrides):
    return validate_run_config(
        {"dataset": path, "num-clients": 3, "sonmf.rank": K, "num-server-rounds": 3, "seed": 2, **overrides}
    )


def test_final_labels_are_scored_against_the_clients_ground_truth(tmp_path):
    path, truth = _separable_views(tmp_path)
    strategy, _ = run_federation(tmp_path, _cfg(path))
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed"
    final = result["final"]
    assert len(final["labels"]) == truth.size and final["num_clusters"] == K
    assert strategy.num_clusters == K
    # paper A's protocol: seeded k-means on V^T, scored against the 1-based labels remapped to 0..k-1
    expected = kmeans_labels(strategy.v.T, K, rng_for(2, Stream.FINAL_CLUSTERING))
    np.testing.assert_array_equal(final["labels"], expected)
    scores = clustering_scores(truth, expected)
    assert {k: final[k] for k in scores} == pytest.approx(scores)
    assert [c["num-classes"] for c in result["clients"]] == [K, K, K]


def _labelled_config(tmp_path, algorithm):
    """A short labelled run of ``algorithm`` (fedsonmf: the toy views; fmvc-iai: its small set)."""
    if algorithm == "fmvc-iai":
        return validate_run_config(
            {**IAI_SMALL, "dataset": iai_labelled_file(tmp_path), "out-dir": str(tmp_path)}
        )
    path, _ = _separable_views(tmp_path)
    return _cfg(path)


@pytest.mark.parametrize("algorithm", ["fedsonmf", "fmvc-iai"])
def test_the_ground_truth_comes_in_round_1_and_the_run_ends_without_another_exchange(
    tmp_path, monkeypatch, algorithm
):
    cfg = _labelled_config(tmp_path, algorithm)
    sent = {}
    evaluated = []
    record = ViewClient.round_record

    def spy(self, server_round):
        out = record(self, server_round)
        sent.setdefault(server_round, []).append(sorted(out))
        return out

    monkeypatch.setattr(ViewClient, "round_record", spy)
    monkeypatch.setattr(ViewClient, "evaluate", lambda self, *args: evaluated.append(self.partition_id))
    strategy, _ = run_federation(tmp_path, cfg)
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed" and evaluated == []
    # every client sends its labels in round 1 only, and its peak memory every round
    m, rounds = cfg["num-clients"], cfg["num-server-rounds"]
    later = {t: [["peak_rss_mb"]] * m for t in range(2, rounds + 1)}
    assert sent == {1: [["labels", "peak_rss_mb"]] * m, **later}
    truth = client_view(cfg, 0).labels
    partition, held = strategy.held_truth()
    assert partition == 0 and np.array_equal(held, truth)
    final = result["final"]
    scores = clustering_scores(truth, np.asarray(final["labels"]))
    assert final["ground_truth_partition"] == 0 and {k: final[k] for k in scores} == pytest.approx(scores)
    if algorithm == "fmvc-iai":  # each round's clustering, scored after the last
        assert all("acc" in r for r in result["rounds"])
    assert result["summary"]["peak_rss_mb_client_max"] > 0


def test_a_partition_whose_ground_truth_differs_is_named(tmp_path, caplog):
    path, truth = _separable_views(tmp_path)
    other = {"data-file": str(tmp_path / "other.npz")}
    np.savez(tmp_path / "other.npz", X=np.ones((truth.size, 4)) + np.eye(truth.size, 4), y=truth[::-1])
    run_federation(tmp_path, _cfg(path), node_configs={1: other})
    assert "partitions [1] hold ground truth that differs from partition 0's" in caplog.text
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["final"]["ground_truth_partition"] == 0


def test_without_ground_truth_the_run_keeps_only_labels(tmp_path):
    strategy, _ = run_federation(
        tmp_path, validate_run_config({"num-clients": 2, "num-samples": 30, "num-server-rounds": 2})
    )
    final = json.loads((tmp_path / "run" / "result.json").read_text())["final"]
    assert len(final["labels"]) == 30 and final["num_clusters"] <= 6
    assert "acc" not in final


def test_a_node_data_file_replaces_the_run_dataset(tmp_path):
    path, truth = _separable_views(tmp_path)
    np.save(tmp_path / "own.npy", np.ones((truth.size, 4)) + np.eye(truth.size, 4))
    run_federation(tmp_path, _cfg(path), node_configs={2: {"data-file": str(tmp_path / "own.npy")}})
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert "own.npy" in result["clients"][2]["source"] and result["clients"][2]["num-classes"] == 0
    assert result["final"]["ground_truth_partition"] == 0


def test_client_count_must_match_the_views_before_round_one(tmp_path):
    path, _ = _separable_views(tmp_path)
    with pytest.raises(DataError, match="toy.mat has 3 views but run config num-clients = 2"):
        federation(tmp_path, _cfg(path, **{"num-clients": 2}))
    fed = federation(tmp_path, _cfg(path))
    strategy, manager = fed.strategy, fed.server.client_manager()
    strategy.cfg = {**strategy.cfg, "num-clients": 4}
    with pytest.raises(FederationError, match="has 3 views but the run needs 4 clients"):
        strategy.initialize_parameters(client_manager=manager)
    assert not (tmp_path / "run").exists()


def test_auto_rank_is_components_per_cluster_capped_by_the_views(tmp_path):
    path, _ = _separable_views(tmp_path)
    auto = validate_run_config({"dataset": path, "num-clients": 3})
    assert auto["sonmf.rank-per-cluster"] == 3
    auto = {**auto, "sonmf.rank-per-cluster": 2}
    one = {**auto, "sonmf.rank-per-cluster": 1}
    assert resolve_rank(sonmf_options(auto), 2, [6, 5, 9]) == 4
    assert resolve_rank(sonmf_options(auto), 3, [6, 5, 4]) == 6  # 2 x 3: narrower views get empty columns
    assert resolve_rank(sonmf_options(auto), 4, [6, 5, 4]) == 6  # capped by the largest view
    assert resolve_rank(sonmf_options(one), 3, [6, 5, 4]) == 3
    assert resolve_rank(sonmf_options(auto), None, [50, 40]) == 6
    assert resolve_rank(sonmf_options({**auto, "sonmf.rank": 2}), 10, [6, 5]) == 2
    assert (
        resolve_rank(sonmf_options(validate_run_config({"view-dim": 8})), None, [8]) == 6
    )  # synthetic: paper's r
    strategy, _ = run_federation(tmp_path, _cfg(path, **{"sonmf.rank": 0, "sonmf.rank-per-cluster": 1}))
    assert strategy.rank == 3 and strategy.v.shape == (3, 3 * N_PER_CLASS)
    assert json.loads((tmp_path / "run" / "result.json").read_text())["summary"]["rank"] == 3


def test_auto_read_is_the_proportions_one_only_when_every_view_looks_like_counts(tmp_path):
    path, _ = _separable_views(tmp_path)
    auto = validate_run_config({"dataset": path, "num-clients": 3})
    assert resolve_cluster_columns(sonmf_options(auto), [True, True]) == "hellinger"
    assert resolve_cluster_columns(sonmf_options(auto), [True, False]) == "as-is"
    for rule in ("as-is", "unit-norm", "hellinger"):
        assert (
            resolve_cluster_columns(sonmf_options({**auto, "sonmf.cluster-columns": rule}), [True, False])
            == rule
        )
    strategy, _ = run_federation(tmp_path, _cfg(path))  # dense views: the clients say so
    assert strategy.cluster_read == "as-is"
    assert json.loads((tmp_path / "run" / "result.json").read_text())["summary"]["cluster_columns"] == "as-is"
