"""Benchmark: wall time of a Fig. 2 sweep, jobs one after another vs. side by side, and where
each job's time goes.

Runs ``python -m simulations.run -m +experiment=sonmf/fig2`` (with the given overrides) once per launcher
(``basic``: one job after another; ``joblib``: ``n_jobs`` side by side, each on its own
SuperLink), times each sweep, and breaks every job down from its ``job_timing.json`` and
``result.json``:

* ``superlink``: starting and stopping the job's SuperLink (``job_s - flwr_run_s``);
* ``start-up``: the rest of ``flwr run`` outside the rounds (app bundle, Ray and its actors,
  ServerApp, handshake): ``flwr_run_s - sum of the rounds' wall_s``;
* ``rounds``: the sum of the rounds' ``wall_s``, split into client ``kernels`` (sum over clients
  of ``kernel_s``; with one Ray actor the clients run one after another), ``server`` and the
  rest, Flower's per-round messaging and polling.

Prints Markdown tables and writes them with the raw numbers as JSON. Run it under
``flock /tmp/fedmf-bench.lock`` on a shared machine. Usage::

    python -m simulations.bench_sweep --out results/bench_sweep -- run.num-server-rounds=10 run.seed=0
    python -m simulations.bench_sweep --existing multirun/fig2/<time>     # breakdown of a sweep already run
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from pathlib import Path

from fedmf_app.federated.results import load_result
from simulations.run import TIMING_FILE

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench_sweep")

__all__ = ["job_breakdown", "sweep_breakdown"]

_PARTS = ("job_s", "superlink_s", "startup_s", "rounds_s", "kernels_s", "server_s", "flower_s")


def job_breakdown(job_dir: Path) -> dict[str, float]:
    """Seconds spent in each part of one job (see the module docstring)."""
    timing = json.loads((job_dir / TIMING_FILE).read_text())
    rounds = load_result(job_dir)["rounds"]
    rounds_s = sum(r["wall_s"] for r in rounds)
    kernels = sum(r["client_kernel_s_sum"] for r in rounds)
    server = sum(r["server_s"] for r in rounds)
    return {
        "job_s": timing["job_s"],
        "superlink_s": timing["job_s"] - timing["flwr_run_s"],
        "startup_s": timing["flwr_run_s"] - rounds_s,
        "rounds_s": rounds_s,
        "kernels_s": kernels,
        "server_s": server,
        "flower_s": rounds_s - kernels - server,
        "rounds": len(rounds),
    }


def sweep_breakdown(sweep_dir: Path) -> dict[str, dict[str, float]]:
    """Per-job breakdowns of every completed, timed job under ``sweep_dir``, keyed by job folder."""
    jobs = sorted(
        (p.parent for p in sweep_dir.glob(f"*/{TIMING_FILE}") if (p.parent / "result.json").exists()),
        key=lambda p: int(p.name),
    )
    return {job.name: job_breakdown(job) for job in jobs}


def _table(label: str, jobs: dict[str, dict[str, float]], wall: float | None) -> list[str]:
    total = {k: sum(j[k] for j in jobs.values()) for k in _PARTS}
    median = {k: statistics.median(j[k] for j in jobs.values()) for k in _PARTS}
    lines = [
        f"| {label} | {len(jobs)} | "
        + ("" if wall is None else f"{wall:.0f}")
        + " | "
        + " | ".join(f"{total[k]:.0f} ({median[k]:.1f})" for k in _PARTS)
        + " |"
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launchers", nargs="+", default=["basic", "joblib"])
    parser.add_argument(
        "--existing",
        type=Path,
        nargs="*",
        default=[],
        help="only break down sweeps already run (no new runs)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_sweep")
    parser.add_argument("overrides", nargs="*", help="hydra overrides for the fig2 preset")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    sweeps: dict[str, tuple[Path, float | None]] = {str(p): (p, None) for p in args.existing}
    if not args.existing:
        for launcher in args.launchers:
            sweep_dir = args.out / launcher
            command = [
                sys.executable,
                "-m",
                "simulations.run",
                "-m",
                "+experiment=sonmf/fig2",
                f"hydra/launcher={launcher}",
                f"hydra.sweep.dir={sweep_dir}",
                *args.overrides,
            ]
            log.info("running: %s", " ".join(command))
            started = time.perf_counter()
            proc = subprocess.run(command, cwd=ROOT, check=False)
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                raise SystemExit(f"the {launcher} sweep failed (exit {proc.returncode}); see {sweep_dir}")
            sweeps[launcher] = (sweep_dir, wall)
    rows = [
        "| sweep | jobs | wall (s) | " + " | ".join(f"{k[:-2]}: total (median/job)" for k in _PARTS) + " |",
        "|---|---|---|" + "---|" * len(_PARTS),
    ]
    raw = {}
    for label, (sweep_dir, wall) in sweeps.items():
        jobs = sweep_breakdown(sweep_dir)
        raw[label] = {"sweep_dir": str(sweep_dir), "wall_s": wall, "jobs": jobs}
        rows += _table(label, jobs, wall)
    text = "\n".join(rows)
    (args.out / "sweep.md").write_text(text + "\n")
    (args.out / "sweep.json").write_text(json.dumps(raw, indent=1))
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
