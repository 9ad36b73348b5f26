"""A real Flower SuperNode on this machine, owned (and stopped) by this process."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedmf_app.deployment.processes import OwnedProcess
from fedmf_app.deployment.superlink import (
    DEFAULT_TASK_POLL_INTERVAL,
    flower_env,
    format_config,
    free_port,
)

__all__ = ["LocalSuperNode"]


class LocalSuperNode:
    """``flower-supernode`` with its own working folder, ``FLWR_HOME``, log and node config.

    Its processes run with ``OMP_NUM_THREADS=1`` (and the MKL/OpenBLAS equivalents).

    Parameters
    ----------
    name : str
        For messages, e.g. ``"SuperNode 1"``.
    superlink_address : str
        ``host:port`` of the SuperLink.
    workdir : str or Path
        This SuperNode's working folder (created); holds ``supernode.log`` and ``flwr-home/``.
    node_config : mapping
        ``--node-config`` values, e.g. ``{"partition-id": 1, "num-partitions": 3}``.
    root_certificates : Path, optional
        CA certificate to verify the SuperLink's TLS certificate (otherwise ``--insecure``).
    auth_private_key : Path, optional
        This SuperNode's authentication key (needs ``root_certificates``).
    task_poll_interval : float
        Seconds between the SuperNode's SuperExec looking for new ClientApp tasks
        (``FLWR_SUPEREXEC_TASK_POLL_INTERVAL``, within
        :data:`~fedmf_app.deployment.superlink.TASK_POLL_INTERVAL_RANGE`; Flower's default is 1 s).
    """

    def __init__(
        self,
        name: str,
        superlink_address: str,
        workdir: str | Path,
        node_config: Mapping[str, Any],
        root_certificates: Path | None = None,
        auth_private_key: Path | None = None,
        task_poll_interval: float = DEFAULT_TASK_POLL_INTERVAL,
    ) -> None:
        self.name = name
        self.workdir = Path(workdir).resolve()
        self.node_config = dict(node_config)
        self.log_path = self.workdir / "supernode.log"
        command = [
            "flower-supernode",
            "--superlink",
            superlink_address,
            "--port",
            str(free_port()),
            "--node-config",
            format_config(self.node_config),
        ]
        command += (
            ["--insecure"] if root_certificates is None else ["--root-certificates", str(root_certificates)]
        )
        if auth_private_key is not None:
            command += ["--auth-supernode-private-key", str(auth_private_key)]
        self.command = command
        self.env = flower_env(self.workdir / "flwr-home")
        # several ClientApp processes share the machine: one BLAS/OpenMP thread each
        self.env.update(
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            FLWR_SUPEREXEC_TASK_POLL_INTERVAL=str(task_poll_interval),
        )
        self.process: OwnedProcess | None = None

    def start(self) -> LocalSuperNode:
        """Start the SuperNode (it connects to the SuperLink by itself).

        Returns
        -------
        LocalSuperNode
            ``self``.
        """
        self.process = OwnedProcess(self.name, self.command, self.env, self.log_path, cwd=self.workdir)
        return self

    def exit_code(self) -> int | None:
        """Its exit code, or ``None`` while it runs or before it started."""
        return None if self.process is None else self.process.exit_code()

    def kill(self) -> None:
        """SIGKILL the SuperNode, as in a crash (tests)."""
        if self.process is not None:
            self.process.kill_now()

    def stop(self) -> None:
        """Stop it and every process it started (idempotent)."""
        if self.process is not None:
            self.process.stop()
            self.process = None
