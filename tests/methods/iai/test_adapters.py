"""FMVC-IAI Flower adapters, driven in process (no Ray): messages, client state, a whole run."""

from dataclasses import replace

import numpy as np
import pytest

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.federated.node_errors import NodeError
from fedmf_app.federated.results import load_result
from fedmf_app.methods.iai.client_updates import client_round, client_seed, client_setup
from fedmf_app.methods.iai.params import iai_params
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.registry import client_class, validate_run_config

from support.data import IAI_SMALL as SMALL
from support.data import client_view, iai_labelled_file
from support.federation import federation, node_context, round_config, run_federation


def _client(cfg, p, context=None):
    context = context or node_context(cfg, p, cfg["num-clients"])
    return client_class("fmvc-iai")(context, cfg, p, cfg["num-clients"], client_view(cfg, p)), context


def test_only_the_spec_arrays_travel(tmp_path):
    cfg = validate_run_config({**SMALL, "out-dir": str(tmp_path)})
    strategy, broadcasts = run_federation(tmp_path, cfg)
    n, k, r = 120, 3, 30
    assert broadcasts[0] == []
    for arrays in broadcasts[1:]:
        neighbours, labels, target, anchors = arrays
        assert neighbours.shape == (n, 5) and neighbours.dtype == np.int32
        assert labels.shape == (n,) and labels.dtype == np.int64 and labels.max() < k
        assert anchors.shape == (r,) and np.unique(anchors).size == r
        assert target.shape in ((0, k), (n, k))
    # P exists from the first training round on, rows sum to one
    assert broadcasts[1][2].shape == (0, k)
    np.testing.assert_allclose(broadcasts[-1][2].sum(axis=1), 1.0)
    rounds = strategy.recorder.data["rounds"]
    assert [r["phase"] for r in rounds] == ["setup", "train", "train", "train"]
    assert rounds[1]["emd"] is None and len(rounds[2]["emd"]) == 3
    np.testing.assert_allclose(sum(rounds[2]["weights"]), 1.0)
    np.testing.assert_array_equal(strategy.final_labels(), broadcasts[-1][1])


@pytest.mark.parametrize(
    "options",
    [{}, {"iai.subgraph-nodes": 50}],
    ids=["whole-graph", "sampled-subgraphs"],
)
def test_a_flower_run_gives_the_in_process_reference_numbers(tmp_path, options):
    cfg = validate_run_config({**SMALL, **options, "out-dir": str(tmp_path)})
    strategy, broadcasts = run_federation(tmp_path, cfg)
    m, n = cfg["num-clients"], 120
    views = [client_view(cfg, p).features for p in range(m)]
    mask = missing_view_mask(n, m, cfg["missing-rate"], cfg["seed"], cfg["missing-views-dropped"])
    k = strategy.num_clusters
    reference = IAIReference(views, iai_params(cfg, k, num_samples=n), k, cfg["seed"], observed=mask)
    states = []
    for _ in range(cfg["num-server-rounds"]):
        reference.round()
        states.append(reference.state)
    for state, (neighbours, labels, target, anchors) in zip(states, broadcasts[1:]):
        np.testing.assert_array_equal(neighbours, state.neighbours)
        np.testing.assert_array_equal(labels, state.labels)
        np.testing.assert_array_equal(anchors, state.anchors)
        np.testing.assert_array_equal(target, np.zeros((0, 3)) if state.target is None else state.target)
    np.testing.assert_array_equal(strategy.recorder.data["rounds"][-1]["weights"], reference.weights)


def _labelled_run_config(tmp_path):
    return validate_run_config({**SMALL, "dataset": iai_labelled_file(tmp_path), "out-dir": str(tmp_path)})


