"""Hydra entry point: one job = one ``flwr run`` of the app on Flower's simulation engine.

Usage::

    python -m simulations.run run.heterogeneity=0.9                     # one run
    python -m simulations.run -m run.heterogeneity=0,0.3,0.6,0.9        # a sweep
    python -m simulations.run -m +experiment=sonmf/fig2                       # a figure's preset

A data file (or per-view files, or their folder) named by a relative ``run.dataset`` path is taken
from the folder the command runs in (the apps run elsewhere, so the job passes absolute paths).
Each job validates its run config first (a bad value fails the job before Flower starts), runs the
real ServerApp and ClientApp on a private SuperLink that it starts and stops by PID (also on error,
timeout or Ctrl-C), keeps Flower's log as ``flwr.log`` and the run's ``result.json`` in the job
folder, and ``job_timing.json`` (``job_s``: the whole job, SuperLink start and stop included;
``flwr_run_s``: the ``flwr run`` command).

Failures: a single run (no ``-m``) fails with the run's own error message. In a sweep a failed
job is recorded and skipped: it writes ``job_failed.json`` (job number, overrides, error) to its
folder, logs the error and the sweep goes on with the other jobs; when the sweep ends,
:class:`FailedJobsCallback` lists every failed job and the command exits with status 1. One bad
cell of a several-hour grid thus costs that cell only, and it is still reported.
"""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from fedmf_app.data import views_to_federate
from fedmf_app.data.view_files import absolute_dataset
from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.federated.results import load_result
from fedmf_app.options import ConfigError
from fedmf_app.registry import defaults, validate_run_config

ROOT = Path(__file__).resolve().parents[1]
FAILED_JOB_FILE = "job_failed.json"
TIMING_FILE = "job_timing.json"
log = logging.getLogger(__name__)

__all__ = [
    "FAILED_JOB_FILE",
    "TIMING_FILE",
    "FailedJobsCallback",
    "JobFailed",
    "app_run_config",
    "failed_jobs",
    "run_job",
]


def app_run_config() -> dict[str, Any]:
    """The app's run-config defaults as Flower reads them: ``pyproject.toml``'s ``[tool.flwr.app.config]``.

    Returns
    -------
    dict
        Shared keys at the top, one nested table per method family.
    """
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["tool"]["flwr"]["app"]["config"]


# conf/config.yaml's defaults list starts with this node: the hydra `run` block is pyproject's table.
ConfigStore.instance().store(name="app_run_config", node={"run": app_run_config()})


class JobFailed(RuntimeError):
    """The job's Flower run did not complete."""


def run_job(cfg: DictConfig, job_dir: Path) -> dict[str, Any]:
    """Run one job and return its ``result.json`` content.

    Parameters
    ----------
    cfg : DictConfig
        The composed job config (``run``, ``num_supernodes``, ``client_cpus``, ``timeout_s``).
    job_dir : Path
        The job's folder; ``result.json`` and ``flwr.log`` are written here.

    Returns
    -------
    dict

    Raises
    ------
    fedmf_app.options.ConfigError
        On an invalid run config (before Flower starts).
    JobFailed
        When the run did not complete (or took longer than ``timeout_s``).
    """
    overrides = OmegaConf.to_container(cfg.run, resolve=True)
    overrides.update({"out-dir": str(job_dir.parent.resolve()), "run-name": job_dir.name})
    # the apps run elsewhere: pass absolute paths
    overrides["dataset"] = absolute_dataset(str(overrides.get("dataset", "synthetic")))
    run_config = validate_run_config(overrides)
    supernodes = cfg.num_supernodes or views_to_federate(run_config)
    default = defaults()
    changed = {k: v for k, v in run_config.items() if v != default[k] and k not in ("out-dir", "run-name")}
    log.info("job %s: %s", job_dir, changed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fedmf-flwr-home-") as home, LocalSuperLink(home) as link:
        run_started = time.perf_counter()
        try:
            proc = link.run(
                ROOT,
                run_config,
                num_supernodes=supernodes,
                timeout=cfg.timeout_s,
                federation_config={"client-resources-num-cpus": cfg.client_cpus},
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.output.decode() if isinstance(exc.output, bytes) else (exc.output or "")
            (job_dir / "flwr.log").write_text(output)
            raise JobFailed(
                f"job {job_dir}: the run took longer than timeout_s = {cfg.timeout_s} s and was stopped"
            ) from exc
        flwr_run_s = time.perf_counter() - run_started
    timing = {"job_s": time.perf_counter() - started, "flwr_run_s": flwr_run_s}
    (job_dir / TIMING_FILE).write_text(json.dumps(timing))
    (job_dir / "flwr.log").write_text(proc.stdout)
    if not (job_dir / "result.json").exists():
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise JobFailed(f"job {job_dir}: the run left no result.json; end of {job_dir / 'flwr.log'}:\n{tail}")
    result = load_result(job_dir)
    if result["status"] != "completed":
        raise JobFailed(f"job {job_dir}: run {result['status']}: {result['error']}")
    scores = {k: v for k, v in (result.get("final") or {}).items() if k != "labels"}
    log.info("job %s completed: %s %s", job_dir, result["summary"].get("final") or "", scores or "")
    return result


def failed_jobs(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """The ``job_failed.json`` records under a sweep folder, by job number.

    Parameters
    ----------
    sweep_dir : str or Path

    Returns
    -------
    list of dict
        Each with ``job``, ``folder``, ``overrides`` and ``error``.
    """
    records = [json.loads(p.read_text()) for p in Path(sweep_dir).glob(f"*/{FAILED_JOB_FILE}")]
    return sorted(records, key=lambda r: r["job"])


class FailedJobsCallback(Callback):
    """At the end of a sweep: list the failed jobs and exit with status 1 if there are any."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        failed = failed_jobs(config.hydra.sweep.dir)
        if not failed:
            log.info("sweep %s: every job completed", config.hydra.sweep.dir)
            return
        lines = [
            f"  job {r['job']} ({r['folder']}; {' '.join(r['overrides'])}): {r['error']}" for r in failed
        ]
        log.error(
            "sweep %s: %d job(s) failed and were skipped:\n%s",
            config.hydra.sweep.dir,
            len(failed),
            "\n".join(lines),
        )
        raise SystemExit(1)


@hydra.main(version_base=None, config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra main: run the composed job in its output folder (see the module docstring on failures)."""
    hydra_cfg = HydraConfig.get()
    job_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        run_job(cfg, job_dir)
    except (ConfigError, JobFailed) as exc:
        if hydra_cfg.mode != RunMode.MULTIRUN:
            raise
        record = {
            "job": hydra_cfg.job.num,
            "folder": str(job_dir),
            "overrides": list(hydra_cfg.overrides.task),
            "error": str(exc),
        }
        (job_dir / FAILED_JOB_FILE).write_text(json.dumps(record, indent=1))
        log.error("job %d FAILED and was skipped: %s", hydra_cfg.job.num, exc)


if __name__ == "__main__":
    main()
