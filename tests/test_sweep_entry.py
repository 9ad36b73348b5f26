"""The hydra entry point: a 2-job grid of short runs, and a job with a bad run config."""

import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.config import defaults
from fedmf_app.results import load_result

ROOT = Path(__file__).resolve().parents[1]


def test_hydra_run_block_holds_every_app_default():
    run = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "config.yaml").run)
    assert run == defaults()


def _hydra(args, timeout=600):
    return subprocess.run([sys.executable, "-m", "simulations.run", *args], cwd=ROOT, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False)


@pytest.mark.e2e
def test_two_job_grid_leaves_one_completed_result_per_job(tmp_path):
    proc = _hydra(["-m", "run.num-server-rounds=2", "run.num-clients=2", "run.heterogeneity=0,0.9",
                   f"hydra.sweep.dir={tmp_path}"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = [load_result(tmp_path / str(job)) for job in (0, 1)]
    assert [r["config"]["heterogeneity"] for r in results] == [0.0, 0.9]
    assert all(r["status"] == "completed" and len(r["rounds"]) == 2 for r in results)
    assert (tmp_path / "0" / "flwr.log").stat().st_size > 0


def test_a_bad_run_config_fails_the_job_before_flower_starts(tmp_path):
    proc = _hydra(["run.rank=30", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0
    assert "'rank' = 30 is invalid: must be <= 'view-dim' = 20" in proc.stdout
    assert not (tmp_path / "job" / "flwr.log").exists()


def test_a_misspelt_key_is_refused(tmp_path):
    proc = _hydra(["run.locl-steps=3", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0 and "locl-steps" in proc.stdout
