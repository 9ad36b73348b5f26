"""FMVC-IMK's Strategy and NumPyClient driven in process (no Ray): same numbers as the kernels,
the server sees only masked graph uploads, the stopping rule ends the run."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.common.secure_sum_math import (
    CHECK_WORDS,
    decode_fixed,
    matrix_from_values,
    matrix_values,
    split_check_words,
    sum_words,
    upper_from_values,
    upper_values,
)
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.federated.node_errors import NodeError
from fedmf_app.methods.imk.client import FMVCIMKClient
from fedmf_app.methods.imk.client_updates import preprocess_view, view_anchor_graph, view_knn_graph
from fedmf_app.methods.imk.model import anchor_indices
from fedmf_app.methods.imk.params import imk_options, stop_tolerance
from fedmf_app.methods.imk.reference import IMKReference
from fedmf_app.methods.imk.server_updates import AnchorLaplacian
from fedmf_app.methods.imk.strategy import FMVCIMKStrategy
from fedmf_app.registry import client_class, validate_run_config

from support.data import IMK_BASE as BASE
from support.data import client_view, labelled_file, sparse_file
from support.federation import node_context, run_imk, views_as_csr


def reference_views(cfg):
    return [
        preprocess_view(client_view(cfg, p).features, cfg["imk.standardise"], imk_options(cfg).unit_norm)
        for p in range(cfg["num-clients"])
    ]


def graph_mask(cfg):
    """The rows each view's graph links: the run's mask under imk.missing-graph = observed."""
    if cfg["imk.missing-graph"] != "observed":
        return None
    return missing_view_mask(cfg["num-samples"], cfg["num-clients"], cfg["missing-rate"], cfg["seed"])


#: Complete views; missing rows mean-filled with the filled graphs; the same with observed-rows graphs.
MISSING = {
    "complete": {},
    "filled": {"missing-rate": 0.5},
    "observed": {"missing-rate": 0.5, "imk.missing-graph": "observed"},
}


def test_labelled_data_gives_per_round_and_final_scores(tmp_path, monkeypatch):
    path, y = labelled_file(tmp_path)
    evaluated = []
    monkeypatch.setattr(FMVCIMKClient, "evaluate", lambda self, *args: evaluated.append(self.partition_id))
    cfg, strategy, _ = run_imk(
        tmp_path, **{"dataset": path, "num-clusters": 0, "imk.tol": 1e-4, "num-server-rounds": 30}
    )
    result = strategy.recorder.data
    assert result["status"] == "completed" and strategy.k == 3
    rounds = result["rounds"]
    assert all({"acc", "nmi", "purity"} <= set(r) for r in rounds)
    # the final scores (against the ground truth the set-up brought) are the last round's, and the
    # run ends without asking the clients for their labels again
    final = result["final"]
    assert all(final[key] == rounds[-1][key] for key in ("acc", "nmi", "purity"))
    assert final["acc"] > 0.95 and final["nmi"] > 0.85 and final["ground_truth_partition"] == 0
    assert evaluated == []
    assert result["summary"]["converged_round"] == rounds[-1]["round"] < 30
    assert result["summary"]["peak_rss_mb_client_max"] == strategy.setup["client_setup_peak_rss_mb_max"] > 0


@pytest.mark.parametrize("missing", list(MISSING))
@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_rounds_match_the_in_process_kernels(tmp_path, graph, missing):
    cfg, strategy, _ = run_imk(tmp_path, **{"imk.graph": graph, "imk.anchors": 24, **MISSING[missing]})
    result = strategy.recorder.data
    assert result["status"] == "completed"
    ref = IMKReference(reference_views(cfg), imk_options(cfg), 3, cfg["seed"], graph_mask(cfg))
    for _ in range(cfg["num-server-rounds"]):
        ref.round()
    for key in ("objective", "graph_term", "consensus"):
        np.testing.assert_allclose(
            [r[key] for r in result["rounds"]], [h[key] for h in ref.history], rtol=1e-9, atol=1e-12
        )
    np.testing.assert_allclose(strategy.h, ref.h, atol=1e-10)
    np.testing.assert_array_equal(strategy.final_labels(), ref.labels())
    upload = 8 * (60 * 24 if graph == "anchor" else 60 * 59 // 2) + 8 * CHECK_WORDS
    assert result["summary"]["setup"]["upload_bytes_per_client"] == upload
    assert isinstance(strategy.laplacian, AnchorLaplacian) == (graph == "anchor")
    assert (tmp_path / "run" / "convergence.png").exists()
    assert strategy.final_labels().shape == (60,)


def test_local_iterations_reach_the_clients(tmp_path):
    """``imk.local-iterations = 2``: the Flower run makes the kernels' two passes per round."""
    overrides = {"imk.graph": "anchor", "imk.anchors": 24, "imk.local-iterations": 2}
    cfg, strategy, _ = run_imk(tmp_path, **overrides)
    objectives = [r["objective"] for r in strategy.recorder.data["rounds"]]
    passes = {}
    for n in (1, 2):
        options = imk_options({**cfg, "imk.local-iterations": n})
        ref = IMKReference(reference_views(cfg), options, 3, cfg["seed"])
        for _ in range(cfg["num-server-rounds"]):
            ref.round()
        passes[n] = [h["objective"] for h in ref.history]
    np.testing.assert_allclose(objectives, passes[2], rtol=1e-9)
    assert not np.allclose(objectives, passes[1], rtol=1e-6)


