"""Study: fedsonmf's defaults on the six development sets, several seeds, every label read.

Runs ``fedsonmf`` with every option at its default (plus the overrides of ``--config``) on each
development set present, once per seed, through the real Strategy and NumPyClients in process
(:func:`fedmf_app.in_process.run_in_process`). Each run is scored three times from its
final ``V``: by the run itself (``result.json["final"]``, the read ``sonmf.cluster-columns``
chose), and by k-means under every read of
:data:`~fedmf_app.methods.sonmf.clustering.READS` (as-is, unit-norm, hellinger; the same k-means
seed), so the reads are compared on the same runs. Appends one JSON line per run to
``<out>/runs.jsonl`` (a rerun skips the runs already there) and writes ``<out>/table.md``: per
data set and configuration, ACC / NMI mean ± std (population, ddof = 0) over the seeds beside
centralised NMF + k-means at rank k on the pooled views (the reference of docs/quality.md).
Usage::

    python -m simulations.sonmf.defaults_study --seeds 0 1 2 --out docs/sonmf/defaults_study
    python -m simulations.sonmf.defaults_study --table-only --out docs/sonmf/defaults_study
    python -m simulations.sonmf.defaults_study --sets Sonar Yale --name random-start \\
        --config sonmf.start=random
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

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data.multiview import load_multiview
from fedmf_app.in_process import run_in_process
from fedmf_app.methods.sonmf.clustering import READS, cluster_columns
from simulations.overrides import parse_overrides
from simulations.quality.datasets import DEVELOPMENT_SETS, available_sets
from simulations.spread import header, mean_spread

ROOT = Path(__file__).resolve().parents[2]

#: ACC % of NMF + k-means at rank k, the number of classes, on the pooled views prepared as the
#: clients prepare them, mean over seeds 0-2 (:func:`fedmf_app.common.references.reference_scores`
#: with its default rank, on the views of :func:`simulations.quality.report.reference_points`).
NMF_REFERENCE_ACC = {
    "HW": 91.3,
    "ORL": 69.9,
    "Yale": 63.6,
    "Sonar": 50.5,
    "3Sources": 66.9,
    "BBCSport": 83.5,
}


def one_run(name: str, dataset: str, seed: int, config: dict, out: Path) -> dict:
    """One in-process run and its scores under every label read."""
    views = load_multiview(dataset)
    overrides = {"dataset": dataset, "num-clients": len(views.views), "seed": seed, **config}
    started = time.perf_counter()
    strategy = run_in_process(overrides, out, f"{name}-s{seed}")
    wall = time.perf_counter() - started
    data = strategy.recorder.data
    truth = views.labels
    k = strategy.num_clusters or strategy.rank
    reads = {
        read: clustering_scores(
            truth, cluster_columns(strategy.v, k, read, rng_for(seed, Stream.FINAL_CLUSTERING))
        )
        for read in READS
    }
    return {
        "set": name,
        "seed": seed,
        "config": config,
        "rank": data["summary"]["rank"],
        "rounds": len(data["rounds"]),
        "stopped_early": data["summary"].get("stopped_early") is not None,
        "objective": data["rounds"][-1]["objective"],
        "start_s": data["summary"].get("start_s"),
        "wall_s": wall,
        "read": data["summary"]["cluster_columns"],
        "default": {k: data["final"][k] for k in ("acc", "nmi", "purity", "ari")},
        **reads,
    }


def table(records: list[dict]) -> str:
    """Markdown: per data set and configuration, ACC / NMI (%) mean ± std (ddof = 0) of the run's
    own read, and ACC under each read."""
    lines = [
        header("ACC / NMI in %") + "; NMF + k-means ACC: the centralised reference.",
        "",
        "| data set | config | seeds | rank | rounds | s per run | read | ACC | NMI | "
        + "".join(f"ACC {read} | " for read in READS)
        + "NMF + k-means ACC |",
        "|---|---|---|---|---|---|---|---|---|" + "---|" * len(READS) + "---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["set"], r["name"]), []).append(r)
    order = list(DEVELOPMENT_SETS)
    for (name, config), runs in sorted(groups.items(), key=lambda g: (order.index(g[0][0]), g[0][1])):

        def cell(read, key, runs=runs):
            return mean_spread((r[read][key] for r in runs), scale=100)

        lines.append(
            f"| {name} | {config} | {len(runs)} | {runs[0]['rank']} | "
            f"{np.mean([r['rounds'] for r in runs]):.0f} | {np.mean([r['wall_s'] for r in runs]):.0f} | "
            f"{runs[0]['read']} | {cell('default', 'acc')} | {cell('default', 'nmi')} | "
            + "".join(f"{cell(read, 'acc')} | " for read in READS)
            + f"{NMF_REFERENCE_ACC[name]} |"
        )
    return "\n".join(lines) + "\n"


def read_records(path: Path) -> list[dict]:
    """The study's records in ``path``, the first of each (set, name, seed): two studies writing
    one file may both run a run.

    Parameters
    ----------
    path : Path
        A ``runs.jsonl`` of :func:`one_run` records, each with its ``name``.

    Returns
    -------
    list of dict
        In file order.
    """
    unique: dict[tuple, dict] = {}
    for record in map(json.loads, path.read_text().splitlines()):
        unique.setdefault((record["set"], record["name"], record["seed"]), record)
    return list(unique.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(DEVELOPMENT_SETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--name", default="defaults", help="label of this configuration in the table")
    parser.add_argument("--config", nargs="*", default=[], help="run-config overrides, key=value")
    parser.add_argument("--data-root", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "defaults_study")
    parser.add_argument("--table-only", action="store_true", help="only write table.md from runs.jsonl")
    args = parser.parse_args()
    logging.getLogger("flwr").setLevel(logging.WARNING)
    config = parse_overrides(args.config)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "runs.jsonl"
    records = read_records(path) if path.exists() else []
    done = {(r["set"], r["name"], r["seed"]) for r in records}
    for name, dataset in ({} if args.table_only else available_sets(args.data_root, args.sets)).items():
        for seed in args.seeds:
            if (name, args.name, seed) in done:
                continue
            with tempfile.TemporaryDirectory() as runs:  # the run folders are not kept
                record = {"name": args.name, **one_run(name, dataset, seed, config, Path(runs))}
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            records.append(record)
            logging.getLogger(__name__).warning(
                "%s seed %d: ACC %.3f, %.0f s", name, seed, record["default"]["acc"], record["wall_s"]
            )
    (args.out / "table.md").write_text(table(records))
    sys.stdout.write(table(records))


if __name__ == "__main__":
    main()
