"""The local federation's parts without a federation: certificates and keys, owned processes, the
ClientApp's data errors, the command line's checks, and the command line stopped by SIGTERM."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_ssh_private_key
from flwr.cli.supernode.register import try_load_public_key
from flwr.common import Context, RecordDict

from fedmf_app.client_app import client_fn
from fedmf_app.deployment.certificates import make_certificates, make_supernode_keys
from fedmf_app.deployment.federation import federation_run_config, main, with_deployment_defaults
from fedmf_app.deployment.processes import OwnedProcess, _still_running
from fedmf_app.federated.node_errors import NodeError
from fedmf_app.options import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_server_certificate_is_signed_by_the_ca_for_loopback_and_given_hosts(tmp_path):
    files = make_certificates(tmp_path, hosts=("superlink.example.org", "10.0.0.7"))
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    server = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    server.verify_directly_issued_by(ca)
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "superlink.example.org"}
    assert {str(a) for a in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.0.0.7"}
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_supernode_keys_are_p384_pairs_that_flower_accepts(tmp_path):
    pairs = make_supernode_keys(tmp_path, 2)
    assert [p.name for pair in pairs for p in pair] == [
        "supernode-0.key",
        "supernode-0.pub",
        "supernode-1.key",
        "supernode-1.pub",
    ]
    for private, public in pairs:
        key = load_ssh_private_key(private.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1"
        assert try_load_public_key(public)  # what `flwr supernode register` runs
    assert pairs[0][1].read_bytes() != pairs[1][1].read_bytes()


def test_owned_process_stop_ends_descendants_that_left_its_group(tmp_path):
    code = (
        "import subprocess, time; subprocess.Popen(['sleep', '60'], start_new_session=True); time.sleep(60)"
    )
    proc = OwnedProcess("test", [sys.executable, "-c", code], {}, tmp_path / "log")
    deadline = time.monotonic() + 20
    children = []
    while not children and time.monotonic() < deadline:
        children = psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.05)
    assert children and os.getsid(children[0].pid) != os.getsid(proc.pid)  # left the group
    proc.stop()
    assert proc.exit_code() is None  # stopped and forgotten
    assert not psutil.pid_exists(proc.pid)
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert not alive


def test_a_stopped_descendant_that_nobody_reaped_yet_counts_as_gone(tmp_path):
    # a grandchild that has exited while its parent does not reap it stays a zombie: psutil's
    # wait_procs waits for the reaping (after its parent exits, up to the init process)
    code = (
        "import subprocess, time; subprocess.Popen(['true']); subprocess.Popen(['sleep', '60']); "
        "time.sleep(60)"
    )
    proc = OwnedProcess("test", [sys.executable, "-c", code], {}, tmp_path / "log")
    try:
        deadline = time.monotonic() + 20
        children = []
        while time.monotonic() < deadline:
            children = psutil.Process(proc.pid).children()
            if len(children) == 2 and any(c.status() == psutil.STATUS_ZOMBIE for c in children):
                break
            time.sleep(0.05)
        zombie = next(c for c in children if c.status() == psutil.STATUS_ZOMBIE)
        sleeping = next(c for c in children if c.status() != psutil.STATUS_ZOMBIE)
        assert _still_running([zombie, sleeping], timeout=0) == [sleeping]
        assert psutil.wait_procs([zombie], timeout=0)[1] == [zombie]  # what it used to wait for
    finally:
        proc.stop()


def _context(node_config, **run_config):
    return Context(
        run_id=1,
        node_id=4242,
        node_config=node_config,
        state=RecordDict(),
        run_config={"num-clients": 3, **run_config},
    )


@pytest.mark.parametrize(
    ("problem", "cause"),
    [("missing", "no such file"), ("folder", "no such file"), ("malformed", "not a readable .npy array")],
)
def test_clientapp_data_errors_name_the_node_and_the_cause_and_log_the_file(tmp_path, caplog, problem, cause):
    path = tmp_path / "view.npy"
    if problem == "folder":
        path.mkdir()
    elif problem == "malformed":
        path.write_text("not an array")
    with pytest.raises(NodeError) as info:
        client_fn(_context({"partition-id": 1, "num-partitions": 3, "data-file": str(path)}))
    message = str(info.value)  # what the server sees: the cause, not the node's paths or config
    assert message.startswith(f"SuperNode 4242 (partition 1) refused the run: DataError: <path>: {cause}")
    assert str(tmp_path) not in message and "data-file=" not in message
    assert str(path) in caplog.text  # the node's own log names the file


def test_clientapp_rejects_a_partition_without_a_view_naming_the_node():
    with pytest.raises(
        NodeError, match=r"SuperNode 4242 \(partition 5\) refused the run: .*partition-id 5 has no view"
    ):
        client_fn(_context({"partition-id": 5, "num-partitions": 3}))


def test_clientapp_loads_a_good_data_file(tmp_path):
    np.save(tmp_path / "view.npy", np.abs(np.random.default_rng(0).standard_normal((30, 8))))
    client = client_fn(
        _context({"partition-id": 0, "data-file": str(tmp_path / "view.npy")}, **{"sonmf.rank": 2})
    )
    assert client is not None


def test_run_config_must_have_one_client_per_supernode():
    assert federation_run_config(3, {"seed": 2}) == {"num-clients": 3, "seed": 2}
    with pytest.raises(ConfigError, match="'num-clients' = 2 but the federation has 3 SuperNodes"):
        federation_run_config(3, {"num-clients": 2})
    with pytest.raises(ConfigError, match="'sonmf.rank' = 30 is invalid"):
        federation_run_config(3, {"sonmf.rank": 30})


def test_deployment_defaults_add_only_the_run_familys_keys():
    assert with_deployment_defaults({})["sonmf.basis-kernel"] == "numpy"  # fedsonmf, the default
    imk = with_deployment_defaults({"algorithm": "fmvc-imk", "num-clusters": 3})
    assert "sonmf.basis-kernel" not in imk and imk["secure-aggregation-signed-keys"] is True
    federation_run_config(3, imk)  # a valid run config (a sonmf key would be refused)
    mine = with_deployment_defaults({"secure-aggregation": False, "sonmf.basis-kernel": "compiled"})
    assert mine["secure-aggregation"] is False and mine["sonmf.basis-kernel"] == "compiled"


@pytest.mark.parametrize(
    "argv",
    [
        ["--num-nodes", "3", "--run-config", "num-clients=2"],
        ["--num-nodes", "2", "--data-file", "a.npy"],
        ["--num-nodes", "3", "--run-config", "nonsense-key=1"],
        ["--num-nodes", "3", "--task-poll-interval", "0.001"],
        ["--num-nodes", "3", "--task-poll-interval", "61"],
    ],
)
def test_command_line_rejects_bad_arguments_before_starting_anything(argv):
    assert main(argv) == 2


@pytest.mark.e2e
def test_command_line_stops_everything_it_started_on_sigterm(tmp_path):
    command = [
        sys.executable,
        "-m",
        "fedmf_app.deployment.federation",
        "--num-nodes",
        "2",
        "--app-dir",
        str(ROOT),
        "--workdir",
        str(tmp_path / "work"),
        "--run-config",
        f'num-server-rounds=50 out-dir="{tmp_path}"',
    ]
    cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pids, lines = [], []
    deadline = time.monotonic() + 60
    for line in cli.stdout:
        lines.append(line)
        pids += [int(p) for p in re.findall(r"\(pid (\d+)", line)]
        if "SuperNode 1 (pid" in line or time.monotonic() > deadline:
            break
    assert len(pids) == 3, "".join(lines)
    time.sleep(2)  # let Flower start its own child processes
    owned = [psutil.Process(p) for p in pids]
    owned += [c for p in owned for c in p.children(recursive=True)]
    cli.send_signal(signal.SIGTERM)
    out, _ = cli.communicate(timeout=60)
    assert cli.returncode == 143, "".join(lines) + out
    assert "terminated; stopped every process this command started" in out
    alive = [p for p in owned if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive


def test_clientapp_message_path_does_not_import_torch():
    # a deployed SuperNode starts a fresh ClientApp process for every message: an import of
    # torch there (several seconds), numba, scipy.optimize or scipy.sparse (tenths) would be paid
    # by every node in every round (paper A's and B's clients; the numpy U kernel, the
    # federation's default); scipy.sparse and scipy.io are imported where a sparse view or a
    # MATLAB file needs them
    code = (
        "import sys, fedmf_app.client_app; from fedmf_app.registry import client_class; "
        "client_class('fedsonmf'); client_class('fmvc-imk'); "
        "print(sorted(set(sys.modules) & {'torch', 'torch_geometric', 'sklearn', 'matplotlib', "
        "'numba', 'scipy.optimize', 'scipy.sparse', 'scipy.sparse.csgraph', 'scipy.io'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _imported(code: str, modules: set[str]) -> list[str]:
    """Which of ``modules`` a fresh Python process has loaded after running ``code``."""
    probe = (
        f"import json, sys; {code}; print(json.dumps(sorted(set(sys.modules) & set({sorted(modules)!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_iai_handshake_process_loads_no_torch_and_training_no_torch_geometric():
    # fmvc-iai's handshake needs neither torch (about 1.6 s of CPU to import) nor the networks;
    # its training stages need torch but not torch-geometric (about 2.3 s more), which only the
    # sampled subgraphs of a large graph load
    heavy = {"torch", "torch_geometric"}
    assert _imported("from fedmf_app.registry import client_class; client_class('fmvc-iai')", heavy) == []
    assert _imported("import fedmf_app.methods.iai.client_updates", heavy) == ["torch"]
    sampled = (
        "import torch; from fedmf_app.methods.iai.graph_autoencoder import _sampled_subgraphs; "
        "next(_sampled_subgraphs(torch.tensor([[0, 1], [1, 0]]), 4, 2, 0))"
    )
    assert _imported(sampled, heavy) == ["torch", "torch_geometric"]


def test_iai_training_loads_no_torch_compiler():
    # torch.optim.Adam imports torch._dynamo on first use (about 1.6-2 s of CPU, as much as torch
    # itself), in every process that trains; the autoencoders' own Adam does not
    training = (
        "import numpy as np; from fedmf_app.methods.iai.graph_autoencoder import "
        "GraphAutoencoder, pretrain_autoencoder, train_gae; "
        "from fedmf_app.methods.iai.params import GAEParams; "
        "x = np.random.default_rng(0).normal(size=(20, 3)); "
        "pretrain_autoencoder(x, (4,), 2, 1, 10, 1e-3, 8, seed=0); "
        "p = GAEParams(hidden=4, heads=1, out_dim=4, decoder_hidden=8, epochs=2); "
        "train_gae(GraphAutoencoder(3, 2, p), x, np.array([[0, 1, 2], [1, 2, 0]]), None, p, 0)"
    )
    assert _imported(training, {"torch", "torch._dynamo", "torch_geometric"}) == ["torch"]
