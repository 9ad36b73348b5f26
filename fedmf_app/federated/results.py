"""The results a run leaves behind: ``<out-dir>/<run-name>/result.json`` (and plots beside it).

``result.json`` holds ``{"code_version": {...}, "run_id": ..., "config": {...}, "status": ..., "clients":
[...], "rounds": [...], "summary": {...}, "final": {...}}`` (``run_id``: Flower's id of the run that
writes it, the id a node's ``resume-run-id`` names to continue it; ``status``: ``running``,
``completed``, ``failed`` or ``interrupted`` when the ServerApp lost its SuperLink) (``code_version``:
which code made it, see :func:`code_version`; ``config``: every run-config value, defaults included;
``final``: the end-of-run clustering, see :meth:`RunRecorder.finish`) and is rewritten atomically after
every round, so an interrupted run keeps the rounds it finished and a reader never sees a half-written
file.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["RunRecorder", "code_version", "default_run_name", "load_result", "main", "run_status"]

#: The package folder whose source a run record names.
_PACKAGE = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """Which code a run ran: the package version, the hash of its source and, in a git checkout,
    ``git describe``.

    Returns
    -------
    dict
        ``package`` (the installed ``fedmf-app`` version, or ``None``), ``source_sha256`` (SHA-256
        over the path and bytes of every ``.py`` file of the ``fedmf_app`` package, in path order:
        the same for the same code however it was shipped, e.g. inside a FAB) and ``git``
        (``git describe --always --dirty --tags`` of the checkout holding the package, ``None``
        when it is not in one).
    """
    try:
        package = metadata.version("fedmf-app")
    except metadata.PackageNotFoundError:
        package = None
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    git = None
    try:  # only a checkout that tracks this very package (not a FAB unpacked inside another repo)
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "__init__.py"],
            cwd=_PACKAGE,
            capture_output=True,
            timeout=10,
            check=False,
        )
        if tracked.returncode == 0:
            described = subprocess.run(
                ["git", "describe", "--always", "--dirty", "--tags"],
                cwd=_PACKAGE,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            git = described.stdout.strip() if described.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        git = None
    return {"package": package, "source_sha256": digest.hexdigest(), "git": git or None}


def default_run_name(algorithm: str, seed: int) -> str:
    """``<algorithm>-<YYYYmmdd-HHMMSS>-s<seed>-<pid>`` (unique across parallel runs).

    Parameters
    ----------
    algorithm : str
    seed : int

    Returns
    -------
    str
    """
    return f"{algorithm}-{time.strftime('%Y%m%d-%H%M%S')}-s{seed}-{os.getpid()}"


class RunRecorder:
    """Owns one run folder and its ``result.json``.

    Parameters
    ----------
    out_dir : str or Path
        Parent folder; relative paths resolve against the current working folder.
    run_name : str
        Folder name of this run.
    config : dict
        The full, validated run config (stored verbatim).

    Attributes
    ----------
    run_id : int or None
        Flower's id of the run (set by the ServerApp before :meth:`start`).

    Notes
    -----
    Nothing is written until :meth:`start` is called, so a run rejected during validation leaves
    no folder behind.
    """

    def __init__(self, out_dir: str | Path, run_name: str, config: dict[str, Any]) -> None:
        self.run_dir = Path(out_dir).expanduser().resolve() / run_name
        self.path = self.run_dir / "result.json"
        self.run_id: int | None = None
        self.data: dict[str, Any] = {
            "code_version": code_version(),
            "run_id": None,
            "config": dict(config),
            "status": "pending",
            "error": None,
            "clients": [],
            "rounds": [],
            "summary": {},
            "final": None,
        }

    @classmethod
    def resume(cls, run_dir: str | Path, after_round: int) -> RunRecorder:
        """The recorder of an interrupted run, keeping its rounds up to ``after_round``.

        Parameters
        ----------
        run_dir : str or Path
            The run folder.
        after_round : int
            The last round its checkpoint holds.

        Returns
        -------
        RunRecorder
            Writing to the same ``result.json``; ``resumed`` lists every resume.
        """
        previous = load_result(run_dir)
        run_dir = Path(run_dir).expanduser().resolve()
        recorder = cls(run_dir.parent, run_dir.name, previous["config"])
        kept = [r for r in previous["rounds"] if r["round"] <= after_round]
        recorder.data.update(
            clients=previous.get("clients", []),
            rounds=kept,
            resumed=[
                *previous.get("resumed", []),
                {
                    "after_round": after_round,
                    "status": previous["status"],
                    "code_version": previous.get("code_version"),
                    "run_id": previous.get("run_id"),
                },
            ],
        )
        return recorder

    def start(self, clients: list[dict[str, Any]]) -> None:
        """Create the run folder and write the first ``result.json``.

        Parameters
        ----------
        clients : list of dict
            What each client reported in the handshake, in partition order.
        """
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.data["run_id"] = self.run_id
        self.data["status"] = "running"
        self.data["error"] = None
        self.data["clients"] = clients
        self._write()

    def record_round(self, record: dict[str, Any]) -> None:
        """Append one round's record and rewrite the file.

        Parameters
        ----------
        record : dict
            Must hold ``round``; values must be JSON-serialisable.
        """
        self.data["rounds"].append(record)
        self._write()

    def finish(self, summary: dict[str, Any], final: dict[str, Any] | None = None) -> None:
        """Mark the run completed with its summary and its final clustering.

        Parameters
        ----------
        summary : dict
        final : dict, optional
            ``labels`` (predicted cluster of every sample), ``num_clusters`` and, when ground
            truth was available, ``acc``, ``nmi``, ``purity``, ``ari``.
        """
        self.data["status"] = "completed"
        self.data["summary"] = summary
        self.data["final"] = final
        self._write()

    def fail(self, error: str) -> None:
        """Mark the run failed, keeping the rounds done so far (no-op before :meth:`start`).

        Parameters
        ----------
        error : str
            What went wrong, for a person to read.
        """
        self.data["status"] = "failed"
        self.data["error"] = error
        if self.run_dir.exists():
            self._write()

    def interrupt(self, error: str) -> None:
        """Mark the run interrupted (the ServerApp lost its SuperLink), keeping the rounds done so
        far; it can be resumed from its checkpoint (no-op before :meth:`start`).

        Parameters
        ----------
        error : str
            What happened, for a person to read.
        """
        self.data["status"] = "interrupted"
        self.data["error"] = error
        if self.run_dir.exists():
            self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, allow_nan=True))
        os.replace(tmp, self.path)


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a ``result.json`` (or the one inside a run folder).

    Parameters
    ----------
    path : str or Path
        The file or its run folder.

    Returns
    -------
    dict
    """
    p = Path(path)
    if p.is_dir():
        p = p / "result.json"
    return json.loads(p.read_text())


