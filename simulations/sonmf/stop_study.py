"""Study: which residual-ratio tolerance stops paper A's methods with the fixed-round clustering.

Runs each (data set, algorithm) for the full ``num-server-rounds`` (the family default, 100) with
no stop, through the real Strategy and NumPyClients in process
(:func:`fedmf_app.in_process.run_in_process`), and after every round clusters the current ``V``
exactly as the final clustering does (:meth:`final_labels`). For each candidate tolerance it
finds the round where ``sonmf.stop-ratio`` would have stopped the run and whether that round's
clustering is the final one (the same partition: ARI = 1). Writes the per-run records (JSON lines)
and a Markdown table. Usage::

    python -m simulations.sonmf.stop_study --out docs/sonmf/stop_study
    python -m simulations.sonmf.stop_study --sets synthetic HW --algorithms fedsonmf
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from fedmf_app.data.multiview import load_multiview
from fedmf_app.in_process import run_in_process
from simulations.quality.datasets import DEVELOPMENT_SETS, available_sets

ROOT = Path(__file__).resolve().parents[2]
TOLERANCES = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-13, 1e-14, 1e-15)
ALGORITHMS = ("fedsonmf", "fedmavg", "fedmgs", "fedvra-u")


def trajectory(dataset: str, algorithm: str, seed: int, out: Path) -> dict:
    """Per-round residual ratio and whether that round's clustering equals the last round's."""
    overrides = {
        "algorithm": algorithm,
        "seed": seed,
        "sonmf.stop-ratio": 0.0,
        "sonmf.stop-change": 0.0,
        "sonmf.stop-label-change": 0.0,
    }
    if dataset != "synthetic":
        overrides.update(dataset=dataset, **{"num-clients": len(load_multiview(dataset).views)})
    labels: list[np.ndarray] = []

    def record_labels(strategy_class_aggregate):
        def aggregate(self, server_round, replies):
            result = strategy_class_aggregate(self, server_round, replies)
            labels.append(np.asarray(self.final_labels()))
            return result

        return aggregate

    from fedmf_app.registry import strategy_class

    cls = strategy_class(algorithm)
    original = cls.aggregate
    cls.aggregate = record_labels(original)
    started = time.perf_counter()
    try:
        strategy = run_in_process(overrides, out, f"{algorithm}-{Path(dataset).stem}-s{seed}")
    finally:
        cls.aggregate = original
    rounds = strategy.recorder.data["rounds"]
    final = labels[-1]
    return {
        "dataset": dataset,
        "algorithm": algorithm,
        "seed": seed,
        "rounds": len(rounds),
        "wall_s": time.perf_counter() - started,
        "ratio": [r["residual_ratio"] for r in rounds],
        "same_as_final": [bool(adjusted_rand_score(final, lab) == 1.0) for lab in labels],
    }


def stop_round(record: dict, tol: float) -> int:
    """1-based round at which ``sonmf.stop-ratio = tol`` stops the run (the last one if never)."""
    for s, ratio in enumerate(record["ratio"], start=1):
        if ratio <= tol:
            return s
    return record["rounds"]


def table(records: list[dict]) -> str:
    """Markdown: per tolerance, the runs whose clustering at the stop equals the fixed-round one."""
    head = (
        "| stop-ratio | runs with the fixed-round clustering | rounds run, median (max) | runs that differ |"
    )
    lines = [head, "|---|---|---|---|"]
    for tol in TOLERANCES:
        stops = [stop_round(r, tol) for r in records]
        same = [r["same_as_final"][s - 1] for r, s in zip(records, stops)]
        differ = ", ".join(
            f"{r['algorithm']} on {_name(r['dataset'])} (round {s})"
            for r, s, ok in zip(records, stops, same)
            if not ok
        )
        rounds = f"{int(np.median(stops))} ({max(stops)})"
        lines.append(f"| {tol:g} | {sum(same)} / {len(records)} | {rounds} | {differ or '-'} |")
    return "\n".join(lines) + "\n"


def _name(dataset: str) -> str:
    by_path = {Path(v).name: k for k, v in DEVELOPMENT_SETS.items()}
    return by_path.get(Path(dataset).name, dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["synthetic", *DEVELOPMENT_SETS])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument(
        "--all-algorithms-on",
        nargs="+",
        default=["synthetic", "3Sources", "BBCSport"],
        help="sets on which every algorithm runs; the others run the first algorithm only",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-root", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "stop_study")
    args = parser.parse_args()
    logging.getLogger("flwr").setLevel(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    found = available_sets(args.data_root, [s for s in args.sets if s != "synthetic"])
    sets = (["synthetic"] if "synthetic" in args.sets else []) + list(found)
    path = args.out / "runs.jsonl"
    done = (
        {(r["dataset"], r["algorithm"]) for r in map(json.loads, path.read_text().splitlines())}
        if path.exists()
        else set()
    )
    for name in sets:
        dataset = "synthetic" if name == "synthetic" else found[name]
        algorithms = args.algorithms if name in args.all_algorithms_on else args.algorithms[:1]
        for algorithm in algorithms:
            if (dataset, algorithm) in done:
                continue
            with tempfile.TemporaryDirectory() as runs:  # the run folders are not kept
                record = trajectory(dataset, algorithm, args.seed, Path(runs))
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            logging.getLogger(__name__).warning("%s on %s: %.0f s", algorithm, name, record["wall_s"])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    (args.out / "table.md").write_text(table(records))
    sys.stdout.write(table(records))


if __name__ == "__main__":
    main()
