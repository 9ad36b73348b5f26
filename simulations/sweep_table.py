"""A results table from a sweep's ``result.json`` files, beside the reference points and the paper.

Usage::

    python -m simulations.run -m +experiment=sonmf/table1     # paper A's Table 1 data sets
    python -m simulations.sweep_table multirun/table1/<time> --paper A --out table1.md
    python -m simulations.sweep_table multirun/imk-datasets/<time> --paper B

Rows: every algorithm of the sweep (and, within one, every setting the sweep varies besides the
seed and the data set, e.g. ``imk.lambda=0.0``), then the three reference points of
:func:`fedmf_app.common.references.reference_scores`, computed here on the views exactly as the
clients prepare them and with the runs' seeds, then the paper's own numbers where it reports the
data set. Cells: ACC / NMI / purity / ARI in %, mean ± std over the seeds (the papers report
ACC / NMI / purity). A second table gives sizes, seeds, wall time and peak memory. The reference
points need the data on this machine (an embedded name or a readable path).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from fedmf_app.common.references import REFERENCES, reference_scores
from fedmf_app.data.embedded import EMBEDDED
from fedmf_app.data.multiview import load_multiview, require_labels
from fedmf_app.methods.sonmf.params import resolve_rank, sonmf_options
from fedmf_app.registry import family_of, validate_run_config
from simulations.client_views import client_views
from simulations.quality.datasets import DEVELOPMENT_SETS
from simulations.spread import header, mean_spread

__all__ = ["PAPERS", "completed_runs", "display_name", "markdown", "references_for", "row_label"]

METRICS = ("acc", "nmi", "purity", "ari")
#: Keys that never make two runs different rows.
_NOT_A_SETTING = {"seed", "dataset", "num-clients", "out-dir", "run-name", "algorithm"}

#: The papers' reported ACC / NMI / purity (%), per data set and row label.
PAPERS: dict[str, dict[str, dict[str, tuple[float, float, float]]]] = {
    "A": {  # paper A, Table 1
        "3Sources": {
            "fedsonmf": (56.90, 56.90, 72.58),
            "fedmavg": (41.60, 29.41, 56.86),
            "fedmgs": (41.78, 30.73, 53.73),
        },
        "BBCSport": {
            "fedsonmf": (84.80, 76.45, 86.00),
            "fedmavg": (70.50, 61.17, 76.49),
            "fedmgs": (73.97, 55.45, 74.52),
        },
    },
    "B": {"Sonar": {"fmvc-imk": (74.52, 18.03, 74.52)}},  # paper B's text (its tables are lost)
}


def display_name(dataset: str) -> str:
    """Short name of a run-config ``dataset``: the development set's name, else the file stem."""
    if dataset in EMBEDDED:
        return dataset.upper() if dataset == "hw" else dataset
    stem = Path(dataset).name
    for name, where in DEVELOPMENT_SETS.items():
        if Path(where).name == stem:
            return name
    return Path(dataset).stem


def completed_runs(folder: Path) -> list[dict[str, Any]]:
    """Completed runs with final scores under ``folder`` (with ``job_s`` when timed)."""
    runs = []
    for path in sorted(folder.rglob("result.json")):
        result = json.loads(path.read_text())
        if result["status"] == "completed" and result.get("final") and "acc" in result["final"]:
            timing = path.parent / "job_timing.json"
            result["job_s"] = json.loads(timing.read_text())["job_s"] if timing.exists() else None
            runs.append(result)
    return runs


def row_label(run: dict[str, Any], varying: list[str]) -> str:
    """The algorithm, with the settings this sweep varies (``fmvc-imk, imk.lambda=0.0``)."""
    cfg = run["config"]
    return ", ".join([cfg["algorithm"]] + [f"{k}={cfg[k]}" for k in varying if k in _own(cfg)])


def _own(cfg: dict[str, Any]) -> dict[str, Any]:
    """The keys a run reads: the shared ones and its algorithm's family's (a result.json holds all)."""
    family = family_of(cfg["algorithm"]).name
    return {k: v for k, v in cfg.items() if "." not in k or k.split(".")[0] == family}


def _varying(runs: list[dict[str, Any]]) -> list[str]:
    own = [_own(r["config"]) for r in runs]
    keys = sorted({k for cfg in own for k in cfg} - _NOT_A_SETTING)
    return [k for k in keys if len({json.dumps(cfg.get(k)) for cfg in own if k in cfg}) > 1]


