"""A real federation on this machine with one command: SuperLink, one SuperNode per view, the run.

::

    python -m fedmf_app.deployment.federation --num-nodes 3 --run-config "num-server-rounds=20 seed=3"
    python -m fedmf_app.deployment.federation --num-nodes 3 --tls --auth --run-config "..."
    python -m fedmf_app.deployment.federation --data-file a.csv --data-file b.npy   # 2 SuperNodes

first loads every SuperNode's view as its ClientApp would (:func:`check_node_data`: a file that
would fail stops the command before any process starts, with one line naming the file, the cause
and the SuperNode), then starts ``flower-superlink`` (no simulation engine) and
``flower-supernode`` ``i`` with node config ``partition-id=i num-partitions=<n>`` (and
``data-file=<path>`` when given), each SuperNode in its own working folder with its own
``FLWR_HOME`` and log, all on 127.0.0.1; then ``flwr run`` streams the run; then every process
it started is stopped by PID (also on Ctrl-C, SIGTERM or an error).
It logs where ``result.json`` and the logs landed and exits with 0 only if the run completed.

With ``--tls`` it makes a test CA and SuperLink certificate (:mod:`fedmf_app.deployment.certificates`) and
every connection uses TLS; ``--auth`` adds SuperNode authentication: one key pair per SuperNode,
public keys registered with the SuperLink before the SuperNodes start.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from logging import ERROR, INFO, WARNING
from pathlib import Path
from typing import Any, TextIO

from flwr.common.config import parse_config_args
from flwr.common.logger import log

from fedmf_app.data import DataError, dataset_view_count, load_client_view
from fedmf_app.data.view_files import absolute_dataset
from fedmf_app.deployment.certificates import make_certificates, make_supernode_keys, pin_lines
from fedmf_app.deployment.superlink import (
    DEFAULT_TASK_POLL_INTERVAL,
    TASK_POLL_INTERVAL_RANGE,
    LocalSuperLink,
)
from fedmf_app.deployment.supernode import LocalSuperNode
from fedmf_app.federated.node_policy import STRICT_NODE_POLICY
from fedmf_app.options import ConfigError
from fedmf_app.registry import ALGORITHM_NAMES, data_needs, defaults, family_of, validate_run_config

__all__ = [
    "DATA_FILES",
    "DEPLOYMENT_DEFAULTS",
    "FederationOutcome",
    "LocalFederation",
    "check_node_data",
    "federation_run_config",
    "federation_size",
    "main",
    "run_timeout",
    "saved_data_files",
    "with_deployment_defaults",
]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RUN_FOLDER = re.compile(r"run folder: (\S.*)$", re.MULTILINE)
#: Seconds allowed for starting the ServerApp and the bundle on top of the rounds' own timeouts.
_STARTUP_SLACK_S = 120.0


#: Run-config values this command uses unless ``--run-config`` sets them: secure aggregation with
#: signed keys (each SuperNode's own key in ``supernode-<i>/own-key/``, the public ones in
#: ``peer-keys/``), and for paper A's algorithms their ``U`` solver in numpy (every message starts
#: a new ClientApp process, which would import numba and load the compiled solver each time);
#: :func:`with_deployment_defaults` adds them.
DEPLOYMENT_DEFAULTS: dict[str, Any] = {
    "secure-aggregation": True,
    "secure-aggregation-signed-keys": True,
    "sonmf.basis-kernel": "numpy",
}


def with_deployment_defaults(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` with the :data:`DEPLOYMENT_DEFAULTS` they do not set, of the run's family only.

    A family's key (``sonmf.basis-kernel``) is added only when the run's algorithm belongs to that
    family: the run config refuses another family's keys.

    Parameters
    ----------
    overrides : mapping
        The run-config overrides of ``--run-config``.

    Returns
    -------
    dict
    """
    algorithm = overrides.get("algorithm", defaults()["algorithm"])
    family = family_of(algorithm).name if algorithm in ALGORITHM_NAMES else None
    merged = dict(overrides)
    for key, value in DEPLOYMENT_DEFAULTS.items():
        owner = key.split(".", 1)[0] if "." in key else None
        if owner is None or owner == family:
            merged.setdefault(key, value)
    return merged