def test_every_round_is_scored_against_the_ground_truth_when_the_run_ends(tmp_path):
    cfg = _labelled_run_config(tmp_path)
    strategy, broadcasts = run_federation(tmp_path, cfg)
    truth = client_view(cfg, 0).labels
    rounds = load_result(strategy.recorder.path)["rounds"]
    assert len(rounds) == cfg["num-server-rounds"]
    # round s's record scores the Y broadcast after round s (Y⁰ after the set-up round)
    for record, arrays in zip(rounds, broadcasts[1:]):
        expected = clustering_scores(truth, arrays[1])
        assert {key: record[key] for key in expected} == expected
    assert strategy.recorder.data["final"]["acc"] == rounds[-1]["acc"]
    assert (strategy.recorder.run_dir / "convergence.png").stat().st_size > 0
    assert strategy.recorder.data["summary"]["plots"] == ["convergence.png"]


def test_a_run_stops_once_its_labels_settle_and_asks_no_client_further(tmp_path):
    loose = {"iai.stop-label-change": 1.0, "iai.stop-patience": 2}
    cfg = validate_run_config({**SMALL, **loose, "num-server-rounds": 5, "out-dir": str(tmp_path / "a")})
    strategy, broadcasts = run_federation(tmp_path / "a", cfg)
    result = load_result(strategy.recorder.path)
    # two training rounds (2 and 3) with a change <= 1: the run ends after round 3 of 5
    assert [r["round"] for r in result["rounds"]] == [1, 2, 3] and len(broadcasts) == 4
    assert result["summary"]["stopped_early"]["round"] == 3
    assert "iai.stop-label-change" in result["summary"]["stopped_early"]["reason"]
    assert result["summary"]["training_rounds"] == 2
    np.testing.assert_array_equal(strategy.final_labels(), broadcasts[-1][1])
    # off (0): every round runs, whatever the labels do
    off = {**loose, "iai.stop-label-change": 0.0, "num-server-rounds": 5}
    cfg = validate_run_config({**SMALL, **off, "out-dir": str(tmp_path / "b")})
    strategy, _ = run_federation(tmp_path / "b", cfg)
    result = load_result(strategy.recorder.path)
    assert len(result["rounds"]) == 5 and "stopped_early" not in result["summary"]
    assert result["summary"]["training_rounds"] == 4


def test_without_ground_truth_no_round_is_scored(tmp_path):
    cfg = _labelled_run_config(tmp_path)
    fed = federation(tmp_path, cfg)
    for client in fed.clients:
        client.view = replace(client.view, labels=None)
    strategy = fed.run()
    assert strategy.done and len(strategy.label_history) == cfg["num-server-rounds"]
    rounds = load_result(strategy.recorder.path)["rounds"]
    assert not any("acc" in r for r in rounds)
    assert (strategy.recorder.run_dir / "convergence.png").stat().st_size > 0


def test_uploads_are_the_spec_arrays_and_the_client_sees_only_observed_rows():
    cfg = validate_run_config(SMALL)
    client, _ = _client(cfg, 1)
    observed = missing_view_mask(120, 3, 0.5, 2)[:, 1]
    np.testing.assert_array_equal(client.observed, observed)
    assert client.get_properties({"stage": "handshake"})["num-observed"] == observed.sum()
    (knn,), count, _ = client.fit([], round_config(1, clusters=3) | {"stage": "setup"})
    # the rank-fused start graph takes lists of depth L = 5k, the neighbours nearest first
    depth = iai_params(cfg, 3, num_samples=120).list_depth
    assert depth == 25 and knn.shape == (120, depth) and knn.dtype == np.int32 and count == observed.sum()
    assert np.all(knn[~observed] == -1) and np.all(observed[knn[observed]])


