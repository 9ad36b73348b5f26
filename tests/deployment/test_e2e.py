"""End to end on a real federation: SuperLink + one SuperNode per view on loopback.

Each test starts its own :class:`~fedmf_app.deployment.federation.LocalFederation` (every wait
bounded) and checks afterwards that none of the processes it started is left:

* TLS, SuperNode authentication (an unregistered node is refused) and secure aggregation with
  signed keys: the numbers of the same run in process;
* a SuperNode killed mid-run (each node holding its own CSV file) fails the run in bounded time,
  naming it; ``python -m fedmf_app.resume`` then restarts the federation on the same folders and
  files and ends the run with the numbers of an uninterrupted one;
* a ServerApp that loses its SuperLink marks its run interrupted and exits;
* a malformed data file on one node stops the run before round 1, naming the node and the cause
  (the file's path stays in the node's own log).
"""

import json
import threading
import time

import numpy as np
import psutil
import pytest

from fedmf_app.deployment.certificates import make_supernode_keys
from fedmf_app.deployment.federation import LocalFederation
from fedmf_app.deployment.supernode import LocalSuperNode
from fedmf_app.in_process import run_in_process
from fedmf_app.methods.sonmf.params import sonmf_options
from fedmf_app.methods.sonmf.reference import SONMFReference, synthetic_views
from fedmf_app.registry import validate_run_config
from fedmf_app.resume import main as resume_main

from support.flower import ROOT, assert_all_stopped, federation_processes

pytestmark = pytest.mark.e2e

#: Per-round timing keys, which differ between any two runs.
TIMING = {"wall_s", "elapsed_s", "server_s", "client_kernel_s_max", "client_kernel_s_sum"}
TIMING |= {"secagg_server_s", "secagg_client_s_max"}


def _run(tmp_path, num_nodes, overrides, **kwargs):
    """Start a federation, run once, stop it; return the outcome (every process checked stopped)."""
    with LocalFederation(tmp_path / "federation", num_nodes, ROOT, **kwargs) as federation:
        procs = federation_processes(federation)
        outcome = federation.run(overrides, timeout=240)
        procs += federation_processes(federation)
    assert_all_stopped(procs)
    return outcome


def _reference_residuals(m, h, seed, rounds):
    cfg = validate_run_config({"num-clients": m, "heterogeneity": h, "seed": seed})
    views = [v.x.T for v in synthetic_views(m=m, h=h, seed=seed)]
    reference = SONMFReference(views, sonmf_options(cfg), cfg["num-clusters"] or 6, seed=seed)
    for _ in range(rounds):
        reference.round()
    return [h["residual"] for h in reference.history]


