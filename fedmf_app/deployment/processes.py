"""Processes this program starts and must stop: each in its own session, stopped by PID.

Flower's SuperLink and SuperNode start further processes (SuperExec, ServerApp, ClientApp, Ray);
some of them leave the group of the process that started them. :class:`OwnedProcess` stops the
process, its process group and every descendant found before signalling, and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import psutil

__all__ = ["OwnedProcess"]

#: Seconds a process gets between SIGTERM and SIGKILL.
GRACE_S = 15.0

#: Seconds between two looks at processes that are stopping.
POLL_S = 0.02


class OwnedProcess:
    """A command started in a new session, its output appended to a log file.

    Parameters
    ----------
    name : str
        For messages, e.g. ``"SuperNode 2"``.
    command : sequence of str
    env : mapping
    log_path : Path
        Receives stdout and stderr (appended).
    cwd : Path, optional
        Working folder (created if missing).
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.log_path = Path(log_path)
        if cwd is not None:
            Path(cwd).mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.popen: subprocess.Popen[bytes] | None = subprocess.Popen(
                list(command),
                env=dict(env),
                cwd=cwd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self.popen.pid
        self._orphans: list[psutil.Process] = []

    def exit_code(self) -> int | None:
        """The exit code, or ``None`` while it runs (or after :meth:`stop`)."""
        return None if self.popen is None else self.popen.poll()

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of its log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def kill_now(self) -> None:
        """SIGKILL the process alone, as in a crash (:meth:`stop` still ends its descendants)."""
        if self.popen is not None and self.popen.poll() is None:
            try:
                self._orphans = psutil.Process(self.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                self._orphans = []
            self.popen.kill()
            self.popen.wait(timeout=GRACE_S)

    def stop(self) -> None:
        """Stop the process, its group and its descendants (idempotent).

        SIGTERM first, SIGKILL after :data:`GRACE_S` seconds for whatever is still alive.
        """
        if self.popen is None:
            return
        pgid = self.pid  # leader of its own session, so its group id is its pid
        try:
            descendants = psutil.Process(pgid).children(recursive=True)
        except psutil.NoSuchProcess:
            descendants = []
        descendants += [p for p in self._orphans if p.is_running()]
        _signal_group(pgid, signal.SIGTERM)
        for child in descendants:
            _signal_process(child, signal.SIGTERM)
        try:
            self.popen.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        alive = _still_running(descendants, GRACE_S)
        _signal_group(pgid, signal.SIGKILL)
        for child in alive:
            _signal_process(child, signal.SIGKILL)
        self.popen.wait(timeout=GRACE_S)
        _still_running(alive, GRACE_S)
        self.popen = None


def _still_running(processes: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` seconds for ``processes`` to exit; those still running then.

    A process that has exited but that its parent has not reaped yet (a zombie) counts as gone:
    ``psutil.wait_procs`` waits for the reaping, which for a descendant whose parent has exited is
    up to the system's init process and can take a second or more.
    """
    alive = list(processes)
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in alive if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(POLL_S)


def _running(process: psutil.Process) -> bool:
    """Whether ``process`` still runs (not exited, not a zombie, its PID not reused)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _signal_process(process: psutil.Process, sig: int) -> None:
    try:
        process.send_signal(sig)
    except psutil.NoSuchProcess:
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
