"""Paper A's Table 1 protocol on the sweep of ``+experiment=sonmf/table1``: one Markdown table.

Usage::

    python -m simulations.run -m +experiment=sonmf/table1            # 4 data sets x 10 seeds
    python -m simulations.sonmf.table1 multirun/table1/<time> --out table1.md

For every data set found among the completed runs of the sweep it reports the federated method's
ACC / NMI / purity / ARI (percent, mean ± standard deviation over the seeds, from each run's
``result.json["final"]``) next to two centralised baselines computed here, on the pooled views
prepared exactly as the clients prepare theirs (same ``negative-values`` and
``view-normalisation``) and with the same seeds (:mod:`fedmf_app.methods.sonmf.centralised`):
NMF (same rank as the federated runs) + k-means, and k-means on the concatenated views. A second
table gives the sizes, seeds, wall time per run and peak memory. Baselines need the data on this
machine (an embedded name or a readable path).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.embedded import EMBEDDED
from fedmf_app.data.multiview import load_multiview, require_labels
from fedmf_app.data.preprocess import prepare_view
from fedmf_app.methods.sonmf.centralised import concat_kmeans, pooled_nmf_kmeans

METRICS = ("acc", "nmi", "purity", "ari")
ORDER = ("hw", "ORL", "yaleA_3view", "sonar_3view")


def display_name(dataset: str) -> str:
    """Short name of a run-config ``dataset`` (embedded name or file stem)."""
    return dataset if dataset in EMBEDDED else Path(dataset).stem


def completed_runs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Completed runs with final scores under ``folder``, grouped by data set, sorted by seed."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(folder.rglob("result.json")):
        result = json.loads(path.read_text())
        if result["status"] == "completed" and result.get("final") and "acc" in result["final"]:
            timing = path.parent / "job_timing.json"
            result["job_s"] = json.loads(timing.read_text())["job_s"] if timing.exists() else None
            groups[result["config"]["dataset"]].append(result)
    for runs in groups.values():
        runs.sort(key=lambda r: r["config"]["seed"])
    return dict(groups)


def baseline_scores(dataset: str, cfg: dict[str, Any], rank: int, seeds: list[int]) -> dict[str, Any]:
    """Both centralised baselines for every seed (NMF with the federated runs' ``rank``)."""
    data = load_multiview(dataset)
    truth = require_labels(data)
    views = [
        prepare_view(v, cfg["negative-values"], cfg["view-normalisation"], f"view {i}")
        for i, v in enumerate(data.views)
    ]
    k = cfg["num-clusters"] or data.num_classes
    out: dict[str, Any] = {
        "nmf": [],
        "kmeans": [],
        "n": data.num_samples,
        "k": k,
        "dims": [v.shape[1] for v in views],
    }
    started = time.perf_counter()
    for seed in seeds:
        out["nmf"].append(
            clustering_scores(truth, pooled_nmf_kmeans(views, rank, k, np.random.default_rng(seed)))
        )
        out["kmeans"].append(clustering_scores(truth, concat_kmeans(views, k, np.random.default_rng(seed))))
    out["wall_s"] = time.perf_counter() - started
    return out


def cell(scores: list[dict[str, float]]) -> str:
    """``ACC / NMI / Pur / ARI`` in percent, mean ± std over seeds."""
    parts = []
    for m in METRICS:
        values = 100 * np.array([s[m] for s in scores])
        parts.append(f"{values.mean():.1f}±{values.std():.1f}")
    return " / ".join(parts)


def markdown(groups: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]]) -> str:
    """The results table and the cost table."""
    names = sorted(
        groups, key=lambda d: (ORDER.index(display_name(d)) if display_name(d) in ORDER else len(ORDER), d)
    )
    algorithm = groups[names[0]][0]["config"]["algorithm"]
    head = "| method | " + " | ".join(display_name(d) for d in names) + " |"
    rule = "|---" * (len(names) + 1) + "|"
    rows = [
        head,
        rule,
        f"| {algorithm} (federated, one view per client) | "
        + " | ".join(cell([r["final"] for r in groups[d]]) for d in names)
        + " |",
        "| NMF + k-means (centralised, pooled views) | "
        + " | ".join(cell(baselines[d]["nmf"]) for d in names)
        + " |",
        "| k-means (centralised, concatenated views) | "
        + " | ".join(cell(baselines[d]["kmeans"]) for d in names)
        + " |",
    ]
    cost = [
        "| data set | n | views (dims) | k | rank | rounds | seeds | wall per run (s) | "
        "job per run (s) | peak RSS server / client (MiB) | baselines, all seeds (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in names:
        runs, base = groups[d], baselines[d]
        cfg = runs[0]["config"]
        wall = np.array([r["summary"]["wall_s"] for r in runs])
        jobs = [r["job_s"] for r in runs if r["job_s"] is not None]
        server = max(r["summary"].get("peak_rss_mb_server", float("nan")) for r in runs)
        client = max(r["summary"].get("peak_rss_mb_client_max", float("nan")) for r in runs)
        job = f"{np.mean(jobs):.1f}" if jobs else "n/a"
        cost.append(
            f"| {display_name(d)} | {base['n']} | {len(base['dims'])} "
            f"({', '.join(map(str, base['dims']))}) | {base['k']} | {runs[0]['summary']['rank']} | "
            f"{cfg['num-server-rounds']} | {len(runs)} | {wall.mean():.1f}±{wall.std():.1f} | "
            f"{job} | {server:.0f} / {client:.0f} | {base['wall_s']:.1f} |"
        )
    note = (
        "Cells: ACC / NMI / purity / ARI in %, mean ± std over the seeds listed below "
        "(federated: k-means on V^T, 10 replicates x 300 iterations; baselines: same seeds)."
    )
    return "\n".join(rows) + "\n\n" + note + "\n\n" + "\n".join(cost) + "\n"


def main() -> None:
    """Read the sweep, compute the baselines, print (and optionally write) the tables."""
    parser = argparse.ArgumentParser(description="Table 1 of paper A from a table1 sweep")
    parser.add_argument("folder", type=Path, help="the sweep folder (multirun/table1/<time>)")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    groups = completed_runs(args.folder)
    if not groups:
        raise SystemExit(f"no completed run with final scores under {args.folder}")
    baselines = {}
    for dataset, runs in groups.items():
        baselines[dataset] = baseline_scores(
            dataset, runs[0]["config"], runs[0]["summary"]["rank"], [r["config"]["seed"] for r in runs]
        )
    text = markdown(groups, baselines)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
