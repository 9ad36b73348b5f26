"""The fedsonmf Strategy and NumPyClient, driven without Ray: handshake, aggregation, state."""

import json

import numpy as np
import pytest
from flwr.common import parameters_to_ndarrays
from flwr.server import SimpleClientManager

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.federated.node_errors import NodeError
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.strategy import FederationError
from fedmf_app.methods.sonmf.client import FedSONMFClient
from fedmf_app.methods.sonmf.params import sonmf_options
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.reference import SONMFReference, synthetic_views
from fedmf_app.methods.sonmf.start import (
    basis_from_coefficients,
    coefficients_from_sketch,
    sketch_test_matrix,
)
from fedmf_app.methods.sonmf.strategy import FedSONMFStrategy
from fedmf_app.methods.sonmf.updates import local_round, server_step
from fedmf_app.registry import validate_run_config

from support.data import client_view
from support.federation import (
    FakeProxy,
    federation,
    fit_res,
    handshake_federation,
    node_context,
    round_config,
    run_client_round,
)

CFG = {
    "num-clients": 3,
    "num-samples": 40,
    "num-server-rounds": 4,
    "heterogeneity": 0.6,
    "sonmf.local-steps": 3,
    "seed": 5,
    "connect-timeout-s": 0.2,
}


def _federation(tmp_path, overrides=None, properties=None):
    cfg = validate_run_config({**CFG, **(overrides or {})})
    if properties is not None:
        strategy, manager = handshake_federation(tmp_path, cfg, properties)
        return cfg, strategy, manager, None
    fed = federation(tmp_path, cfg)
    return cfg, fed.strategy, fed.server.client_manager(), fed


def test_adapters_reproduce_the_kernel_reference_run(tmp_path):
    cfg, strategy, _, fed = _federation(tmp_path)
    fed.start()
    views = synthetic_views(m=3, h=0.6, seed=5, num_samples=40)
    k = strategy.num_clusters or strategy.rank
    reference = SONMFReference([v.x.T for v in views], sonmf_options(cfg), k, seed=5)
    for s in range(1, cfg["num-server-rounds"] + 1):
        broadcast = fed.round(s)
        reference.round()
        np.testing.assert_array_equal(broadcast[0], reference.v_bar)
        np.testing.assert_array_equal(strategy.v, reference.v)
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "completed"
    assert [r["round"] for r in result["rounds"]] == [1, 2, 3, 4]
    np.testing.assert_array_equal(result["final"]["labels"], reference.labels())
    np.testing.assert_allclose(
        [r["residual"] for r in result["rounds"]], [h["residual"] for h in reference.history], rtol=1e-12
    )
    np.testing.assert_allclose(
        [r["objective"] for r in result["rounds"]], [h["objective"] for h in reference.history], rtol=1e-12
    )
    assert result["clients"][2]["partition-id"] == 2
    assert (tmp_path / "run" / "residuals.png").stat().st_size > 0


def test_global_correction_is_the_mean_client_gradient(tmp_path):
    _, strategy, _, fed = _federation(tmp_path)
    fed.start()
    for s in (1, 2):
        fed.round(s)
        grads = [c.context.state.array_records["fedsonmf.arrays"]["grad_prev"].numpy() for c in fed.clients]
        np.testing.assert_allclose(strategy.global_correction, np.mean(grads, axis=0), atol=1e-10)


def test_aggregation_of_constructed_replies(tmp_path):
    cfg, strategy, manager, _ = _federation(tmp_path)
    strategy.initialize_parameters(client_manager=manager)
    rng = np.random.default_rng(0)
    v_hats = [rng.standard_normal(strategy.v.shape) for _ in range(3)]
    grads = [rng.standard_normal(strategy.v.shape) for _ in range(3)]
    results = [
        (
            proxy,
            fit_res(
                [v_hats[p], grads[p]],
                {
                    "partition-id": p,
                    "kernel_s": 0.1,
                    "peak_rss_mb": 1.0,
                    "loss": float(p),
                    "basis_residual": 2.0,
                },
            ),
        )
        for p, proxy in enumerate(strategy.clients)
    ]
    v_before = strategy.v.copy()
    params = strategy.aggregate_fit(server_round=1, results=results[::-1], failures=[])[0]
    v_bar, v_next = server_step(v_before, v_hats, sonmf_options(cfg).steps)
    np.testing.assert_allclose(parameters_to_ndarrays(params)[0], v_bar)
    np.testing.assert_allclose(strategy.v, v_next)
    record = strategy.recorder.data["rounds"][0]
    eta = sonmf_options(cfg).steps.effective_lr
    expected_rv = np.linalg.norm((v_bar - v_next) / eta + np.mean(grads, axis=0)) ** 2
    assert record["residual_v"] == pytest.approx(expected_rv)
    assert record["residual_u"] == pytest.approx(2.0)
    assert record["residual_ratio"] == 1.0
    assert record["objective"] == pytest.approx(
        1.0 + cfg["sonmf.mu"] * np.linalg.norm(v_before, axis=1).sum()
    )
    assert record["client_kernel_s_sum"] == pytest.approx(0.3)


