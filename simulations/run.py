"""Hydra entry point: one job = one ``flwr run`` of the app on Flower's simulation engine.

Usage::

    python -m simulations.run run.heterogeneity=0.9                     # one run
    python -m simulations.run -m run.heterogeneity=0,0.3,0.6,0.9        # a sweep
    python -m simulations.run -m +experiment=<preset>                   # a preset in conf/experiment

Each job validates its run config first (a bad value fails the job before Flower starts), runs the
real ServerApp and ClientApp on a private SuperLink that it starts and stops by PID (also on error
or Ctrl-C), keeps Flower's log as ``flwr.log`` and the run's ``result.json`` in the job folder, and
fails with the run's own error message when the run did not complete.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from fedmf_app.config import defaults, validate_run_config
from fedmf_app.local_superlink import LocalSuperLink
from fedmf_app.results import load_result

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger(__name__)

__all__ = ["JobFailed", "run_job"]


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
    fedmf_app.config.ConfigError
        On an invalid run config (before Flower starts).
    JobFailed
        When the run did not complete.
    """
    overrides = OmegaConf.to_container(cfg.run, resolve=True)
    overrides.update({"out-dir": str(job_dir.parent.resolve()), "run-name": job_dir.name})
    run_config = validate_run_config(overrides)
    supernodes = cfg.num_supernodes or run_config["num-clients"]
    changed = {k: v for k, v in run_config.items() if v != defaults()[k] and k not in ("out-dir", "run-name")}
    log.info("job %s: %s", job_dir, changed)
    with tempfile.TemporaryDirectory(prefix="fedmf-flwr-home-") as home, LocalSuperLink(home) as link:
        proc = link.run(ROOT, run_config, num_supernodes=supernodes, timeout=cfg.timeout_s,
                        federation_config={"client-resources-num-cpus": cfg.client_cpus})
    (job_dir / "flwr.log").write_text(proc.stdout)
    if not (job_dir / "result.json").exists():
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise JobFailed(f"job {job_dir}: the run left no result.json; end of {job_dir / 'flwr.log'}:\n{tail}")
    result = load_result(job_dir)
    if result["status"] != "completed":
        raise JobFailed(f"job {job_dir}: run {result['status']}: {result['error']}")
    log.info("job %s completed: %s", job_dir, result["summary"].get("final"))
    return result


@hydra.main(version_base=None, config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra main: run the composed job in its output folder."""
    run_job(cfg, Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    main()
