"""The quality study's tables: per method, the grid's mean ranks, then defaults beside best-of-grid.

Reads the JSON lines of :mod:`simulations.quality.study` (``docs/quality/runs/<family>.jsonl``),
computes the reference points on the same prepared views (:func:`reference_points`) and writes
Markdown. Usage::

    python -m simulations.quality.report --out <dir>/tables.md
    python -m simulations.quality.report --out <dir>/tables.md --update-doc docs/quality.md

For each family: (1) every configuration's mean ACC per data set and its mean rank across the data
sets (rank 1 = best ACC on that set; ties share the mean rank); (2) per data set, the defaults'
ACC / NMI / ARI, the best configuration of the grid there (chosen with the labels, as the papers'
tables were made) and the three reference points. ``--update-doc PAGE`` also writes, between the
page's ``<!-- goal:start -->`` and ``<!-- goal:end -->`` lines, one table of every family's defaults
against its goal (:func:`render_goal`).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.references import REFERENCES, pooled_nmf_kmeans, reference_scores
from fedmf_app.common.sparse import issparse
from fedmf_app.data.multiview import load_multiview, require_labels
from fedmf_app.methods.sonmf.params import resolve_rank, sonmf_options
from fedmf_app.registry import between_markers, defaults, validate_run_config
from simulations.client_views import client_views
from simulations.quality.datasets import DEVELOPMENT_SETS, available_sets
from simulations.quality.study import ALGORITHMS, line_key
from simulations.spread import header, mean_spread

__all__ = ["mean_ranks", "reference_points", "render_family", "render_goal"]

METRICS = ("acc", "nmi", "ari")
#: A configuration run on fewer data sets is shown but not ranked.
MIN_SETS_TO_RANK = 4
#: NMF + k-means on the pooled views at rank k, the number of classes: fedsonmf's goal, a harder
#: one than the NMF at fedsonmf's own rank (three components per cluster) of :data:`REFERENCES`.
NMF_RANK_K = "NMF + k-means, pooled views, rank k"
#: The reference each family's defaults must reach (the issue's goal).
TARGET = {"sonmf": NMF_RANK_K, "imk": REFERENCES[0], "iai": REFERENCES[0]}


def load_records(path: Path) -> list[dict[str, Any]]:
    """The study's records (one per run and final-only value; the first of any repeated run)."""
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records.setdefault(line_key(record), record)
    return list(records.values())


def describe(config: dict[str, Any]) -> str:
    """The keys of ``config`` that differ from the app's defaults (``defaults`` when none)."""
    base = defaults()
    changed = [f"{k}={v}" for k, v in sorted(config.items()) if base.get(k) != v]
    return ", ".join(changed) or "defaults"


