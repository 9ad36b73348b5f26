"""The hydra entry point: a 2-job grid, failures in single runs and sweeps, the figure presets."""

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import psutil
import pytest
from omegaconf import OmegaConf

from fedmf_app.federated.results import load_result
from simulations.run import failed_jobs

ROOT = Path(__file__).resolve().parents[2]


def test_hydra_run_block_is_pyprojects_table():
    from hydra import compose, initialize_config_dir

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        run = OmegaConf.to_container(compose(config_name="config").run)
    assert run == table
    assert "\nrun:" not in (ROOT / "conf" / "config.yaml").read_text()  # no hand-kept copy


def _hydra(args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "simulations.run", *args],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        check=False,
    )


@pytest.mark.e2e
def test_two_job_grid_leaves_one_completed_result_per_job(tmp_path):
    proc = _hydra(
        [
            "-m",
            "run.num-server-rounds=2",
            "run.num-clients=2",
            "run.heterogeneity=0,0.9",
            f"hydra.sweep.dir={tmp_path}",
        ]
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = [load_result(tmp_path / str(job)) for job in (0, 1)]
    assert [r["config"]["heterogeneity"] for r in results] == [0.0, 0.9]
    assert all(r["status"] == "completed" and len(r["rounds"]) == 2 for r in results)
    assert (tmp_path / "0" / "flwr.log").stat().st_size > 0


def test_a_bad_run_config_fails_the_job_before_flower_starts(tmp_path):
    proc = _hydra(["run.sonmf.rank=30", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0
    assert "'sonmf.rank' = 30 is invalid: must be <= 'view-dim' = 20" in proc.stdout
    assert not (tmp_path / "job" / "flwr.log").exists()


def test_a_misspelt_key_is_refused(tmp_path):
    proc = _hydra(["run.locl-steps=3", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0 and "locl-steps" in proc.stdout


def _leftover_processes(root):
    """Live processes whose FLWR_HOME lies under ``root`` (Flower, its simulation, Ray)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get("FLWR_HOME", "").startswith(str(root)):
                found.append(f"{proc.pid}: {' '.join(proc.info['cmdline'] or [])[:120]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.e2e
def test_a_failed_job_is_reported_skipped_and_leaves_no_process(tmp_path):
    # job 0 has the 2 SuperNodes it needs; job 1 asks for 3 and fails after connect-timeout-s
    sweep = tmp_path / "sweep"
    # The jobs' FLWR_HOME (and Ray's session) folders go under a short private TMPDIR: Ray's
    # socket paths must stay under 108 bytes, which pytest's tmp_path can exceed.
    tmp = Path(tempfile.mkdtemp(prefix="fedmf-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulations.run",
            "-m",
            "run.num-server-rounds=2",
            "num_supernodes=2",
            "run.num-clients=2,3",
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=600,
        check=False,
        env=env,
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert load_result(sweep / "0")["status"] == "completed"
    [failed] = failed_jobs(sweep)
    assert failed["job"] == 1 and "run.num-clients=3" in failed["overrides"]
    assert "needs exactly 3 SuperNodes" in failed["error"]
    assert "1 job(s) failed and were skipped" in proc.stdout and "job 1 (" in proc.stdout
    assert _leftover_processes(tmp) == []
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize(("launcher", "target"), [(None, "JoblibLauncher"), ("basic", "BasicLauncher")])
def test_sweeps_default_to_two_jobs_side_by_side_and_can_run_one_by_one(launcher, target):
    from hydra import compose, initialize_config_dir

    overrides = [] if launcher is None else [f"hydra/launcher={launcher}"]
    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith(target)
    if launcher is None:
        assert cfg.hydra.launcher.n_jobs == 2