@pytest.mark.parametrize("start", ["kmeans", "spectral"])
def test_the_start_reaches_the_clients(tmp_path, start):
    """``imk.start``: the Flower run starts from the clustering the kernels start from with it."""
    cfg, strategy, _ = run_imk(tmp_path, **{"imk.graph": "anchor", "imk.anchors": 24, "imk.start": start})
    objectives = [r["objective"] for r in strategy.recorder.data["rounds"]]
    runs = {}
    for rule in ("kmeans", "spectral"):
        ref = IMKReference(reference_views(cfg), imk_options({**cfg, "imk.start": rule}), 3, cfg["seed"])
        for _ in range(cfg["num-server-rounds"]):
            ref.round()
        runs[rule] = [h["objective"] for h in ref.history]
    other = "spectral" if start == "kmeans" else "kmeans"
    np.testing.assert_allclose(objectives, runs[start], rtol=1e-9)
    assert not np.allclose(objectives, runs[other], rtol=1e-6)


def plain_graphs(cfg):
    """Each client's graph (kNN similarity or anchor graph), in the clear."""
    views = reference_views(cfg)
    mask = graph_mask(cfg)
    rows = [None if mask is None else mask[:, p] for p in range(len(views))]
    if cfg["imk.graph"] == "knn":
        return [view_knn_graph(x, cfg["imk.neighbours"], "binary", r) for x, r in zip(views, rows)]
    anchors = anchor_indices(cfg["seed"], 60, cfg["imk.anchors"])
    return [view_anchor_graph(x, anchors, cfg["imk.neighbours"], r) for x, r in zip(views, rows)]


def plain_values(cfg):
    """Each client's graph as the dense values of the secure sum, without masks."""
    values = upper_values if cfg["imk.graph"] == "knn" else matrix_values
    return [values(g) for g in plain_graphs(cfg)]


@pytest.mark.parametrize("missing", ["complete", "observed"])
@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_server_receives_only_masked_graphs_whose_sum_is_the_true_sum(tmp_path, monkeypatch, graph, missing):
    seen = []
    original = FMVCIMKStrategy._fit_stage

    def spy(self, proxy, config):
        arrays, metrics = original(self, proxy, config)
        seen.append(arrays[0].copy())
        return arrays, metrics

    monkeypatch.setattr(FMVCIMKStrategy, "_fit_stage", spy)
    overrides = {"num-server-rounds": 1, "imk.graph": graph, "imk.anchors": 24, **MISSING[missing]}
    cfg, strategy, _ = run_imk(tmp_path, **overrides)
    assert cfg["secure-aggregation"] is False  # the graph sum is masked in every run
    plain = plain_values(cfg)
    assert len(seen) == 3
    for upload in seen:
        # one fixed-point format for every masked sum: uint64 words, f = secure-aggregation-frac-bits
        assert upload.dtype == np.uint64 and upload.size == plain[0].size + CHECK_WORDS
        assert np.count_nonzero(upload) == upload.size  # dense: no sparsity pattern
        assert np.median(np.abs(decode_fixed(upload[:-CHECK_WORDS], 36))) > 1e6  # alone: noise
    summed = decode_fixed(split_check_words(sum_words(seen), 3), 36)  # the masks cancelled
    np.testing.assert_allclose(summed, np.sum(plain, axis=0), rtol=0, atol=3 * 2.0**-36)
    if graph == "knn":
        graphs = plain_graphs(cfg)
        assert (upper_from_values(summed, 60) != sum(graphs[1:], graphs[0])).nnz == 0  # 0/1: exact
    else:
        decoded = matrix_from_values(summed, (60, 24))
        # each row sums to the number of views whose graph links it
        views_linking = 3.0 if missing == "complete" else graph_mask(cfg).sum(axis=1)
        np.testing.assert_allclose(
            np.asarray(decoded.sum(axis=1)).ravel(), views_linking, atol=3 * 5 * 2.0**-36
        )


