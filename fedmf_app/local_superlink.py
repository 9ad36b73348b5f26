"""Start, use and stop a simulation SuperLink on loopback that this process owns (by PID).

``flwr run .`` with Flower's default ``local`` connection starts a detached SuperLink that outlives
the command. Tests, sweeps and benchmarks instead use :class:`LocalSuperLink`: it starts
``flower-superlink --simulation`` in its own process group with a private ``FLWR_HOME``, runs
``flwr run`` against it, and on exit (also on error or Ctrl-C) stops exactly the processes it
started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

__all__ = ["LocalSuperLink", "format_config", "free_port"]

_CONNECTION = "fedmf-local"


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
    """Format a mapping for ``--run-config`` / ``--federation-config`` (TOML values).

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
    """A simulation SuperLink owned by this process.

    Parameters
    ----------
    flwr_home : str or Path
        Private Flower home (connection config, installed FABs); created if missing. Must be
        outside the app folder, or Flower would pack it into the next FAB.
    port : int, optional
        HTTP port of the SuperLink; a free one by default.
    startup_timeout : float
        Seconds to wait for the SuperLink to answer its health check.

    Examples
    --------
    >>> with LocalSuperLink("/tmp/flwr-home") as link:                        # doctest: +SKIP
    ...     link.run(".", {"num-server-rounds": 5}, num_supernodes=3)
    """

    def __init__(self, flwr_home: str | Path, port: int | None = None, startup_timeout: float = 30.0):
        self.flwr_home = Path(flwr_home).resolve()
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.flwr_home / "superlink.log"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Flower commands talking to this SuperLink."""
        env = os.environ.copy()
        env.update(
            FLWR_HOME=str(self.flwr_home),
            FLWR_TELEMETRY_ENABLED="0",
            FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION="1",
            FLWR_DISABLE_UPDATE_CHECK="1",
        )
        return env

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
        (self.flwr_home / "config.toml").write_text(
            f'[superlink]\ndefault = "{_CONNECTION}"\n\n'
            f'[superlink.{_CONNECTION}]\naddress = "127.0.0.1:{self.port}"\ninsecure = true\n'
        )
        command = [
            "flower-superlink", "--insecure", "--simulation", "--isolation", "subprocess",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--disable-runtime-dependency-installation",
        ]
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                command, env=self.env, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"flower-superlink exited with code {self.process.returncode}; see {self.log_path}"
                )
            if self._healthy():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"flower-superlink not healthy after {self.startup_timeout} s; see {self.log_path}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=0.5) as r:
                return 200 <= r.status < 300
        except OSError:
            return False

    def run(
        self,
        app_dir: str | Path,
        run_config: Mapping[str, Any],
        num_supernodes: int,
        timeout: float = 600.0,
        federation_config: Mapping[str, Any] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``flwr run <app_dir> --stream`` on this SuperLink; returns when the run ends.

        Parameters
        ----------
        app_dir : str or Path
            Folder with the app's ``pyproject.toml``.
        run_config : mapping
            ``--run-config`` overrides.
        num_supernodes : int
            Simulated SuperNodes.
        timeout : float
            Seconds before the command is killed (``subprocess.TimeoutExpired``).
        federation_config : mapping, optional
            Further ``--federation-config`` values, e.g. ``{"client-resources-num-cpus": 1}``.

        Returns
        -------
        subprocess.CompletedProcess
            With the streamed log in ``stdout`` (stderr merged). ``flwr run`` exits with 0 even
            when the ServerApp fails: read the run's ``result.json`` for the outcome.
        """
        federation = {"num-supernodes": num_supernodes, **(federation_config or {})}
        command = ["flwr", "run", str(app_dir), _CONNECTION, "--stream",
                   "--federation-config", format_config(federation)]
        if run_config:
            command += ["--run-config", format_config(run_config)]
        return subprocess.run(
            command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=timeout, check=False,
        )

    def stop(self) -> None:
        """Stop the SuperLink, its process group and every process it started (idempotent).

        Flower's SuperExec and simulation processes, and the Ray processes of a simulation, may
        leave the SuperLink's process group (new sessions); they are found as its descendants
        before the group is signalled and are stopped the same way: SIGTERM, up to 15 s, SIGKILL.
        """
        if self.process is None:
            return
        pgid = self.process.pid  # leader of its own session, so its group id is its pid
        try:
            descendants = psutil.Process(pgid).children(recursive=True)
        except psutil.NoSuchProcess:
            descendants = []
        _signal_group(pgid, signal.SIGTERM)
        for child in descendants:
            _signal_process(child, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        _, alive = psutil.wait_procs(descendants, timeout=15)
        _signal_group(pgid, signal.SIGKILL)
        for child in alive:
            _signal_process(child, signal.SIGKILL)
        self.process.wait(timeout=15)
        psutil.wait_procs(alive, timeout=15)
        self.process = None

    def __enter__(self) -> LocalSuperLink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_process(process: psutil.Process, sig: int) -> None:
    try:
        process.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