def by_config(records: list[dict[str, Any]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Configuration description -> data set -> its runs (one per seed)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        out[describe(r["config"])][r["dataset"]].append(r)
    return {k: dict(v) for k, v in out.items()}


def mean_ranks(acc: dict[str, dict[str, float]], sets: list[str]) -> dict[str, float]:
    """Mean over ``sets`` of each configuration's rank by ACC (1 = best; ties share).

    Parameters
    ----------
    acc : dict
        Configuration -> data set -> mean ACC; only configurations with every set are ranked.
    sets : list of str

    Returns
    -------
    dict
        Configuration -> mean rank.
    """
    complete = [c for c in acc if all(s in acc[c] for s in sets)]
    ranks = {c: 0.0 for c in complete}
    for s in sets:
        values = rankdata([-acc[c][s] for c in complete], method="average")
        for c, rank in zip(complete, values, strict=True):
            ranks[c] += rank / len(sets)
    return ranks


def reference_points(
    dataset: str, algorithm: str, seeds: list[int], rank_k: bool = False
) -> dict[str, list[dict[str, float]]]:
    """The reference points on the views exactly as the clients of ``algorithm`` receive them.

    The NMF has fedsonmf's rank (three components per cluster, capped at the smallest view).

    Parameters
    ----------
    dataset : str
        Run-config ``dataset``.
    algorithm : str
    seeds : list of int
    rank_k : bool
        Also :data:`NMF_RANK_K`, the NMF at rank ``k``, the number of classes (fedsonmf's goal).

    Returns
    -------
    dict
        See :func:`fedmf_app.common.references.reference_scores`; with ``rank_k``, also
        :data:`NMF_RANK_K`.
    """
    data = load_multiview(dataset)
    m = len(data.views)
    cfg = validate_run_config({"algorithm": algorithm, "dataset": dataset, "num-clients": m})
    views = client_views(cfg, m)
    truth = require_labels(data)
    k = int(np.unique(truth).size)
    refs = reference_scores(
        views, truth, k, seeds, resolve_rank(sonmf_options(cfg), k, [v.shape[1] for v in views])
    )
    if rank_k:
        dense = [v.toarray() if issparse(v) else v for v in views]
        refs[NMF_RANK_K] = [
            clustering_scores(truth, pooled_nmf_kmeans(dense, k, k, np.random.default_rng(s))) for s in seeds
        ]
    return refs


def _mean(runs: list[dict[str, Any]], key: str) -> float:
    # scaled before the mean, as mean_spread does, so that both round a mean alike
    return float(np.mean([100 * r[key] for r in runs]))


def _cell(runs: list[dict[str, Any]]) -> str:
    return " / ".join(mean_spread((r[key] for r in runs), scale=100) for key in METRICS)


def render_family(family: str, records: list[dict[str, Any]], refs: dict[str, dict[str, Any]]) -> str:
    """Markdown of one family: the grid table and the defaults / best-of-grid table."""
    configs = by_config(records)
    sets = [s for s in DEVELOPMENT_SETS if any(s in runs for runs in configs.values())]
    acc = {c: {s: _mean(runs, "acc") for s, runs in per.items()} for c, per in configs.items()}
    rankable = {c: per for c, per in acc.items() if len(per) >= MIN_SETS_TO_RANK}
    ranked_sets = [s for s in sets if all(s in per for per in rankable.values())]
    ranks = mean_ranks(rankable, ranked_sets)
    order = sorted(ranks, key=lambda c: (ranks[c], c != "defaults")) + sorted(set(acc) - set(ranks))
    seeds = sorted({r["seed"] for r in records})
    lines = [
        f"### {ALGORITHMS[family]}: the grid ({len(configs)} configurations, seeds {seeds})",
        "",
        "ACC % per data set (mean over the seeds), and the mean rank across the data sets every "
        f"ranked configuration was run on ({', '.join(ranked_sets)}; 1 = best on each); a "
        f"configuration run on fewer than {MIN_SETS_TO_RANK} data sets is not ranked.",
        "",
        "| configuration | " + " | ".join(sets) + " | mean rank | s per run |",
        "|---" * (len(sets) + 3) + "|",
    ]
    for c in order:
        seconds = np.mean([r["seconds"] for per in configs[c].values() for r in per])
        cells = " | ".join(f"{acc[c][s]:.1f}" if s in acc[c] else "" for s in sets)
        rank = f"{ranks[c]:.2f}" if c in ranks else "not ranked"
        lines.append(f"| {c} | {cells} | {rank} | {seconds:.0f} |")
    lines += [
        "",
        f"### {ALGORITHMS[family]}: defaults beside the best of the grid",
        "",
        header("ACC / NMI / ARI in %") + ". *Best of grid* picks, per data set, the "
        "configuration with the best ACC there: tuned with the labels, as the papers' tables were. "
        f"The goal: defaults >= {TARGET[family]}.",
        "",
        "| data set | defaults | best of grid (tuned with labels) | "
        + " | ".join(REFERENCES)
        + " | defaults reach the goal |",
        "|---" * (len(REFERENCES) + 4) + "|",
    ]
    for s in sets:
        default_runs = configs.get("defaults", {}).get(s)
        best = max((c for c in configs if s in configs[c]), key=lambda c: acc[c][s])
        ref_cells = " | ".join(_cell(refs[s][name]) for name in REFERENCES)
        if default_runs is None:
            verdict, default_cell = "n/a", "n/a"
        else:
            target = _mean(refs[s][TARGET[family]], "acc")
            verdict = "yes" if _mean(default_runs, "acc") >= target else f"no ({target:.1f})"
            default_cell = _cell(default_runs)
        lines.append(
            f"| {s} | {default_cell} | {_cell(configs[best][s])} ({best}) | {ref_cells} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def render_goal(families: dict[str, tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]]) -> str:
    """Markdown: every family's defaults against its goal, one row per family.

    Parameters
    ----------
    families : dict
        Family -> (its study records, data set -> its reference points), as
        :func:`render_family` takes them.

    Returns
    -------
    str
        A caption and a table: per data set the defaults' mean ACC % and, in brackets, the mean
        ACC of the family's target reference (:data:`TARGET`); bold where the defaults reach it.
    """
    sets = [s for s in DEVELOPMENT_SETS if any(s in refs for _, refs in families.values())]
    seeds = sorted({r["seed"] for records, _ in families.values() for r in records})
    lines = [
        f"Defaults' ACC % (mean over the seeds {seeds}), and in brackets the target reference's on "
        "the same views and seeds; **bold**: the goal is reached.",
        "",
        "| method (target) | " + " | ".join(sets) + " |",
        "|---" * (len(sets) + 1) + "|",
    ]
    for family, (records, refs) in families.items():
        runs = by_config(records).get("defaults", {})
        cells = []
        for s in sets:
            if s not in runs or s not in refs:
                cells.append("n/a")
                continue
            ours, target = _mean(runs[s], "acc"), _mean(refs[s][TARGET[family]], "acc")
            cells.append(f"**{ours:.1f}** ({target:.1f})" if ours >= target else f"{ours:.1f} ({target:.1f})")
        lines.append(f"| {ALGORITHMS[family]} ({TARGET[family]}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("docs/quality/runs"))
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")
    parser.add_argument(
        "--update-doc",
        type=Path,
        help="also write the defaults-against-the-goal table between this page's goal markers",
    )
    args = parser.parse_args()
    sections = []
    goal: dict[str, tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]] = {}
    for family, algorithm in ALGORITHMS.items():
        path = args.runs / f"{family}.jsonl"
        if not path.exists():
            continue
        records = load_records(path)
        names = sorted({r["dataset"] for r in records}, key=list(DEVELOPMENT_SETS).index)
        seeds = sorted({r["seed"] for r in records})
        sets = available_sets(args.data_root, names)
        rank_k = TARGET[family] == NMF_RANK_K
        refs = {s: reference_points(d, algorithm, seeds, rank_k) for s, d in sets.items()}
        records = [r for r in records if r["dataset"] in sets]
        sections.append(render_family(family, records, refs))
        goal[family] = (records, refs)
    if not sections:
        raise SystemExit(f"no study records under {args.runs}")
    text = "\n".join(sections)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        print(text)
    if args.update_doc:
        args.update_doc.write_text(between_markers(args.update_doc.read_text(), "goal", render_goal(goal)))


if __name__ == "__main__":
    main()
