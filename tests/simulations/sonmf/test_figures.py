"""Figures and tables from saved sweeps, on constructed result.json files (no Flower)."""

import json

import numpy as np
import pytest

from fedmf_app.registry import validate_run_config
from simulations.bench_sweep import job_breakdown
from simulations.sonmf.figures import collect, main, normalised, rounds_table, variant_label


def _write_run(folder, overrides, residuals, status="completed"):
    cfg = validate_run_config(overrides)
    rounds = [
        {
            "round": s,
            "wall_s": 0.5,
            "elapsed_s": 3.0 + 0.5 * s,
            "server_s": 0.01,
            "client_kernel_s_sum": 0.2,
            "client_kernel_s_max": 0.05,
            "residual": r,
            "residual_min": r / 2,
            "objective": 1.0,
        }
        for s, r in enumerate(residuals, start=1)
    ]
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(
        json.dumps({"config": cfg, "status": status, "error": None, "rounds": rounds, "summary": {}})
    )


def _sweep(tmp_path):
    # two seeds of a fast curve (tau=10) and of a slow one (tau=5), at h = 0 and 0.9
    for job, (tau, h, seed) in enumerate(
        [(10, 0.0, 0), (10, 0.0, 1), (5, 0.0, 0), (5, 0.0, 1), (10, 0.9, 0), (5, 0.9, 0)]
    ):
        rate = 0.09 if tau == 10 else 0.7
        residuals = [100.0 * rate**s * (1 + seed) for s in range(8)]
        _write_run(
            tmp_path / str(job), {"sonmf.local-steps": tau, "heterogeneity": h, "seed": seed}, residuals
        )
    _write_run(tmp_path / "9", {"seed": 3}, [1.0], status="failed")


def test_normalisations():
    rounds = [{"residual": r, "residual_min": r / 4} for r in (4.0, 2.0, 1.0)]
    np.testing.assert_allclose(normalised(rounds, "ratio", 1e-12), [1.0, 0.5, 0.25])
    np.testing.assert_allclose(normalised(rounds, "running-average", 1e-12), [1.0, 0.75, 7 / 12])
    np.testing.assert_allclose(normalised(rounds, "min-norm-ratio", 1e-12), [1.0, 0.5, 0.25])
    avg = normalised([{"residual": 0.0 if s else 1.0} for s in range(50)], "running-average", 1e-12)
    assert np.all(avg >= 1 / np.arange(1, 51) - 1e-15)  # the printed average is at least 1/s


def test_runs_are_grouped_by_line_and_h_and_failed_runs_left_out(tmp_path):
    _sweep(tmp_path)
    runs, skipped = collect([tmp_path], "fig2")
    assert sorted(runs) == [("tau=10", 0.0), ("tau=10", 0.9), ("tau=5", 0.0), ("tau=5", 0.9)]
    assert sorted(seed for seed, _, _ in runs[("tau=10", 0.0)]) == [0, 1]
    assert len(skipped) == 1 and "failed" in skipped[0]
    table = rounds_table(runs, "fig2")
    # ratio 0.09^(s-1) reaches 1e-2 in round 3; 0.7^(s-1) not within 8 rounds
    assert "| tau=10 | 3.0 [3, 3] | 3.0 [3] |" in table
    assert "| tau=5 | never [never, never] | never [never] |" in table
    assert table.index("| tau=5 |") < table.index("| tau=10 |")  # lines in tau order


def test_command_writes_one_png_per_normalisation_and_the_table(tmp_path, capsys):
    _sweep(tmp_path / "sweep")
    main(["fig2", str(tmp_path / "sweep"), "--out", str(tmp_path / "out")])
    for name in ("ratio", "running-average", "min-norm-ratio"):
        assert (tmp_path / "out" / f"fig2_{name}.png").stat().st_size > 0
    table = (tmp_path / "out" / "fig2_rounds_to_1e-2.md").read_text()
    assert "**Rounds to 0.01, running-average**" in table and "peak R/R^1" in table
    assert "left out" in capsys.readouterr().err


def test_variant_labels_follow_the_ablation_configs():
    assert variant_label(validate_run_config({"sonmf.v-update": "server"})) == "server update"
    assert (
        variant_label(validate_run_config({"sonmf.local-steps": 1, "sonmf.drift-correction": False}))
        == "local copies, tau=1"
    )
    assert (
        variant_label(validate_run_config({"sonmf.drift-correction": False}))
        == "local copies, no correction, tau=10"
    )
    assert variant_label(validate_run_config({})) == "proposed (corrected), tau=10"


def test_job_breakdown_adds_up(tmp_path):
    _write_run(tmp_path / "0", {}, [1.0] * 4)
    (tmp_path / "0" / "job_timing.json").write_text(json.dumps({"job_s": 20.0, "flwr_run_s": 17.0}))
    parts = job_breakdown(tmp_path / "0")
    assert parts["superlink_s"] == pytest.approx(3.0)
    assert parts["rounds_s"] == pytest.approx(2.0) and parts["startup_s"] == pytest.approx(15.0)
    assert parts["kernels_s"] + parts["server_s"] + parts["flower_s"] == pytest.approx(parts["rounds_s"])