@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_observed_rows_graph_changes_nothing_without_missing_views(tmp_path, graph):
    runs = {}
    for rate in (0.0, 0.5):
        for choice in ("filled", "observed"):
            overrides = {
                "imk.graph": graph,
                "imk.anchors": 24,
                "missing-rate": rate,
                "imk.missing-graph": choice,
            }
            runs[rate, choice] = run_imk(tmp_path / f"{rate}-{choice}", **overrides)[1]
    filled, observed = runs[0.0, "filled"], runs[0.0, "observed"]
    numbers = ("objective", "data_term", "ortho_term", "graph_term", "consensus", "alpha")
    for a, b in zip(filled.recorder.data["rounds"], observed.recorder.data["rounds"], strict=True):
        assert [a[key] for key in numbers] == [b[key] for key in numbers]
    assert np.array_equal(filled.h, observed.h)
    assert np.array_equal(filled.laplacian @ np.eye(60), observed.laplacian @ np.eye(60))
    # with missing views the graphs, and so the runs, differ
    differs = runs[0.5, "filled"].laplacian @ np.eye(60) - runs[0.5, "observed"].laplacian @ np.eye(60)
    assert np.abs(differs).max() > 0.01


@pytest.mark.parametrize("patience", [1, 3])
def test_stopping_rule_ends_the_run_and_skips_the_remaining_rounds(tmp_path, patience):
    # imk.tol's rule (imk.spectral-tol = 0: these spectral starts stop by imk.tol too)
    overrides = {
        "imk.tol": 1e-2,
        "imk.spectral-tol": 0.0,
        "imk.stop-patience": patience,
        "num-server-rounds": 50,
    }
    cfg, strategy, clients = run_imk(tmp_path, **overrides)
    result = strategy.recorder.data
    assert "imk.stop-patience" in result["summary"]["stopped_early"]["reason"]
    rounds = [r["round"] for r in result["rounds"]]
    assert result["status"] == "completed" and rounds[-1] < 50
    assert result["summary"]["converged_round"] == rounds[-1]
    f = np.array([r["objective"] for r in result["rounds"]])
    change = np.abs(np.diff(f)) / np.abs(f[:-1])
    assert cfg["imk.stop-patience"] == patience
    assert (change[-patience:] <= 1e-2).all()  # flat for its patience at the end ...
    assert not any(
        (change[t - patience : t] <= 1e-2).all() for t in range(patience, len(change))
    )  # not before
    # the clients' private state is from the last round they ran
    assert all(c.context.state.config_records["fmvc-imk.meta"]["round"] == rounds[-1] for c in clients)


@pytest.mark.parametrize("start", ["spectral", "kmeans"])
def test_a_run_whose_clients_all_start_spectral_stops_by_the_spectral_tolerance(tmp_path, start):
    overrides = {"imk.start": start, "imk.tol": 1e-12, "imk.spectral-tol": 1e-2, "num-server-rounds": 25}
    cfg, strategy, _ = run_imk(tmp_path, **overrides)
    result = strategy.recorder.data
    assert strategy.setup["starts"] == [start] * 3  # what each client's set-up reply says it took
    f = np.array([r["objective"] for r in result["rounds"]])
    change = np.abs(np.diff(f)) / np.abs(f[:-1])
    if start == "spectral":
        assert "imk.spectral-tol = 0.01" in result["summary"]["stopped_early"]["reason"]
        assert len(f) < 25 and (change[-3:] <= 1e-2).all()
    else:  # a k-means start keeps imk.tol, which these rounds never reach
        assert "stopped_early" not in result["summary"] and len(f) == 25
        assert (change[-3:] <= 1e-2).all()  # the spectral tolerance would have stopped it