def run_timeout(cfg: Mapping[str, Any]) -> float:
    """The longest a run can take when every wait inside it times out.

    ``connect-timeout-s`` for the SuperNodes, ``round-timeout-s`` for the handshake and for each
    round, plus :data:`_STARTUP_SLACK_S`.

    Parameters
    ----------
    cfg : mapping
        Validated run config.

    Returns
    -------
    float
        Seconds.
    """
    rounds = cfg["num-server-rounds"] + 1
    return cfg["connect-timeout-s"] + rounds * cfg["round-timeout-s"] + _STARTUP_SLACK_S


def federation_run_config(num_nodes: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Run-config overrides for a federation of ``num_nodes`` SuperNodes, checked.

    Parameters
    ----------
    num_nodes : int
    overrides : mapping
        ``num-clients`` defaults to ``num_nodes``.

    Returns
    -------
    dict
        The overrides with ``num-clients`` set (what ``flwr run --run-config`` gets).

    Raises
    ------
    fedmf_app.options.ConfigError
        On an invalid run config, or ``num-clients`` different from ``num_nodes``.
    """
    merged = {"num-clients": num_nodes, **overrides}
    cfg = validate_run_config(merged)
    if cfg["num-clients"] != num_nodes:
        raise ConfigError(
            f"run config 'num-clients' = {cfg['num-clients']} but the federation has "
            f"{num_nodes} SuperNodes (one per view)"
        )
    return merged


def federation_size(
    num_nodes: int | None, data_files: Sequence[str] | None, overrides: Mapping[str, Any]
) -> int:
    """How many SuperNodes to start: ``--num-nodes``, else one per ``--data-file``, else one per
    view of run config ``dataset`` (or ``num-clients`` when it is set).

    Parameters
    ----------
    num_nodes : int or None
        ``--num-nodes``.
    data_files : sequence of str or None
        ``--data-file`` values.
    overrides : mapping
        The run-config overrides.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When nothing says how many (synthetic data without ``num-clients``).
    """
    if num_nodes is not None:
        return num_nodes
    if data_files:
        return len(data_files)
    if int(overrides.get("num-clients", 0)) > 0:
        return int(overrides["num-clients"])
    cfg = validate_run_config(overrides)
    count = dataset_view_count(cfg["dataset"], cfg["views"])
    if count is None:
        raise ValueError(
            f"how many SuperNodes? run config 'dataset' = {cfg['dataset']!r} does not say: give "
            "--num-nodes, one --data-file per SuperNode, or run config num-clients"
        )
    return count


#: The file in a federation's workdir that lists its SuperNodes' data files, one a line.
DATA_FILES = "data-files.txt"


def saved_data_files(workdir: str | Path) -> list[Path] | None:
    """The data files a federation on ``workdir`` gave its SuperNodes (``None``: none were given).

    Parameters
    ----------
    workdir : str or Path

    Returns
    -------
    list of Path or None
    """
    path = Path(workdir) / DATA_FILES
    if not path.is_file():
        return None
    return [Path(line) for line in path.read_text().splitlines() if line.strip()]


def check_node_data(num_nodes: int, overrides: Mapping[str, Any], data_files: Sequence[Path] | None) -> None:
    """Load every SuperNode's view as its ClientApp would, before any process starts.

    Parameters
    ----------
    num_nodes : int
    overrides : mapping
        Run-config overrides (validated).
    data_files : sequence of Path or None
        Node config ``data-file`` of each SuperNode, in partition order.

    Raises
    ------
    fedmf_app.data.DataError
        On the first view that would fail: the loader's one-line message (file, then cause), then
        the SuperNode and the setting that named its data.
    """
    cfg = validate_run_config(overrides)
    needs = data_needs(cfg)
    for i in range(num_nodes):
        node: dict[str, Any] = {"partition-id": i, "num-partitions": num_nodes}
        if data_files is not None:
            node["data-file"] = str(data_files[i])
        try:
            load_client_view(cfg, i, node, needs=needs)
        except DataError as exc:
            named = "its --data-file" if data_files is not None else f"view {i} of run config 'dataset'"
            raise DataError(f"{exc} (SuperNode {i}, {named}); no process was started") from exc


@dataclass
class FederationOutcome:
    """What a run of the local federation left behind.

    Attributes
    ----------
    status : str
        ``"completed"`` or ``"failed"`` (from ``result.json``; ``"failed"`` as well when the run
        ended before round 1 and wrote none).
    error : str or None
        Why it failed, for a person to read.
    result_path : Path or None
        ``result.json`` when the run got that far.
    log : str
        The streamed log of ``flwr run`` (ServerApp output included), ANSI colours removed.
    seconds : float
        Wall time of ``flwr run``.
    node_exits : list of str
        SuperNodes that exited during the run, with their exit code.
    """

    status: str
    error: str | None
    result_path: Path | None
    log: str
    seconds: float
    node_exits: list[str] = field(default_factory=list)


class LocalFederation:
    """A SuperLink and ``num_nodes`` SuperNodes on loopback, owned by this process.

    Parameters
    ----------
    workdir : str or Path
        Holds ``superlink/`` (its ``FLWR_HOME`` and log), ``supernode-<i>/`` (each SuperNode's
        working folder, ``FLWR_HOME``, log and ``own-key/``), ``peer-keys/`` (every node's public
        key) and, with TLS, ``certificates/``. Must be outside the app
        folder (Flower packs that folder into the app bundle).
    num_nodes : int
        SuperNodes, one per view.
    app_dir : str or Path
        The app (folder with ``pyproject.toml``).
    data_files : sequence of str or Path, optional
        One file per SuperNode, passed as node config ``data-file``.
    tls : bool
        TLS on every connection (test certificates made in ``workdir/certificates``).
    supernode_auth : bool
        SuperNode authentication (implies ``tls``).
    cwd : str or Path, optional
        Working folder of the SuperLink, hence of the ServerApp: a relative ``out-dir``
        resolves against it. Default: this process's working folder.
    task_poll_interval : float
        Seconds between a SuperNode's SuperExec checks for new ClientApp tasks
        (``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``, within
        :data:`~fedmf_app.deployment.superlink.TASK_POLL_INTERVAL_RANGE`; default
        :data:`~fedmf_app.deployment.superlink.DEFAULT_TASK_POLL_INTERVAL`; Flower's own is 1 s).
    node_policy : mapping
        Node-config policy keys every SuperNode gets (:mod:`fedmf_app.federated.node_policy`);
        default :data:`~fedmf_app.federated.node_policy.STRICT_NODE_POLICY`: secure aggregation
        with signed keys, signed PSI, at least 2 clients. ``{}``: the nodes follow the run config.
    """

    def __init__(
        self,
        workdir: str | Path,
        num_nodes: int,
        app_dir: str | Path,
        *,
        data_files: Sequence[str | Path] | None = None,
        tls: bool = False,
        supernode_auth: bool = False,
        cwd: str | Path | None = None,
        task_poll_interval: float = DEFAULT_TASK_POLL_INTERVAL,
        node_policy: Mapping[str, Any] = STRICT_NODE_POLICY,
        resume_run_id: int | None = None,
    ) -> None:
        if num_nodes < 1:
            raise ValueError(f"num_nodes = {num_nodes} must be >= 1")
        if data_files is not None and len(data_files) != num_nodes:
            raise ValueError(f"{len(data_files)} data files for {num_nodes} SuperNodes: give one each")
        low, high = TASK_POLL_INTERVAL_RANGE
        if not low <= task_poll_interval <= high:
            raise ValueError(
                f"task poll interval (--task-poll-interval) = {task_poll_interval} s is outside "
                f"{low:g}..{high:g} s, the range Flower 1.42 accepts for FLWR_SUPEREXEC_TASK_POLL_INTERVAL"
            )
        self.workdir = Path(workdir).resolve()
        self.num_nodes = num_nodes
        self.app_dir = Path(app_dir).resolve()
        self.data_files = [Path(f).resolve() for f in data_files] if data_files else None
        self.tls = tls or supernode_auth
        self.supernode_auth = supernode_auth
        self.cwd = cwd
        self.task_poll_interval = task_poll_interval
        self.node_policy = dict(node_policy)
        self.resume_run_id = resume_run_id
        self.superlink: LocalSuperLink | None = None
        self.supernodes: list[LocalSuperNode] = []

    def node_config(self, index: int) -> dict[str, Any]:
        """Node config of SuperNode ``index``: its partition, its data file if any, its own
        long-term private key (``signing-key``, in its own folder ``supernode-<i>/own-key/``: no
        node is given another's) and the folder of every node's public key (``peer-keys``,
        ``peer-keys/``: public keys only) for signed keys, its policy (:attr:`node_policy`),
        where it keeps its state (``state-dir``, so that a federation restarted on the same
        ``workdir`` can resume a run), the fingerprints of the peers' keys it trusts
        (``peer-fingerprints``, ``supernode-<i>/peer-fingerprints.txt``) and, after a sample-ID
        alignment, its final clusters per ID (``labels-file``); when resuming, the run it may
        continue (``resume-run-id``)."""
        config: dict[str, Any] = {"partition-id": index, "num-partitions": self.num_nodes}
        if self.data_files is not None:
            config["data-file"] = str(self.data_files[index])
        config["signing-key"] = str(self._own_key(index))
        config["peer-keys"] = str(self.workdir / "peer-keys")
        config["peer-fingerprints"] = str(self.workdir / f"supernode-{index}" / "peer-fingerprints.txt")
        config.update(self.node_policy)
        config["state-dir"] = str(self.workdir / f"supernode-{index}" / "state")
        config["labels-file"] = str(self.workdir / f"supernode-{index}" / "labels.csv")
        if self.resume_run_id is not None:
            # as a string: a run id is a 64-bit unsigned integer, a node-config integer is signed
            config["resume-run-id"] = str(self.resume_run_id)
        return config

    def _own_key(self, index: int) -> Path:
        return self.workdir / f"supernode-{index}" / "own-key" / f"supernode-{index}.key"

    def start(self) -> LocalFederation:
        """Start the SuperLink (and wait until it is healthy), then the SuperNodes.

        Returns
        -------
        LocalFederation
            ``self``; on any error everything started so far is stopped before it propagates.
        """
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.data_files is not None:
            # each node's own file, for python -m fedmf_app.resume --deployment on this workdir
            (self.workdir / DATA_FILES).write_text("".join(f"{f}\n" for f in self.data_files))
        certs = self.workdir / "certificates"
        tls_files = make_certificates(certs) if self.tls else None
        # one long-term key pair per SuperNode: it signs the node's secure-aggregation key and,
        # with SuperNode authentication, is the key registered with the SuperLink
        pairs = make_supernode_keys(self.workdir / "peer-keys", self.num_nodes)
        pins = pin_lines(pairs)
        for i, (private, public) in enumerate(pairs):
            own = self._own_key(i)  # each node's private key in its own folder only
            own.parent.mkdir(parents=True, exist_ok=True)
            private.replace(own)
            pairs[i] = (own, public)
            # the fingerprints each organisation would agree with the others out of band
            Path(self.node_config(i)["peer-fingerprints"]).write_text(pins)
        keys = pairs if self.supernode_auth else None
        self.superlink = LocalSuperLink(
            self.workdir / "superlink",
            simulation=False,
            tls=tls_files,
            supernode_auth=self.supernode_auth,
            cwd=self.cwd,
        ).start()
        log(
            INFO,
            "SuperLink on %s (pid %d, %s)",
            self.superlink.address,
            self.superlink.process.pid if self.superlink.process else -1,
            "TLS" + (" + SuperNode authentication" if self.supernode_auth else "")
            if self.tls
            else "insecure",
        )
        for i in range(self.num_nodes):
            if keys is not None:
                self.superlink.register_supernode(keys[i][1])
            node = LocalSuperNode(
                f"SuperNode {i}",
                self.superlink.address,
                self.workdir / f"supernode-{i}",
                self.node_config(i),
                root_certificates=tls_files.ca_cert if tls_files else None,
                auth_private_key=keys[i][0] if keys is not None else None,
                task_poll_interval=self.task_poll_interval,
            )
            self.supernodes.append(node.start())
            log(
                INFO,
                "%s (pid %d): %s",
                node.name,
                node.process.pid if node.process else -1,
                " ".join(f"{k}={v}" for k, v in node.node_config.items()),
            )

    def run(
        self,
        run_config: Mapping[str, Any],
        timeout: float | None = None,
        echo: TextIO | None = None,
    ) -> FederationOutcome:
        """Run the app on this federation (``flwr run --stream``) and collect the outcome.

        Parameters
        ----------
        run_config : mapping
            Run-config overrides; ``num-clients`` defaults to the number of SuperNodes.
        timeout : float, optional
            Seconds before ``flwr run`` is stopped; default :func:`run_timeout` of the config.
        echo : text stream, optional
            Where to stream the run's log as it arrives.

        Returns
        -------
        FederationOutcome

        Raises
        ------
        fedmf_app.options.ConfigError
            On an invalid run config, or ``num-clients`` different from the number of SuperNodes.
        subprocess.TimeoutExpired
            When ``flwr run`` exceeds ``timeout``.
        """
        if self.superlink is None:
            raise RuntimeError("start() the federation first")
        overrides = federation_run_config(self.num_nodes, run_config)
        cfg = validate_run_config(overrides)
        node_exits: list[str] = []
        done = threading.Event()
        watcher = threading.Thread(target=self._watch_nodes, args=(done, node_exits), daemon=True)
        watcher.start()
        started = time.monotonic()
        try:
            proc = self.superlink.run(self.app_dir, overrides, timeout=timeout or run_timeout(cfg), echo=echo)
        finally:
            done.set()
            watcher.join(timeout=5)
        text = _ANSI.sub("", proc.stdout)
        outcome = _outcome(text, time.monotonic() - started)
        outcome.node_exits = node_exits
        return outcome

    def _watch_nodes(self, done: threading.Event, exits: list[str]) -> None:
        """Log each SuperNode that exits while the run is on (the server's timeouts end the run)."""
        reported: set[int] = set()
        while not done.wait(0.5):
            for i, node in enumerate(self.supernodes):
                code = node.exit_code()
                if code is not None and i not in reported:
                    reported.add(i)
                    exits.append(f"{node.name} exited with code {code} (log: {node.log_path})")
                    log(WARNING, "%s", exits[-1])

    def stop(self) -> None:
        """Stop every SuperNode and the SuperLink, side by side (idempotent)."""
        stops = [node.stop for node in self.supernodes]
        if self.superlink is not None:
            stops.append(self.superlink.stop)
        if stops:
            with concurrent.futures.ThreadPoolExecutor(len(stops)) as pool:
                for done in [pool.submit(stop) for stop in stops]:
                    done.result()

    def __enter__(self) -> LocalFederation:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _outcome(text: str, seconds: float) -> FederationOutcome:
    """Read the outcome from ``result.json``, or else the first error the ServerApp logged."""
    matches = list(_RUN_FOLDER.finditer(text))
    match = matches[-1] if matches else None
    if match is not None:
        path = Path(match.group(1).strip()) / "result.json"
        if path.exists():
            result = json.loads(path.read_text())
            return FederationOutcome(result["status"], result["error"], path, text, seconds)
    errors = [line.split(":", 1)[-1].strip() for line in text.splitlines() if "ERROR" in line]
    errors = [e for e in errors if e]
    error = errors[0] if errors else "the run ended without a result (see the log)"
    return FederationOutcome("failed", error, None, text, seconds)


class _Terminated(Exception):
    """SIGTERM arrived."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code (0: run completed)."""
    parser = argparse.ArgumentParser(
        prog="python -m fedmf_app.deployment.federation",
        description="Run the app on a SuperLink and one SuperNode per view, on this machine.",
    )
    parser.add_argument(
        "--num-nodes",
        type=int,
        default=None,
        help="SuperNodes, one per view (default: one per --data-file, else one per view of run "
        "config dataset)",
    )
    parser.add_argument(
        "--run-config",
        default="",
        help='run-config overrides, as for flwr run, e.g. "num-server-rounds=5 seed=3"',
    )
    parser.add_argument(
        "--data-file",
        action="append",
        default=None,
        help="node config data-file of SuperNode i (give it once per SuperNode)",
    )
    parser.add_argument("--tls", action="store_true", help="TLS with test certificates")
    parser.add_argument("--auth", action="store_true", help="SuperNode authentication (implies --tls)")
    parser.add_argument(
        "--permissive-nodes",
        action="store_true",
        help="give the SuperNodes no policy (they follow the run config; default: each refuses a run "
        "without secure aggregation, signed keys and signed PSI, or with fewer than 2 clients)",
    )
    parser.add_argument("--app-dir", default=".", help="the app folder (default: .)")
    parser.add_argument(
        "--workdir",
        default=None,
        help="folder for logs, certificates and SuperNode folders (default: a new temporary folder, kept)",
    )
    parser.add_argument(
        "--task-poll-interval",
        type=float,
        default=DEFAULT_TASK_POLL_INTERVAL,
        help="seconds between a SuperNode's checks for a new ClientApp task "
        f"(FLWR_SUPEREXEC_TASK_POLL_INTERVAL, {TASK_POLL_INTERVAL_RANGE[0]:g} to "
        f"{TASK_POLL_INTERVAL_RANGE[1]:g}; default {DEFAULT_TASK_POLL_INTERVAL:g}, Flower's own 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds before the run is stopped (default: from the run config's "
        "connect-timeout-s and round-timeout-s)",
    )
    args = parser.parse_args(argv)
    try:
        overrides = with_deployment_defaults(parse_config_args([args.run_config]) if args.run_config else {})
        if "dataset" in overrides:
            overrides["dataset"] = absolute_dataset(str(overrides["dataset"]))
        num_nodes = federation_size(args.num_nodes, args.data_file, overrides)
        overrides = federation_run_config(num_nodes, overrides)
        if args.data_file is not None and len(args.data_file) != num_nodes:
            raise ValueError(f"{len(args.data_file)} --data-file for {num_nodes} SuperNodes: give one each")
        data_files = [Path(f).expanduser().resolve() for f in args.data_file] if args.data_file else None
        if data_files is not None:
            # the run config names the same files (the server does not read them): the method's
            # choices for real data, not those of the default synthetic data
            overrides.setdefault("dataset", ",".join(map(str, data_files)))
        check_node_data(num_nodes, overrides, data_files)
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="fedmf-federation-"))
        federation = LocalFederation(
            workdir,
            num_nodes,
            args.app_dir,
            data_files=data_files,
            tls=args.tls,
            supernode_auth=args.auth,
            task_poll_interval=args.task_poll_interval,
            node_policy={} if args.permissive_nodes else STRICT_NODE_POLICY,
        )
    except ValueError as exc:
        log(ERROR, "%s", exc)
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with federation:
            outcome = federation.run(overrides, timeout=args.timeout, echo=sys.stdout)
    except KeyboardInterrupt:
        log(ERROR, "interrupted; stopped every process this command started")
        return 130
    except _Terminated:
        log(ERROR, "terminated; stopped every process this command started")
        return 143
    except Exception as exc:
        log(ERROR, "%s; stopped every process this command started (logs in %s)", exc, workdir)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    log(INFO, "logs: %s (superlink/superlink.log, supernode-<i>/supernode.log)", workdir)
    for line in outcome.node_exits:
        log(WARNING, "%s", line)
    if outcome.result_path is not None:
        log(INFO, "results: %s", outcome.result_path)
    if outcome.status != "completed":
        log(ERROR, "run %s: %s", outcome.status, outcome.error)
        return 1
    log(INFO, "run completed in %.1f s", outcome.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
