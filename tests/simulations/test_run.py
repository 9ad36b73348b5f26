"""The hydra entry point: a 2-job grid, failures in single runs and sweeps, the figure presets."""

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.federated.results import load_result
from simulations.run import failed_jobs

from support.data import labelled_file
from support.flower import leftover_processes as _leftover_processes

ROOT = Path(__file__).resolve().parents[2]


def test_hydra_run_block_is_pyprojects_table():
    from hydra import compose, initialize_config_dir

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        run = OmegaConf.to_container(compose(config_name="config").run)
    assert run == table
    assert "\nrun:" not in (ROOT / "conf" / "config.yaml").read_text()  # no hand-kept copy


def _hydra(args, timeout=600, env=None):
    return subprocess.run(
        [sys.executable, "-m", "simulations.run", *args],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        check=False,
        env=env,
    )


def test_a_bad_run_config_fails_the_job_before_flower_starts(tmp_path):
    proc = _hydra(["run.sonmf.rank=30", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0
    assert "'sonmf.rank' = 30 is invalid: must be <= 'view-dim' = 20" in proc.stdout
    assert not (tmp_path / "job" / "flwr.log").exists()


def test_a_misspelt_key_is_refused(tmp_path):
    proc = _hydra(["run.locl-steps=3", f"hydra.run.dir={tmp_path}/job"], timeout=120)
    assert proc.returncode != 0 and "locl-steps" in proc.stdout


@pytest.mark.e2e
def test_a_table_sweep_runs_its_jobs_through_flower_reports_a_failed_one_and_tabulates(tmp_path):
    # paper A's Table 1 preset on a small labelled file, two jobs side by side (the default
    # launcher): job 0 has 2 of the 3 SuperNodes it needs and fails after connect-timeout-s, job 1
    # completes; the sweep is reported failed, leaves no process, and its table is made
    path, _ = labelled_file(tmp_path)
    sweep = tmp_path / "sweep"
    # The jobs' FLWR_HOME (and Ray's session) folders go under a short private TMPDIR: Ray's
    # socket paths must stay under 108 bytes, which pytest's tmp_path can exceed.
    tmp = Path(tempfile.mkdtemp(prefix="fedmf-", dir="/tmp"))
    args = [
        "-m",
        "+experiment=sonmf/table1",
        f"run.dataset={path}",
        "data=3sources",
        "algorithm=fedmgs",
        "run.seed=0",
        "run.num-server-rounds=2",
        "run.connect-timeout-s=2",
        "num_supernodes=2,3",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = _hydra(args, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 1, proc.stdout[-3000:]
    [failed] = failed_jobs(sweep)
    assert failed["job"] == 0 and "num_supernodes=2" in failed["overrides"]
    assert "needs exactly 3 SuperNodes" in failed["error"] and "num-supernodes=3" in failed["error"]
    assert "1 job(s) failed and were skipped" in proc.stdout and "job 0 (" in proc.stdout
    result = load_result(sweep / "1")
    assert result["status"] == "completed" and len(result["rounds"]) == 2
    assert result["config"]["algorithm"] == "fedmgs" and result["config"]["dataset"] == path
    assert (sweep / "1" / "flwr.log").stat().st_size > 0
    assert _leftover_processes(tmp) == []
    shutil.rmtree(tmp, ignore_errors=True)
    table = subprocess.run(
        [sys.executable, "-m", "simulations.sweep_table", str(sweep), "--paper", "A"],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=600,
        check=True,
    ).stdout
    assert "| fedmgs (federated) |" in table and "k-means, concatenated views (centralised)" in table


@pytest.mark.parametrize(("launcher", "target"), [(None, "JoblibLauncher"), ("basic", "BasicLauncher")])
def test_sweeps_default_to_two_jobs_side_by_side_and_can_run_one_by_one(launcher, target):
    from hydra import compose, initialize_config_dir

    overrides = [] if launcher is None else [f"hydra/launcher={launcher}"]
    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith(target)
    if launcher is None:
        assert cfg.hydra.launcher.n_jobs == 2
