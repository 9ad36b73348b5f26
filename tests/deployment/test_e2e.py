"""End to end on a real federation: SuperLink + one SuperNode per view on loopback.

Each test starts its own :class:`~fedmf_app.deployment.federation.LocalFederation` (every wait bounded) and
checks afterwards that none of the processes it started is left.
"""

import json
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from fedmf_app.deployment.certificates import make_supernode_keys
from fedmf_app.deployment.federation import LocalFederation
from fedmf_app.deployment.supernode import LocalSuperNode
from fedmf_app.methods.sonmf.options import sonmf_params
from fedmf_app.methods.sonmf.reference import KernelFederation, synthetic_views
from fedmf_app.options.run_config import validate_run_config

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _descendants(federation):
    """Every process the federation started, found while it runs."""
    owned = [federation.superlink.process] + [n.process for n in federation.supernodes]
    procs = []
    for proc in owned:
        if proc is None:
            continue
        try:
            parent = psutil.Process(proc.pid)
            procs += [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return procs


def _assert_all_stopped(procs):
    alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]


def _run(tmp_path, num_nodes, overrides, **kwargs):
    """Start a federation, run once, stop it; return the outcome and the processes it had."""
    with LocalFederation(tmp_path / "federation", num_nodes, ROOT, **kwargs) as federation:
        procs = _descendants(federation)
        outcome = federation.run(overrides, timeout=240)
        procs += _descendants(federation)
    _assert_all_stopped(procs)
    return outcome


def _reference_residuals(m, h, seed, rounds):
    cfg = validate_run_config({"num-clients": m, "heterogeneity": h, "seed": seed})
    reference = KernelFederation(
        [v.x for v in synthetic_views(m=m, h=h, seed=seed)], sonmf_params(cfg), seed=seed
    )
    for _ in range(rounds):
        reference.round()
    return [h["residual"] for h in reference.history]


def test_three_node_deployment_gives_the_simulation_residuals(tmp_path):
    # The same config and seed as test_e2e_simulation's three-client run: both are checked
    # against the same in-process reference at rtol 1e-9, so deployment == simulation.
    overrides = {
        "num-server-rounds": 3,
        "heterogeneity": 0.3,
        "seed": 3,
        "out-dir": str(tmp_path),
        "run-name": "deployed",
    }
    outcome = _run(tmp_path, 3, overrides)
    assert outcome.status == "completed", outcome.error
    assert outcome.result_path == tmp_path / "deployed" / "result.json"
    result = json.loads(outcome.result_path.read_text())
    assert result["config"] == validate_run_config({"num-clients": 3, **overrides})
    assert [c["partition-id"] for c in result["clients"]] == [0, 1, 2]
    np.testing.assert_allclose(
        [r["residual"] for r in result["rounds"]], _reference_residuals(3, 0.3, 3, 3), rtol=1e-9
    )
    assert "[fedsonmf] round 3/3" in outcome.log
    assert not outcome.node_exits


def test_tls_and_supernode_authentication_refuse_an_unregistered_node(tmp_path):
    overrides = {
        "num-server-rounds": 2,
        "heterogeneity": 0.3,
        "seed": 3,
        "connect-timeout-s": 20.0,
        "out-dir": str(tmp_path),
        "run-name": "tls",
    }
    with LocalFederation(tmp_path / "federation", 3, ROOT, supernode_auth=True) as federation:
        # a fourth SuperNode with a key the SuperLink never registered: with authentication
        # enforced it is refused, otherwise the server would see 4 nodes and stop the run
        ((key, _),) = make_supernode_keys(tmp_path / "intruder-key", 1)
        intruder = LocalSuperNode(
            "intruder",
            federation.superlink.address,
            tmp_path / "intruder",
            {"partition-id": 0, "num-partitions": 3},
            root_certificates=federation.workdir / "certificates" / "ca.crt",
            auth_private_key=key,
        ).start()
        try:
            procs = _descendants(federation) + [psutil.Process(intruder.process.pid)]
            outcome = federation.run(overrides, timeout=240)
        finally:
            intruder.stop()
        procs += _descendants(federation)
    _assert_all_stopped(procs)
    assert outcome.status == "completed", outcome.error
    np.testing.assert_allclose(
        [r["residual"] for r in json.loads(outcome.result_path.read_text())["rounds"]],
        _reference_residuals(3, 0.3, 3, 2),
        rtol=1e-9,
    )
    assert "--insecure" not in federation.superlink.command
    assert "--enable-supernode-auth" in federation.superlink.command