def test_the_stop_tolerance_follows_the_starts_and_zero_switches_it():
    options = imk_options(validate_run_config({**BASE, "imk.tol": 1e-3, "imk.spectral-tol": 3e-3}))
    assert stop_tolerance(options, ["spectral", "spectral"]) == ("imk.spectral-tol", 3e-3)
    assert stop_tolerance(options, ["spectral", "kmeans"]) == ("imk.tol", 1e-3)
    assert stop_tolerance(options, []) == ("imk.tol", 1e-3)
    no_spectral = dataclasses.replace(options, spectral_tol=0.0)
    assert stop_tolerance(no_spectral, ["spectral"]) == ("imk.tol", 1e-3)
    assert stop_tolerance(dataclasses.replace(options, tol=0.0), ["spectral"]) == ("imk.tol", 0.0)


def test_missing_cluster_count_stops_before_round_one(tmp_path):
    with pytest.raises(Exception, match="num-clusters"):
        run_imk(tmp_path, **{"num-clusters": 0})
    assert not (tmp_path / "run").exists()


def test_a_client_refuses_anchor_indices_other_than_the_seeded_ones_naming_its_partition(tmp_path):
    cfg = validate_run_config({**BASE, "imk.graph": "anchor", "imk.anchors": 24})
    client = client_class("fmvc-imk")(node_context(cfg, 1, 3), cfg, 1, 3, client_view(cfg, 1))
    setup = {"stage": "setup", "fact-clusters": 3}
    refused = r"partition 1: the setup message names {} anchors that are not the 24 the run seed draws"
    with pytest.raises(NodeError, match=refused.format(8)):
        client.fit([], {**setup, "anchors": np.zeros(8, np.int64).tobytes()})
    with pytest.raises(NodeError, match=refused.format(10)):
        client.fit([], {**setup, "anchors": np.arange(55, 65, dtype=np.int64).tobytes()})


@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_sparse_views_run_through_the_flower_client_with_the_dense_numbers(tmp_path, monkeypatch, graph):
    overrides = {"dataset": sparse_file(tmp_path), "imk.graph": graph, "imk.anchors": 24}
    _, dense, _ = run_imk(tmp_path / "dense", **overrides)
    views_as_csr(monkeypatch)
    _, sparse, clients = run_imk(tmp_path / "sparse", **overrides)
    assert all(sp.issparse(c.view.features) and sp.issparse(c._view()) for c in clients)
    for key in ("objective", "graph_term", "consensus"):
        np.testing.assert_allclose(
            [r[key] for r in sparse.recorder.data["rounds"]],
            [r[key] for r in dense.recorder.data["rounds"]],
            rtol=1e-10,
        )
    np.testing.assert_allclose(sparse.h, dense.h, atol=1e-10)
    assert sparse.recorder.data["final"]["acc"] == dense.recorder.data["final"]["acc"]


@pytest.mark.parametrize("graph", ["knn", "anchor"])
def test_client_kernels_run_on_one_thread_whatever_the_process_has(tmp_path, monkeypatch, graph):
    """The client's numbers must not follow the machine's cores (with more BLAS threads a view with
    duplicate rows gets another kNN graph): the set-up's kernels see every native pool at one
    thread, the rounds' kernel one BLAS thread; the process keeps its own."""
    import threadpoolctl

    import fedmf_app.methods.imk.client as client_module

    seen = {"setup": [], "round": []}

    def recording(kernel, when, api):
        def wrapped(*args, **kwargs):
            pools = [p for p in threadpoolctl.threadpool_info() if api is None or p["user_api"] == api]
            seen[when].append(max(p["num_threads"] for p in pools))
            return kernel(*args, **kwargs)

        return wrapped

    for name in ("view_knn_graph", "view_anchor_graph", "init_client"):
        monkeypatch.setattr(client_module, name, recording(getattr(client_module, name), "setup", None))
    monkeypatch.setattr(client_module, "client_round", recording(client_module.client_round, "round", "blas"))
    overrides = {"num-server-rounds": 3, "imk.graph": graph, "imk.anchors": 24}
    cfg, _, _ = run_imk(tmp_path, **overrides)
    m = cfg["num-clients"]
    assert len(seen["setup"]) == 2 * m and set(seen["setup"]) == {1}
    assert len(seen["round"]) == 3 * m and set(seen["round"]) == {1}
