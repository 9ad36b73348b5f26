"""The harness for runs through Flower: ``flwr run`` on a shared SuperLink, the run's
``result.json``, and checks that no process a test started is left."""

import json
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FlowerRun:
    """One ``flwr run``: its streamed log and the run's ``result.json`` (``None`` if none was written)."""

    log: str
    run_dir: Path
    result: dict | None

    def completed(self):
        """The result, asserting the run completed (else the end of the log is shown)."""
        assert self.result is not None, self.log[-3000:]
        assert self.result["status"] == "completed", self.result.get("error")
        return self.result


def flwr_run(link, tmp_path, overrides, num_supernodes, run_name="e2e", timeout=300):
    """``flwr run`` of the app with ``overrides`` on ``link``; results under ``tmp_path/run_name``.

    Returns
    -------
    FlowerRun
    """
    overrides = {**overrides, "out-dir": str(tmp_path), "run-name": run_name}
    proc = link.run(ROOT, overrides, num_supernodes=num_supernodes, timeout=timeout)
    path = tmp_path / run_name / "result.json"
    return FlowerRun(proc.stdout, path.parent, json.loads(path.read_text()) if path.exists() else None)


def descendants(*processes):
    """The ``subprocess.Popen``-like ``processes`` (``None`` skipped) and all their children, now."""
    found = []
    for proc in processes:
        if proc is None:
            continue
        try:
            parent = psutil.Process(proc.pid)
            found += [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return found


def federation_processes(federation):
    """Every process a :class:`~fedmf_app.deployment.federation.LocalFederation` started, now."""
    return descendants(federation.superlink.process, *(n.process for n in federation.supernodes))


def assert_all_stopped(procs):
    """None of ``procs`` (psutil processes) is still alive."""
    alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]


def leftover_processes(root):
    """Live processes whose ``FLWR_HOME`` lies under ``root`` (Flower, its simulation, Ray)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get("FLWR_HOME", "").startswith(str(root)):
                found.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found