def run_status(path: str | Path) -> tuple[int, str]:
    """Exit code and one line for a run folder: 0 completed, 1 failed, interrupted or unfinished,
    2 no result.

    ``flwr run`` itself exits 0 whatever happened to the run (Flower's behaviour); this is what
    scripts check instead (``python -m fedmf_app.federated.results <run folder>``).

    Parameters
    ----------
    path : str or Path
        A run folder or its ``result.json``.

    Returns
    -------
    code : int
    line : str
    """
    try:
        result = load_result(path)
    except (OSError, ValueError) as exc:
        return 2, f"{path}: no readable result.json ({exc})"
    status = result.get("status")
    if status == "completed":
        return 0, f"{path}: completed, {len(result.get('rounds', []))} rounds"
    if status in ("failed", "interrupted"):
        return 1, f"{path}: {status}: {result.get('error')}"
    return 1, f"{path}: {status} after {len(result.get('rounds', []))} rounds (not finished)"


def main(argv: list[str] | None = None) -> int:
    """``python -m fedmf_app.federated.results RUN_FOLDER...``: exit 0 only if every run completed."""
    import argparse
    import logging

    parser = argparse.ArgumentParser(
        prog="python -m fedmf_app.federated.results",
        description="Exit with 0 only if every named run completed (status in result.json).",
    )
    parser.add_argument("runs", nargs="+", help="run folders (or their result.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    worst = 0
    for run in args.runs:
        code, line = run_status(run)
        logging.getLogger("fedmf_app.results").log(logging.INFO if code == 0 else logging.ERROR, "%s", line)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