def test_model_state_survives_across_rounds_in_context_state():
    cfg = validate_run_config(SMALL)
    params = iai_params(cfg, 3, num_samples=120)
    n, k = 120, 3
    rng = np.random.default_rng(0)
    neighbours = np.stack([rng.choice(n, 5, replace=False) for _ in range(n)]).astype(np.int32)
    labels = rng.integers(0, k, n)
    target = rng.dirichlet(np.ones(k), size=n)
    anchors = np.sort(rng.choice(n, 30, replace=False))
    down = [neighbours, labels, target, anchors]

    # the client: a new object for every message, one Context kept by the SuperNode
    client, context = _client(cfg, 0)
    client.fit([], round_config(1, clusters=3) | {"stage": "setup"})
    _client(cfg, 0, context)[0].fit(down, round_config(2, clusters=3))
    up3, _, _ = _client(cfg, 0, context)[0].fit(down, round_config(3, clusters=3))
    stored = context.state.array_records["fmvc-iai.arrays"]
    assert any(key.startswith("ae.") for key in stored) and any(key.startswith("gae.") for key in stored)
    assert params.keeps_setup_lists and "setup-lists" in stored  # not searched again in a round

    # the same rounds with the state passed along by hand, and round 3 from scratch
    view = client_view(cfg, 0).features
    seed = client_seed(cfg["seed"], 0)
    _, ae = client_setup(view, client.observed, params, seed)
    two = client_round(view, client.observed, ae, None, neighbours, labels, target, anchors, params, seed + 2)
    three = client_round(
        view, client.observed, ae, two.gae_state, neighbours, labels, target, anchors, params, seed + 3
    )
    fresh = client_round(
        view, client.observed, ae, None, neighbours, labels, target, anchors, params, seed + 3
    )
    np.testing.assert_allclose(up3[0], three.distances, rtol=1e-5, atol=1e-6)
    # the kept set-up lists are the observed rows' lists a round would search for again
    np.testing.assert_array_equal(up3[1], three.code_neighbours)
    assert not np.allclose(up3[0], fresh.distances, rtol=1e-3)

    # a SuperNode that lost its state (or missed a round) is refused
    with pytest.raises(NodeError, match="the last round it answered is 0"):
        _client(cfg, 0)[0].fit(down, round_config(3, clusters=3))


def test_hw_with_half_the_samples_incomplete_clusters_well(tmp_path):
    cfg = validate_run_config(
        {
            "algorithm": "fmvc-iai",
            "dataset": "hw",
            "num-clients": 6,
            "missing-rate": 0.5,
            "iai.ae-epochs": 15,
            "iai.epochs": 5,
            "num-server-rounds": 3,
            "out-dir": str(tmp_path),
        }
    )
    strategy, _ = run_federation(tmp_path, cfg)
    truth = client_view(cfg, 0).labels
    scores = clustering_scores(truth, strategy.final_labels())
    # a reference reconstruction measured 0.85-0.93 after 10 rounds of 20 epochs; this is a short run
    assert scores["acc"] > 0.7, scores


def test_cuda_is_used_only_when_present(monkeypatch):
    import torch

    from fedmf_app.methods.iai import client as fmvc_iai

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert fmvc_iai._device("cuda") == "cpu"
    assert fmvc_iai._device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert fmvc_iai._device("cuda") == "cuda"


def test_other_algorithms_do_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys; from fedmf_app.registry import client_class, strategy_class; "
        "[(client_class(a), strategy_class(a)) for a in ('fedsonmf', 'fedmavg')]; "
        "strategy_class('fmvc-iai'); import fedmf_app.client_app, fedmf_app.server_app; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_client_kernels_run_on_one_thread_whatever_the_process_has(tmp_path, monkeypatch):
    """The client's numbers must not follow the machine's cores: every native pool at one thread
    (the process itself keeps its threads: the server's step is not limited)."""
    import threadpoolctl

    import fedmf_app.methods.iai.client_updates as updates_module  # the client imports them per stage

    seen = []

    def recording(kernel):
        def wrapped(*args, **kwargs):
            seen.append(max(p["num_threads"] for p in threadpoolctl.threadpool_info()))
            return kernel(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(updates_module, "client_setup", recording(client_setup))
    monkeypatch.setattr(updates_module, "client_round", recording(client_round))
    cfg = validate_run_config({**SMALL, "out-dir": str(tmp_path)})
    run_federation(tmp_path, cfg)
    assert len(seen) == cfg["num-clients"] * cfg["num-server-rounds"] and set(seen) == {1}