def test_a_failed_client_fails_the_run_and_keeps_finished_rounds(tmp_path):
    _, strategy, manager, fed = _federation(tmp_path)
    fed.start()
    fed.round(1)
    instructions = strategy.configure_fit(
        server_round=2, parameters=fed.server.parameters, client_manager=manager
    )
    facts = strategy.run_facts()
    results = [
        (proxy, run_client_round(proxy.client, ins.parameters, 2, **facts)) for proxy, ins in instructions[1:]
    ]
    with pytest.raises(FederationError, match=r"no valid reply from partition\(s\) \[0\].*disk on fire"):
        strategy.aggregate_fit(server_round=2, results=results, failures=[RuntimeError("disk on fire")])
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "failed" and "partition(s) [0]" in result["error"]
    assert len(result["rounds"]) == 1


@pytest.mark.parametrize(
    ("overrides", "properties", "fragment"),
    [
        ({"num-clients": 4}, None, "needs exactly 4 SuperNodes"),
        (
            {},
            [{"partition-id": 0, "num-samples": 40, "num-features": 20, "source": "a"}] * 3,
            "partition ids are [0, 0, 0]",
        ),
        (
            {},
            [{"partition-id": p, "num-samples": 40 + p, "num-features": 20, "source": "a"} for p in range(3)],
            "same number of samples (partition 0: 40, partition 1: 41",
        ),
        (
            {},
            [
                {
                    "partition-id": p,
                    "num-samples": 40,
                    "num-features": 4 if p == 1 else 20,
                    "source": f"f{p}.mat",
                }
                for p in range(3)
            ],
            "rank 6 cannot be used: a view with fewer features than the rank needs sonmf.start = "
            "sketch, but partition 1 (f1.mat) has 4 features",
        ),
        (
            {},
            [
                {"partition-id": p, "num-samples": 40, "num-features": 20, "source": "a", "num-partitions": 2}
                for p in range(3)
            ],
            "started with num-partitions=2 but the run has 3 clients",
        ),
    ],
)
def test_handshake_problems_stop_the_run_before_round_one(tmp_path, overrides, properties, fragment):
    cfg, strategy, manager, _ = _federation(tmp_path, overrides, properties)
    if overrides.get("num-clients") == 4:  # only 3 of 4 nodes connected
        manager.unregister(manager.all()["node-3"])
    with pytest.raises(FederationError) as err:
        strategy.initialize_parameters(client_manager=manager)
    assert fragment in str(err.value)
    assert not (tmp_path / "run").exists()  # nothing half-written


def test_handshake_error_names_the_node(tmp_path):
    cfg = validate_run_config({**CFG, "num-clients": 1})
    strategy = FedSONMFStrategy(cfg, RunRecorder(tmp_path, "run", cfg))
    manager = SimpleClientManager()
    manager.register(FakeProxy("node-7", {}, fail_handshake="cannot read /data/view0.mat"))
    with pytest.raises(
        FederationError, match="SuperNode node-7 failed the handshake: cannot read /data/view0.mat"
    ):
        strategy.initialize_parameters(client_manager=manager)