def test_tls_authentication_and_signed_secure_aggregation_give_the_in_process_numbers(tmp_path):
    overrides = {
        "num-server-rounds": 3,
        "heterogeneity": 0.3,
        "seed": 3,
        "connect-timeout-s": 20.0,
        "out-dir": str(tmp_path),
        "run-name": "deployed",
        "secure-aggregation": True,
        "secure-aggregation-signed-keys": True,
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
            procs = federation_processes(federation) + [psutil.Process(intruder.process.pid)]
            outcome = federation.run(overrides, timeout=240)
        finally:
            intruder.stop()
        procs += federation_processes(federation)
    assert_all_stopped(procs)
    assert "--insecure" not in federation.superlink.command
    assert "--enable-supernode-auth" in federation.superlink.command
    assert outcome.status == "completed", outcome.error
    assert outcome.result_path == tmp_path / "deployed" / "result.json"
    assert "secure aggregation: every client sent its key in the handshake" in outcome.log
    assert "[fedsonmf] round 3/3" in outcome.log
    assert not outcome.node_exits
    result = json.loads(outcome.result_path.read_text())
    assert result["config"] == validate_run_config({"num-clients": 3, **overrides})
    assert [c["partition-id"] for c in result["clients"]] == [0, 1, 2]
    deployed = [r["residual"] for r in result["rounds"]]
    assert all(b < a for a, b in zip(deployed, deployed[1:]))
    # the in-process run uses the same code and seeds, and the masks cancel exactly (the
    # rounding is seeded), so the deployment equals it
    cfg = {"num-clients": 3, **overrides, "secure-aggregation-signed-keys": False}
    local = run_in_process(cfg, tmp_path / "in-process").recorder.data["rounds"]
    np.testing.assert_allclose(deployed, [r["residual"] for r in local], rtol=1e-12)
    # and the plain kernel reference up to the fixed point
    np.testing.assert_allclose(deployed, _reference_residuals(3, 0.3, 3, 3), rtol=1e-8)


@pytest.mark.parametrize(
    "round_timeout, bound",
    [
        # the round's messages expire after round-timeout-s; the ServerApp polls every 3 s. The
        # timeout also bounds each set-up message (the key agreement): 20 s leaves room for a
        # ClientApp process to start on a busy machine
        (20.0, 20.0 + 15),
        # Flower marks a node offline 2 x 30 s after its last heartbeat, before a long timeout
        pytest.param(600.0, 60.0 + 15, marks=pytest.mark.slow, id="heartbeat"),
    ],
)
def test_a_supernode_killed_mid_run_fails_the_run_in_bounded_time_and_the_run_resumes(
    tmp_path, round_timeout, bound
):
    # each organisation's own CSV file, kept by the federation for the resume
    files = []
    for p, view in enumerate(synthetic_views(m=3, h=0.3, seed=3, num_samples=40)):
        files.append(tmp_path / f"org{p}.csv")
        np.savetxt(files[-1], view.x.T, delimiter=",")
    overrides = {
        "dataset": ",".join(map(str, files)),
        "num-server-rounds": 3,
        "round-timeout-s": round_timeout,
        # as the federation command: no numba compile in round 1 (it could outlast a short timeout)
        "sonmf.basis-kernel": "numpy",
        "secure-aggregation": True,
        "secure-aggregation-signed-keys": True,
        "seed": 1,
        "out-dir": str(tmp_path),
        "run-name": "killed",
    }
    run_dir = tmp_path / "killed"
    result_path = run_dir / "result.json"
    killed_at = []

    def kill_after_round_one(federation, stop):
        while not stop.wait(0.2):
            if result_path.exists() and json.loads(result_path.read_text())["rounds"]:
                federation.supernodes[2].kill()
                killed_at.append(time.monotonic())
                return

    workdir = tmp_path / "federation"
    with LocalFederation(workdir, 3, ROOT, data_files=files) as federation:
        procs = federation_processes(federation)
        stop = threading.Event()
        killer = threading.Thread(target=kill_after_round_one, args=(federation, stop))
        killer.start()
        try:
            outcome = federation.run(overrides, timeout=240)
        finally:
            stop.set()
            killer.join(timeout=10)
        ended_at = time.monotonic()
        procs += federation_processes(federation)
    assert_all_stopped(procs)
    assert killed_at, f"round 1 never finished: {outcome.status}: {outcome.error}"
    assert ended_at - killed_at[0] < bound
    assert outcome.status == "failed"
    assert "no valid reply from partition(s) [2]" in outcome.error
    assert "every view is needed in every round" in outcome.error
    result = json.loads(result_path.read_text())
    assert result["status"] == "failed" and result["error"] == outcome.error
    assert 1 <= len(result["rounds"]) < 3
    assert [r["round"] for r in result["rounds"]] == list(range(1, len(result["rounds"]) + 1))
    assert any("SuperNode 2 exited" in line for line in outcome.node_exits)

    # the organisations restart the federation on the same folders (each SuperNode finds its state
    # in its state-dir and is given its own file again) and resume: the numbers of an uninterrupted
    # run of the same seed
    argv = [str(run_dir), "--app-dir", str(ROOT), "--deployment", "--workdir", str(workdir)]
    assert resume_main([*argv, "--timeout", "300"]) == 0
    resumed = json.loads(result_path.read_text())
    cfg = {**overrides, "num-clients": 3, "secure-aggregation-signed-keys": False}
    want = run_in_process(cfg, tmp_path / "reference").recorder.data
    assert resumed["status"] == "completed", resumed["error"]
    assert resumed["resumed"][0]["after_round"] == len(result["rounds"])
    assert [r["round"] for r in resumed["rounds"]] == [r["round"] for r in want["rounds"]]
    for got, expected in zip(resumed["rounds"], want["rounds"]):
        assert {k: v for k, v in got.items() if k not in TIMING} == {
            k: v for k, v in expected.items() if k not in TIMING
        }
    assert resumed["final"] == json.loads(json.dumps(want["final"]))


def _command(proc):
    """``proc``'s command line, empty once it has exited (a zombie has none to read)."""
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def _wait_exited(procs, timeout):
    """Wait until every process of ``procs`` has exited (a zombie has: its parent may not reap it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for proc in procs:
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.2)
    return False


def test_a_serverapp_that_loses_its_superlink_marks_the_run_interrupted_and_exits(tmp_path):
    overrides = {
        "num-server-rounds": 50,
        "sonmf.basis-kernel": "numpy",
        "sonmf.stop-ratio": 0.0,
        "sonmf.stop-change": 0.0,
        "sonmf.stop-label-change": 0.0,
        "connect-timeout-s": 5.0,
        "out-dir": str(tmp_path),
        "run-name": "lost",
    }
    result_path = tmp_path / "lost" / "result.json"
    serverapps, orphans = [], []

    def kill_the_superlink(federation, stop):
        while not stop.wait(0.2):
            if result_path.exists() and json.loads(result_path.read_text())["rounds"]:
                link = psutil.Process(federation.superlink.process.pid)
                children = link.children(recursive=True)
                serverapps.extend(p for p in children if "serverapp" in _command(p))
                orphans.extend(p for p in children if p not in serverapps)
                link.kill()  # the SuperLink alone: the ServerApp outlives it
                _wait_exited(serverapps, 60)
                for proc in psutil.Process().children(recursive=True):  # flwr run waits on its own
                    if "flwr" in _command(proc) and " run " in _command(proc):
                        proc.kill()
                return

    with LocalFederation(tmp_path / "federation", 2, ROOT, node_policy={}) as federation:
        procs = federation_processes(federation)
        stop = threading.Event()
        killer = threading.Thread(target=kill_the_superlink, args=(federation, stop))
        killer.start()
        try:
            federation.run(overrides, timeout=60)
        except Exception:  # flwr run loses its SuperLink too
            pass
        finally:
            stop.set()
            killer.join(timeout=10)
        assert serverapps, "no ServerApp process found under the SuperLink"
        assert _wait_exited(serverapps, 60)
        procs += federation_processes(federation)
    for orphan in orphans:  # the dead SuperLink's other children are this test's to stop
        if orphan.is_running():
            orphan.kill()
    psutil.wait_procs(orphans, timeout=10)
    assert_all_stopped([p for p in procs if p not in serverapps])
    result = json.loads(result_path.read_text())
    assert result["status"] == "interrupted", result["status"]
    assert (
        "the SuperLink did not answer" in result["error"] and "python -m fedmf_app.resume" in result["error"]
    )
    assert 1 <= len(result["rounds"]) < 50


def test_a_malformed_data_file_on_one_node_stops_the_run_naming_the_node_and_cause(tmp_path):
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
        "secure-aggregation": True,  # what the federation's strict node policy requires
        "secure-aggregation-signed-keys": True,
    }
    outcome = _run(tmp_path, 3, overrides, data_files=files)
    assert outcome.status == "failed"
    assert outcome.result_path is None and not (tmp_path / "results" / "bad").exists()
    assert "run stopped before round 1" in outcome.error
    # the server learns the node, the partition and the cause; the file's path stays in the node's log
    assert (
        "(partition 2) refused the run: DataError: <path>: holds a non-numeric feature value" in outcome.error
    )
    assert str(tmp_path) not in outcome.error
    assert "[ROUND 1]" not in outcome.log