@pytest.mark.parametrize(
    "round_timeout, bound",
    [
        # the round's messages expire after round-timeout-s; the ServerApp polls every 3 s
        (12.0, 12.0 + 15),
        # Flower marks a node offline 2 x 30 s after its last heartbeat, before a long timeout
        pytest.param(600.0, 60.0 + 15, marks=pytest.mark.slow, id="heartbeat"),
    ],
)
def test_a_supernode_killed_mid_run_fails_the_run_in_bounded_time(tmp_path, round_timeout, bound):
    overrides = {
        "num-server-rounds": 20,
        "round-timeout-s": round_timeout,
        # as the federation command: no numba compile in round 1 (it could outlast a 12 s timeout)
        "sonmf.basis-kernel": "numpy",
        "seed": 1,
        "out-dir": str(tmp_path),
        "run-name": "killed",
    }
    result_path = tmp_path / "killed" / "result.json"
    killed_at = []

    def kill_after_round_one(federation, stop):
        while not stop.wait(0.2):
            if result_path.exists() and json.loads(result_path.read_text())["rounds"]:
                federation.supernodes[2].kill()
                killed_at.append(time.monotonic())
                return

    with LocalFederation(tmp_path / "federation", 3, ROOT) as federation:
        procs = _descendants(federation)
        stop = threading.Event()
        killer = threading.Thread(target=kill_after_round_one, args=(federation, stop))
        killer.start()
        try:
            outcome = federation.run(overrides, timeout=240)
        finally:
            stop.set()
            killer.join(timeout=10)
        ended_at = time.monotonic()
        procs += _descendants(federation)
    _assert_all_stopped(procs)
    assert killed_at, "round 1 never finished"
    assert ended_at - killed_at[0] < bound
    assert outcome.status == "failed"
    assert "no valid reply from partition(s) [2]" in outcome.error
    assert "every view is needed in every round" in outcome.error
    result = json.loads(result_path.read_text())
    assert result["status"] == "failed" and result["error"] == outcome.error
    assert len(result["rounds"]) >= 1
    assert [r["round"] for r in result["rounds"]] == list(range(1, len(result["rounds"]) + 1))
    assert any("SuperNode 2 exited" in line for line in outcome.node_exits)


def test_a_malformed_data_file_on_one_node_stops_the_run_naming_the_node_and_file(tmp_path):
    views = synthetic_views(m=3, h=0.3, seed=3, num_samples=40)
    files = []
    for p, view in enumerate(views[:2]):
        files.append(tmp_path / f"view{p}.npy")
        np.save(files[-1], view.x.T)
    files.append(tmp_path / "view2.csv")
    files[-1].write_text("1.0,2.0\n3.0,oops\n")
    overrides = {
        "out-dir": str(tmp_path / "results"),
        "run-name": "bad",
        "num-server-rounds": 2,
        "sonmf.rank": 2,
    }
    outcome = _run(tmp_path, 3, overrides, data_files=files)
    assert outcome.status == "failed"
    assert outcome.result_path is None and not (tmp_path / "results" / "bad").exists()
    assert "run stopped before round 1" in outcome.error
    assert "partition-id=2" in outcome.error and str(files[2]) in outcome.error
    assert "non-numeric" in outcome.error
    assert "[ROUND 1]" not in outcome.log


def test_secure_aggregation_with_signed_keys_gives_the_in_process_numbers(tmp_path):
    # the local federation command's default; the in-process run uses the same code and seeds,
    # and the masks cancel exactly, so a deployment equals it (the rounding is seeded)
    from fakes import run_federation

    overrides = {
        "num-server-rounds": 3,
        "heterogeneity": 0.3,
        "seed": 3,
        "out-dir": str(tmp_path),
        "run-name": "secure",
        "secure-aggregation": True,
        "secure-aggregation-signed-keys": True,
    }
    outcome = _run(tmp_path, 3, overrides)
    assert outcome.status == "completed", outcome.error
    assert "secure aggregation: keys agreed" in outcome.log
    deployed = json.loads(outcome.result_path.read_text())["rounds"]
    cfg = validate_run_config({"num-clients": 3, **overrides, "secure-aggregation-signed-keys": False})
    strategy, _ = run_federation(tmp_path / "in-process", cfg)
    local = strategy.recorder.data["rounds"]
    np.testing.assert_allclose([r["residual"] for r in deployed], [r["residual"] for r in local], rtol=1e-12)
    # and the plain reference up to the fixed point
    np.testing.assert_allclose(
        [r["residual"] for r in deployed], _reference_residuals(3, 0.3, 3, 3), rtol=1e-8
    )