def references_for(dataset: str, cfg: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """The reference points on the views as the clients of a run with ``cfg`` prepare them.

    The NMF has paper A's rank (:func:`~fedmf_app.methods.sonmf.params.resolve_rank`: the
    clusters, capped at the smallest view), the rank fedsonmf factorises with.
    """
    data = load_multiview(dataset)
    m = len(data.views)
    base = validate_run_config({k: v for k, v in _own(cfg).items() if k not in ("out-dir", "run-name")})
    views = client_views(base, m)
    truth = require_labels(data)
    k = base["num-clusters"] or int(np.unique(truth).size)
    rank = resolve_rank(sonmf_options(base), k, [v.shape[1] for v in views])
    started = time.perf_counter()
    scores = reference_scores(views, truth, k, seeds, rank)
    return {
        "scores": scores,
        "n": data.num_samples,
        "k": k,
        "dims": [v.shape[1] for v in views],
        "wall_s": time.perf_counter() - started,
    }


def _cell(scores: list[dict[str, float]]) -> str:
    return " / ".join(mean_spread((s[m] for s in scores), scale=100) for m in METRICS)


def markdown(runs: list[dict[str, Any]], references: dict[str, dict[str, Any]], paper: str | None) -> str:
    """The results table and the cost table.

    Parameters
    ----------
    runs : list of dict
        Completed ``result.json`` contents.
    references : dict
        Run-config ``dataset`` -> :func:`references_for`.
    paper : {"A", "B"} or None
        Whose reported numbers to add.
    """
    varying = _varying(runs)
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        groups[row_label(r, varying)][r["config"]["dataset"]].append(r)
    order = list(DEVELOPMENT_SETS)
    datasets = sorted(
        {r["config"]["dataset"] for r in runs},
        key=lambda d: (order.index(display_name(d)) if display_name(d) in order else len(order), d),
    )
    names = [display_name(d) for d in datasets]
    rows = ["| method | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label in sorted(groups):
        cells = [
            _cell([r["final"] for r in groups[label][d]]) if d in groups[label] else "" for d in datasets
        ]
        rows.append(f"| {label} (federated) | " + " | ".join(cells) + " |")
    for ref in REFERENCES:
        rows.append(
            f"| {ref} (centralised) | "
            + " | ".join(_cell(references[d]["scores"][ref]) for d in datasets)
            + " |"
        )
    reported = PAPERS.get(paper or "", {})
    for label in sorted({lab for name in names for lab in reported.get(name, {})}):
        cells = []
        for name in names:
            value = reported.get(name, {}).get(label)
            cells.append(" / ".join(f"{v:.1f}" for v in value) + " / –" if value else "")
        rows.append(f"| {label}, paper {paper} (reported) | " + " | ".join(cells) + " |")
    cost = [
        "| data set | n | views (dims) | k | runs | rounds | wall per run (s) | job per run (s) | "
        "peak RSS server / client (MiB) | references, all seeds (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in datasets:
        mine = [r for r in runs if r["config"]["dataset"] == d]
        ref = references[d]
        wall = np.array([r["summary"]["wall_s"] for r in mine])
        jobs = [r["job_s"] for r in mine if r["job_s"] is not None]
        rounds = sorted({len(r.get("rounds") or []) or r["config"]["num-server-rounds"] for r in mine})
        server = max(r["summary"].get("peak_rss_mb_server", float("nan")) for r in mine)
        client = max(r["summary"].get("peak_rss_mb_client_max", float("nan")) for r in mine)
        dims = ", ".join(map(str, ref["dims"]))
        job = f"{np.mean(jobs):.1f}" if jobs else "n/a"
        cost.append(
            f"| {display_name(d)} | {ref['n']} | {len(ref['dims'])} ({dims}) | {ref['k']} | {len(mine)} | "
            f"{', '.join(map(str, rounds))} | {mean_spread(wall)} | {job} | "
            f"{server:.0f} / {client:.0f} | {ref['wall_s']:.1f} |"
        )
    note = (
        "Cells: " + header("ACC / NMI / purity / ARI in %") + " (federated: the final "
        "clustering of each run; references: the same seeds, on the views as the clients prepare "
        "them; the best single view is chosen with the labels). Paper rows: as reported (no ARI)."
    )
    return "\n".join(rows) + "\n\n" + note + "\n\n" + "\n".join(cost) + "\n"


def main() -> None:
    """Read the sweep, compute the references, print (and optionally write) the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the sweep folder (multirun/<name>/<time>)")
    parser.add_argument("--paper", choices=sorted(PAPERS), help="add this paper's reported numbers")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    runs = completed_runs(args.folder)
    if not runs:
        raise SystemExit(f"no completed run with final scores under {args.folder}")
    references = {}
    for dataset in sorted({r["config"]["dataset"] for r in runs}):
        mine = [r for r in runs if r["config"]["dataset"] == dataset]
        references[dataset] = references_for(
            dataset, mine[0]["config"], sorted({r["config"]["seed"] for r in mine})
        )
    text = markdown(runs, references, args.paper)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