def test_client_state_persists_and_missed_rounds_are_refused(tmp_path):
    cfg = validate_run_config(CFG)
    view = client_view(cfg, 1)
    context = node_context(cfg, 1, 3)
    v_bar = np.abs(np.random.default_rng(0).standard_normal((6, 40)))
    first = FedSONMFClient(context, cfg, 1, 3, view)  # Flower rebuilds the client every message
    arrays, n, metrics = first.fit([v_bar], round_config(1, clusters=0, rank=6))
    assert n == 40 and metrics["partition-id"] == 1 and len(arrays) == 2
    stored = context.state.array_records["fedsonmf.arrays"]
    np.testing.assert_array_equal(
        stored["v_prev"].numpy(),
        prox_l21_nonneg(v_bar, sonmf_options(cfg).steps.effective_lr * cfg["sonmf.mu"]),
    )
    second = FedSONMFClient(context, cfg, 1, 3, view)
    second.fit([v_bar], round_config(2, clusters=0, rank=6))
    with pytest.raises(
        NodeError, match="partition 1: asked for round 4, but the last round it answered is 2"
    ):
        FedSONMFClient(context, cfg, 1, 3, view).fit([v_bar], round_config(4, clusters=0, rank=6))
    # without its state in context.state (a SuperNode that restarted, no state folder), it refuses too
    fresh = node_context(cfg, 1, 3)
    fresh.state.config_records["protocol.ledger"] = context.state.config_records["protocol.ledger"]
    with pytest.raises(NodeError, match="asked for round 3 but its stored state is from round 0"):
        FedSONMFClient(fresh, cfg, 1, 3, view).fit([v_bar], round_config(3, clusters=0, rank=6))


def test_without_diagnostics_only_the_local_copy_travels(tmp_path):
    cfg = validate_run_config({**CFG, "sonmf.diagnostics": False})
    client = FedSONMFClient(node_context(cfg, 0, 3), cfg, 0, 3, client_view(cfg, 0))
    arrays, _, metrics = client.fit([np.ones((6, 40))], round_config(1, clusters=0, rank=6))
    assert len(arrays) == 1 and arrays[0].shape == (6, 40)
    # besides: its process's peak memory (a view with ground truth adds it in round 1, only to score:
    # tests/federated/test_final_evaluation.py)
    assert client_view(cfg, 0).labels is None
    assert set(metrics) == {"partition-id", "kernel_s", "peak_rss_mb"}


def test_handshake_replies_get_a_rounds_timeout_not_the_connect_timeout(tmp_path):
    # starting a node's ClientApp (a Ray actor) can outlast connect-timeout-s on a busy machine
    cfg, strategy, manager, _ = _federation(tmp_path, {"connect-timeout-s": 0.2, "round-timeout-s": 77.0})
    seen = []
    for proxy in manager.all().values():
        answer = proxy.get_properties
        proxy.get_properties = lambda ins, timeout, group_id, answer=answer: (
            seen.append(timeout),
            answer(ins, timeout, group_id),
        )[1]
    strategy.initialize_parameters(client_manager=manager)
    assert seen == [77.0] * 3


@pytest.mark.parametrize("secure", [False, True])
def test_sketch_start_is_the_centralised_sketch_of_the_stacked_views(tmp_path, secure):
    # Federated == centralised where it reduces to it: V^1 from the clients' summed shares is the
    # sketch of the stacked views, and each client's U_p^1 is fitted to it; the server decodes only
    # the sum (fixed point, 2^-36 per entry), with or without secure aggregation.
    overrides = {"sonmf.start": "sketch", "secure-aggregation": secure, "num-server-rounds": 1}
    cfg, strategy, _, fed = _federation(tmp_path, overrides)
    v_bar = fed.start()[0]
    xs = [client.view.features.T for client in fed.clients]
    omega = sketch_test_matrix(xs[0].shape[1], strategy.rank, rng_for(5, Stream.SONMF_SKETCH))
    stacked = np.vstack(xs)
    expected = coefficients_from_sketch(
        stacked.T @ (stacked @ omega),
        omega,
        strategy.rank,
        len(xs),
        sonmf_options(cfg).sketch_reading,
        rng_for(5, Stream.SERVER_INIT),
    )
    # the shares are always masked: the server decodes their sum from fixed point (2^-36 an entry)
    np.testing.assert_allclose(v_bar, expected, rtol=1e-6, atol=1e-8)
    assert strategy.start_s is not None
    fed.round(1)
    for client in fed.clients:
        x = client.view.features.T
        u_start = basis_from_coefficients(x, v_bar)
        expected_round = local_round(x, u_start, v_bar, sonmf_options(cfg).steps, None, None)
        u_kept = client.context.state.array_records["fedsonmf.arrays"]["u"].numpy()
        np.testing.assert_array_equal(u_kept, expected_round.u)
