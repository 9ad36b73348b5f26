"""Start, use and stop a SuperLink on loopback that this process owns (by PID).

``flwr run .`` with Flower's default ``local`` connection starts a detached SuperLink that outlives
the command. Tests, sweeps, benchmarks and the local federation (:mod:`fedmf_app.deployment.federation`)
instead use :class:`LocalSuperLink`: it starts ``flower-superlink`` (with ``--simulation`` for the
simulation engine, without it for real SuperNodes; optionally with TLS and SuperNode
authentication) in its own process group with a private ``FLWR_HOME``, runs ``flwr run`` against
it, and on exit (also on error or Ctrl-C) stops exactly the processes it started.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from fedmf_app.deployment.app_folder import stage_app
from fedmf_app.deployment.certificates import TlsFiles
from fedmf_app.deployment.processes import OwnedProcess

__all__ = [
    "DEFAULT_TASK_POLL_INTERVAL",
    "TASK_POLL_INTERVAL_RANGE",
    "LocalSuperLink",
    "flower_env",
    "format_config",
    "free_port",
]

#: Seconds between a SuperExec's checks for a new task (``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``):
#: the local SuperNodes' (a ClientApp per message) and the local SuperLink's (the ServerApp of each
#: run). [A] 0.3 s (Flower's own default is 1 s): on one machine a poll every 0.1 s costs the
#: SuperNodes, their SuperExecs and the SuperLink CPU that the ClientApps need, and 1 s delays
#: every message's ClientApp by up to 1 s (docs/deployment.md, "Polling less").
DEFAULT_TASK_POLL_INTERVAL = 0.3

#: The values Flower 1.42's SuperExec accepts for it (``flwr/supercore/superexec/run_superexec.py``).
TASK_POLL_INTERVAL_RANGE = (0.01, 60.0)

_CONNECTION = "fedmf-local"


def flower_env(flwr_home: str | Path) -> dict[str, str]:
    """This process's environment for a Flower command with its own ``FLWR_HOME``.

    Telemetry, update checks and runtime dependency installation are off.

    Parameters
    ----------
    flwr_home : str or Path

    Returns
    -------
    dict
    """
    env = os.environ.copy()
    env.update(
        FLWR_HOME=str(flwr_home),
        FLWR_TELEMETRY_ENABLED="0",
        FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION="1",
        FLWR_DISABLE_UPDATE_CHECK="1",
    )
    return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now.

    Returns
    -------
    int
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def format_config(values: Mapping[str, Any]) -> str:
    """Format a mapping for ``--run-config`` / ``--federation-config`` / ``--node-config``.

    Parameters
    ----------
    values : mapping

    Returns
    -------
    str
        E.g. ``'num-server-rounds=5 dataset="synthetic" diagnostics=true'``.
    """
    parts = []
    for key, value in values.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            text = repr(value)
        parts.append(f"{key}={text}")
    return " ".join(parts)


class LocalSuperLink:
    """A SuperLink owned by this process.

    Parameters
    ----------
    flwr_home : str or Path
        Private Flower home (connection config, installed FABs, the SuperLink's log); created if
        missing. Must be outside the app folder, or Flower would pack it into the next FAB.
    port : int, optional
        HTTP port of the SuperLink (Fleet, Control and health on one port in Flower 1.42); a free
        one by default.
    startup_timeout : float
        Seconds to wait for the SuperLink to answer its health check.
    simulation : bool
        Run ``flwr run`` on Flower's simulation engine (True) or wait for real SuperNodes (False).
    tls : TlsFiles, optional
        Serve over TLS with these files (otherwise ``--insecure``).
    supernode_auth : bool
        Accept only SuperNodes whose public key was registered (:meth:`register_supernode`);
        needs ``tls``.
    cwd : str or Path, optional
        Working folder of the SuperLink and so of the ServerApp: a relative ``out-dir`` resolves
        against it. Default: this process's working folder.
    extra_env : mapping, optional
        Further environment of the SuperLink and its runs (e.g. the simulated nodes' node config,
        :data:`fedmf_app.client_app.NODE_CONFIG_ENV`).

    Examples
    --------
    >>> with LocalSuperLink("/tmp/flwr-home") as link:                        # doctest: +SKIP
    ...     link.run(".", {"num-server-rounds": 5}, num_supernodes=3)
    """

    def __init__(
        self,
        flwr_home: str | Path,
        port: int | None = None,
        startup_timeout: float = 30.0,
        *,
        simulation: bool = True,
        tls: TlsFiles | None = None,
        supernode_auth: bool = False,
        cwd: str | Path | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        if supernode_auth and tls is None:
            raise ValueError("SuperNode authentication needs TLS (Flower refuses it over plain HTTP)")
        self.flwr_home = Path(flwr_home).resolve()
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.simulation = simulation
        self.tls = tls
        self.supernode_auth = supernode_auth
        self.cwd = Path(cwd).resolve() if cwd is not None else None
        self.extra_env = dict(extra_env or {})
        self.process: OwnedProcess | None = None
        self.command: list[str] = []
        self.log_path = self.flwr_home / "superlink.log"

    @property
    def address(self) -> str:
        """``host:port`` that SuperNodes and ``flwr`` connect to."""
        return f"127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Flower commands talking to this SuperLink (and for the SuperLink itself,
        whose SuperExec starts each run's ServerApp within :data:`DEFAULT_TASK_POLL_INTERVAL` s)."""
        poll = {"FLWR_SUPEREXEC_TASK_POLL_INTERVAL": str(DEFAULT_TASK_POLL_INTERVAL)}
        return {**flower_env(self.flwr_home), **poll, **self.extra_env}

    def start(self) -> LocalSuperLink:
        """Start the SuperLink and wait until it is healthy.

        Returns
        -------
        LocalSuperLink
            ``self``.

        Raises
        ------
        RuntimeError
            If it exits or does not become healthy within ``startup_timeout``.
        """
        self.flwr_home.mkdir(parents=True, exist_ok=True)
        security = (
            "insecure = true" if self.tls is None else f'root-certificates = "{self.tls.ca_cert.resolve()}"'
        )
        (self.flwr_home / "config.toml").write_text(
            f'[superlink]\ndefault = "{_CONNECTION}"\n\n'
            f'[superlink.{_CONNECTION}]\naddress = "{self.address}"\n{security}\n'
        )
        command = [
            "flower-superlink",
            "--isolation",
            "subprocess",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--disable-runtime-dependency-installation",
        ]
        if self.simulation:
            command.append("--simulation")
        if self.tls is None:
            command.append("--insecure")
        else:
            command += [
                "--ssl-certfile",
                str(self.tls.server_cert),
                "--ssl-keyfile",
                str(self.tls.server_key),
                "--ssl-ca-certfile",
                str(self.tls.ca_cert),
            ]
        if self.supernode_auth:
            command.append("--enable-supernode-auth")
        self.command = command
        self.process = OwnedProcess("SuperLink", command, self.env, self.log_path, cwd=self.cwd)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self.process.exit_code()
            if code is not None:
                self.stop()
                raise RuntimeError(f"flower-superlink exited with code {code}; see {self.log_path}")
            if self._healthy():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"flower-superlink not healthy after {self.startup_timeout} s; see {self.log_path}"
        )

    def _healthy(self) -> bool:
        scheme = "http" if self.tls is None else "https"
        context = None if self.tls is None else ssl.create_default_context(cafile=str(self.tls.ca_cert))
        try:
            with urllib.request.urlopen(
                f"{scheme}://{self.address}/health", timeout=0.5, context=context
            ) as r:
                return 200 <= r.status < 300
        except OSError:
            return False

    def register_supernode(self, public_key: str | Path, timeout: float = 60.0) -> None:
        """Register a SuperNode's public key (``flwr supernode register``).

        Parameters
        ----------
        public_key : str or Path
            OpenSSH public key (EC, NIST curve).
        timeout : float
            Seconds before the command is killed.

        Raises
        ------
        RuntimeError
            When Flower refuses the key.
        """
        proc = subprocess.run(
            ["flwr", "supernode", "register", str(public_key), _CONNECTION],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"registering SuperNode key {public_key} failed: {proc.stdout.strip()}")

    def run(
        self,
        app_dir: str | Path,
        run_config: Mapping[str, Any],
        num_supernodes: int | None = None,
        timeout: float = 600.0,
        federation_config: Mapping[str, Any] | None = None,
        echo: TextIO | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``flwr run <app_dir> --stream`` on this SuperLink; returns when the run ends.

        ``flwr run`` is given a copy of the files Flower packs from ``app_dir``
        (:func:`~fedmf_app.deployment.app_folder.stage_app`, in ``flwr_home``): the same app
        bundle, without Flower walking a virtual environment inside the app folder.

        Parameters
        ----------
        app_dir : str or Path
            Folder with the app's ``pyproject.toml``.
        run_config : mapping
            ``--run-config`` overrides.
        num_supernodes : int, optional
            Simulated SuperNodes (simulation only; a deployment uses the SuperNodes connected).
        timeout : float
            Seconds before the command is stopped (``subprocess.TimeoutExpired``).
        federation_config : mapping, optional
            Further ``--federation-config`` values, e.g. ``{"client-resources-num-cpus": 1}``.
        echo : text stream, optional
            Also write the streamed log there, line by line, as it arrives.

        Returns
        -------
        subprocess.CompletedProcess
            With the streamed log in ``stdout`` (stderr merged). ``flwr run`` exits with 0 even
            when the ServerApp fails: read the run's ``result.json`` for the outcome.
        """
        federation = dict(federation_config or {})
        if num_supernodes is not None:
            federation["num-supernodes"] = num_supernodes
        app = stage_app(app_dir, self.flwr_home / "app")
        command = ["flwr", "run", str(app), _CONNECTION, "--stream"]
        if federation:
            command += ["--federation-config", format_config(federation)]
        if run_config:
            command += ["--run-config", format_config(run_config)]
        return _run_streaming(command, self.env, timeout, echo)

    def stop(self) -> None:
        """Stop the SuperLink, its process group and every process it started (idempotent).

        Flower's SuperExec and ServerApp processes, and the Ray processes of a simulation, may
        leave the SuperLink's process group; :meth:`OwnedProcess.stop` finds them as its
        descendants before signalling.
        """
        if self.process is not None:
            self.process.stop()
            self.process = None

    def __enter__(self) -> LocalSuperLink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _run_streaming(
    command: list[str], env: Mapping[str, str], timeout: float, echo: TextIO | None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in its own session, collect (and echo) its output, stop it on timeout.

    Raises
    ------
    subprocess.TimeoutExpired
        After ``timeout`` seconds; the command and its process group are stopped first.
    """
    proc = subprocess.Popen(
        command,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if echo is not None:
                echo.write(line)
                echo.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        reader.join(timeout=5)
        raise subprocess.TimeoutExpired(command, timeout, output="".join(lines)) from None
    except BaseException:
        _stop_group(proc)
        raise
    reader.join(timeout=5)
    return subprocess.CompletedProcess(command, proc.returncode, "".join(lines), None)


def _stop_group(proc: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue
