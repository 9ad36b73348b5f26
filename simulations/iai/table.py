"""Paper C's results on incomplete views: table and figures, ACC/NMI/ARI as mean ± standard
deviation over seeds (:mod:`simulations.spread`, named in the table's caption).

Reads every ``*.json`` under the given folders that holds a run config and final scores (a
``result.json`` of a Flower run, or a ``simulations.iai.bench --out`` file), groups the runs by data
set, method and missing rate, and prints one Markdown row per group. A method is the algorithm;
fmvc-iai runs are further split by the ablation switches (M1 imputation, M3 attribute loss, M4
structure loss; and M2, paper C's EMD-weighted fusion of the views, off by default), the
complete-view algorithms by how they filled missing rows (run config ``missing-fill``). ``s/run`` is
the mean wall time of a hydra job (its ``job_timing.json``), when there is one::

    python -m simulations.iai.table multirun/iai_hw_missing/<time> multirun/iai_hw_baselines/<time> \
        --out hw_missing_rates.md --rates-figure hw_missing_rates.png
    python -m simulations.iai.table <folders> --seeds 0,1,2 --rates 0.1,0.9 \
        --ablation-figure hw_ablation.png          # the ablation's cells only
    python -m simulations.iai.table <folders> --rounds-out rounds.md --rounds-figure rounds.png

``--rounds-out`` and ``--rounds-figure`` follow fmvc-iai over the rounds (the per-round scores of
each run's ``result.json``, and the connected components of its global graph A_g).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

from simulations.spread import header, mean_spread

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator  # noqa: E402

__all__ = [
    "collect",
    "export_runs",
    "iai_table",
    "markdown",
    "method_name",
    "plot_ablation",
    "plot_missing_rates",
    "plot_rounds",
    "rounds_table",
    "variant_name",
]

METRICS = ("acc", "nmi", "ari")

#: The caption of :func:`markdown`'s table: its cells and their statistic.
CAPTION = header("ACC / NMI / ARI") + "; s/run: mean wall time of a job."

#: Per-round record keys kept by :func:`collect` and :func:`export_runs` (scores of that round's
#: clustering, the connected components of fmvc-iai's global graph, its training losses).
ROUND_KEYS = ("round", *METRICS, "components", "loss_attribute", "loss_structure", "loss_clustering")


def variant_name(cfg: dict[str, Any]) -> str:
    """``full`` (M1, M3, M4 on, views weighted equally), or the modules removed (e.g. ``no M1``)
    and paper C's EMD-weighted fusion M2 when it is on (``M2 weighted``), from a run config."""
    removed = [
        name
        for name, off in (
            ("M1", cfg.get("iai.imputation") == "zeros"),
            ("M3", cfg.get("iai.attribute-loss") is False),
            ("M4", cfg.get("iai.structure-loss") is False),
        )
        if off
    ]
    parts = ["no " + "+".join(removed)] if removed else []
    if cfg.get("iai.fusion", "uniform") != "uniform":
        parts.append("M2 weighted")
    return " ".join(parts) or "full"


def method_name(cfg: dict[str, Any]) -> str:
    """The algorithm, with fmvc-iai's ablation variant or a complete-view method's row filling.

    Examples: ``fmvc-iai``, ``fmvc-iai no M4``, ``fedsonmf (mean fill)``, ``fmvc-imk (mean fill,
    observed-rows graph)`` (``imk.missing-graph = observed``); a run that drops other than the
    default number of views per selected sample says so (``fmvc-iai, 5 views dropped``).
    """
    dropped = int(cfg.get("missing-views-dropped", 0))
    protocol = f", {dropped} views dropped" if dropped else ""
    if cfg["algorithm"] == "fmvc-iai":
        variant = variant_name(cfg)
        return ("fmvc-iai" if variant == "full" else f"fmvc-iai {variant}") + protocol
    if float(cfg.get("missing-rate", 0.0)) > 0:
        graph = ", observed-rows graph" if cfg.get("imk.missing-graph") == "observed" else ""
        return f"{cfg['algorithm']} ({cfg.get('missing-fill', 'mean')} fill{graph}{protocol})"
    return cfg["algorithm"]


def collect(
    folders: list[Path], seeds: set[int] | None = None, rates: set[float] | None = None
) -> list[dict[str, Any]]:
    """Every finished run under ``folders``.

    Parameters
    ----------
    folders : list of Path
    seeds : set of int, optional
        Keep only runs with these seeds (e.g. to compare ablation variants on the same seeds).
    rates : set of float, optional
        Keep only runs at these missing rates.

    Returns
    -------
    list of dict
        ``data``, ``method``, ``rate``, ``seed``, ``config``, ``acc``, ``nmi``, ``ari``,
        ``job_s`` (the file's own ``job_s``, else the ``job_timing.json`` next to it, else None)
        and ``rounds`` (per round, the :data:`ROUND_KEYS` it has; empty for a file without
        rounds).
    """
    runs = []
    for path in sorted(p for folder in folders for p in Path(folder).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        cfg, final = data.get("config"), data.get("final")
        if not cfg or not final or "algorithm" not in cfg or "acc" not in final:
            continue
        if seeds is not None and cfg["seed"] not in seeds:
            continue
        if rates is not None and float(cfg.get("missing-rate", 0.0)) not in rates:
            continue
        timing = path.parent / "job_timing.json"
        job_s = data.get("job_s")
        if job_s is None and timing.is_file():
            job_s = json.loads(timing.read_text()).get("job_s")
        runs.append(
            {
                "data": Path(str(cfg["dataset"])).stem,
                "method": method_name(cfg),
                "rate": float(cfg.get("missing-rate", 0.0)),
                "seed": cfg["seed"],
                "job_s": job_s,
                "config": cfg,
                **{m: float(final[m]) for m in METRICS},
                "rounds": [
                    {k: r[k] for k in ROUND_KEYS if r.get(k) is not None} for r in data.get("rounds", [])
                ],
            }
        )
    return runs


def export_runs(runs: list[dict[str, Any]], folder: Path) -> list[Path]:
    """Write each run as a small JSON (its config, scores, job time and per-round scores,
    components and losses; no labels) that :func:`collect` reads back, so tables and figures can
    be rebuilt from a committed folder.

    Parameters
    ----------
    runs : list of dict
        From :func:`collect`.
    folder : Path
        Created if missing.

    Returns
    -------
    list of Path
        One file per run, named ``<data>_<method>_<rate>_seed<seed>.json``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in runs:
        name = f"{run['data']}_{run['method']}_{run['rate']:g}_seed{run['seed']}"
        path = folder / ("".join(c if c.isalnum() or c in "-_." else "-" for c in name) + ".json")
        path.write_text(
            json.dumps(
                {
                    "config": run["config"],
                    "job_s": run["job_s"],
                    "final": {m: run[m] for m in METRICS},
                    "rounds": run["rounds"],
                },
                indent=1,
            )
            + "\n"
        )
        paths.append(path)
    return paths


def _groups(runs: list[dict[str, Any]]) -> dict[tuple[str, str, float], list[dict[str, Any]]]:
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[(run["data"], run["method"], run["rate"])].append(run)
    return groups


def _save(fig: Any, axes: Any, path: Path, legend_below: bool = False) -> Path:
    for ax in axes:
        ax.grid(alpha=0.3)
    if legend_below:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8)
        fig.tight_layout(rect=(0, 0.15, 1, 1))
    else:
        axes[0].legend(fontsize=7)
        fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and population standard deviation, the statistic of :func:`~simulations.spread.mean_spread`."""
    x = np.asarray(values, dtype=np.float64)
    return float(x.mean()), float(x.std())


def iai_table(folders: list[Path], seeds: set[int] | None = None, rates: set[float] | None = None) -> str:
    """Markdown table of the runs found under ``folders``: :func:`markdown` of :func:`collect`.

    Parameters
    ----------
    folders : list of Path
    seeds, rates : set, optional
        See :func:`collect`.

    Returns
    -------
    str
    """
    return markdown(collect(folders, seeds, rates))


def markdown(runs: list[dict[str, Any]]) -> str:
    """Markdown table of ``runs`` (from :func:`collect`).

    Returns
    -------
    str
        A caption naming the statistic (:data:`CAPTION`), then one row per (data, method, missing
        rate), sorted by data, rate, then method.
    """
    rows = [
        CAPTION,
        "",
        "| data | method | missing rate | runs (seeds) | ACC | NMI | ARI | s/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (data, method, rate), group in sorted(
        _groups(runs).items(), key=lambda item: (item[0][0], item[0][2], item[0][1])
    ):
        seed_list = ",".join(str(r["seed"]) for r in sorted(group, key=lambda r: r["seed"]))
        cells = [mean_spread((r[m] for r in group), digits=3) for m in METRICS]
        times = [r["job_s"] for r in group if r["job_s"] is not None]
        seconds = f"{np.mean(times):.0f}" if times else "–"
        rows.append(
            f"| {data} | {method} | {rate:g} | {len(group)} ({seed_list}) | "
            + " | ".join(cells)
            + f" | {seconds} |"
        )
    return "\n".join(rows)


def plot_missing_rates(runs: list[dict[str, Any]], path: Path) -> Path:
    """ACC, NMI and ARI against the missing rate, one line per method, the sd over seeds as error bars;
    ablation variants and runs with a non-default ``missing-views-dropped`` are left to
    :func:`plot_ablation` and the table. ``runs`` from :func:`collect`; returns the PNG ``path``."""
    groups = _groups([r for r in runs if " no M" not in r["method"] and "views dropped" not in r["method"]])
    fig, axes = plt.subplots(1, len(METRICS), figsize=(13, 4), sharex=True)
    for data, method in sorted({(d, m) for d, m, _ in groups}):
        rates = sorted(r for d, m, r in groups if (d, m) == (data, method))
        for ax, metric in zip(axes, METRICS):
            stats = np.array([_mean_sd([r[metric] for r in groups[(data, method, rate)]]) for rate in rates])
            ax.errorbar(
                rates, stats[:, 0], yerr=stats[:, 1], marker="o", capsize=3, label=f"{method} ({data})"
            )
    for ax, metric in zip(axes, METRICS):
        ax.set_xlabel("missing rate η")
        ax.set_title(metric.upper())
    return _save(fig, axes, path)


def plot_ablation(runs: list[dict[str, Any]], path: Path) -> Path:
    """fmvc-iai's ACC and NMI per ablation variant, grouped by missing rate, the sd over seeds as
    error bars.

    Only rates at which some variant ran are drawn; runs on different data sets are pooled (pass
    one data set's folders). ``runs`` from :func:`collect`; returns the PNG ``path``.
    """
    cells: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run["method"].startswith("fmvc-iai"):
            cells[(run["method"], run["rate"])].append(run)
    rates = sorted({rate for method, rate in cells if " no M" in method})
    methods = sorted(
        {method for method, rate in cells if rate in rates},
        key=lambda method: ("views dropped" in method, method),
    )
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    width = 0.8 / max(len(methods), 1)
    for ax, metric in zip(axes, ("acc", "nmi")):
        low = 1.0
        for i, method in enumerate(methods):
            stats = np.array(
                [
                    _mean_sd([r[metric] for r in cells[(method, rate)]])
                    if cells.get((method, rate))
                    else (np.nan, 0.0)
                    for rate in rates
                ]
            )
            ax.bar(
                np.arange(len(rates)) + i * width,
                stats[:, 0],
                width,
                yerr=stats[:, 1],
                capsize=2,
                label=method,
            )
            low = min(low, float(np.nanmin(stats[:, 0] - stats[:, 1])))
        ax.set_ylim(max(0.0, low - 0.05), None)  # a zoomed axis: the differences are small
        ax.set_xticks(np.arange(len(rates)) + width * (len(methods) - 1) / 2)
        ax.set_xticklabels([f"η = {rate:g}" for rate in rates])
        ax.set_title(metric.upper())
    return _save(fig, axes, path, legend_below=True)


def rounds_table(runs: list[dict[str, Any]]) -> str:
    """Markdown table of how fmvc-iai's clustering and global graph evolve over the rounds.

    One row per (data, method, missing rate) among the fmvc-iai runs with per-round scores: ACC of
    Y⁰ (the set-up round's spectral clustering), the best and the last round's ACC, and the
    connected components of A_g after the set-up and after the last round (means over seeds).

    Returns
    -------
    str
    """
    rows = [
        "| data | method | missing rate | runs | rounds | ACC of Y⁰ | best ACC (round) | last ACC "
        "| components after set-up | components after last round |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (data, method, rate), group in sorted(
        _fmvc_iai_rounds(runs).items(), key=lambda item: (item[0][0], item[0][2], item[0][1])
    ):
        acc, components = _per_round(group, "acc"), _per_round(group, "components")
        mean_acc = acc.mean(axis=0)
        best = int(np.argmax(mean_acc))
        rows.append(
            f"| {data} | {method} | {rate:g} | {acc.shape[0]} | {acc.shape[1]} | {mean_acc[0]:.3f} | "
            f"{mean_acc[best]:.3f} ({best + 1}) | {mean_acc[-1]:.3f} | {components[:, 0].mean():.1f} | "
            f"{components[:, -1].mean():.1f} |"
        )
    return "\n".join(rows)


def _fmvc_iai_rounds(runs: list[dict[str, Any]]) -> dict[tuple[str, str, float], list[dict[str, Any]]]:
    """The fmvc-iai runs whose every round was scored, grouped by (data, method, rate)."""
    return _groups(
        [
            r
            for r in runs
            if r["method"].startswith("fmvc-iai")
            and r["rounds"]
            and all("acc" in x and "components" in x for x in r["rounds"])
        ]
    )


def _per_round(group: list[dict[str, Any]], key: str) -> np.ndarray:
    """``key`` per run (rows) and round (columns), over the rounds every run of ``group`` has."""
    length = min(len(r["rounds"]) for r in group)
    return np.array([[x[key] for x in r["rounds"][:length]] for r in group], dtype=float)


def plot_rounds(runs: list[dict[str, Any]], path: Path) -> Path:
    """fmvc-iai's ACC, NMI and the connected components of A_g against the rounds, one line per
    (data, method, missing rate), mean over seeds with the sd as a band; round 1 is the set-up
    round (Y⁰). A component count that is the same in every round of every run is said in the
    title instead of a panel. ``runs`` from :func:`collect`; returns the PNG ``path``."""
    groups = sorted(_fmvc_iai_rounds(runs).items())
    counts = {c for _, group in groups for c in _per_round(group, "components").ravel()}
    keys = ("acc", "nmi", "components") if len(counts) > 1 else ("acc", "nmi")
    fig, axes = plt.subplots(1, len(keys), figsize=(14 if len(keys) == 3 else 10, 4))
    for (data, method, rate), group in groups:
        label = f"{method} ({data}), η = {rate:g}"
        for ax, key in zip(axes, keys):
            values = _per_round(group, key)
            mean = values.mean(axis=0)
            sd = values.std(axis=0)
            s = np.arange(1, values.shape[1] + 1)
            (line,) = ax.plot(s, mean, marker="o", markersize=3, label=label)
            ax.fill_between(s, mean - sd, mean + sd, color=line.get_color(), alpha=0.15)
    for ax, title in zip(axes, ("ACC of Y", "NMI of Y", "connected components of A_g")):
        ax.set_xlabel("communication round (1 = set-up)")
        ax.set_title(title)
    if len(keys) == 3:
        axes[2].yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        constant = f"A_g has {int(counts.pop())} connected component(s) in every round of every run"
        fig.suptitle(constant, fontsize=9)
    return _save(fig, axes, path, legend_below=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="write the Markdown table here too")
    parser.add_argument(
        "--seeds",
        type=lambda text: {int(t) for t in text.split(",")},
        help="comma-separated seeds to keep (default: all)",
    )
    parser.add_argument(
        "--rates",
        type=lambda text: {float(t) for t in text.split(",")},
        help="comma-separated missing rates to keep (default: all)",
    )
    parser.add_argument(
        "--export", type=Path, help="also write one small JSON per run here (readable by this script)"
    )
    parser.add_argument("--rates-figure", type=Path, help="PNG: the scores against the missing rate")
    parser.add_argument("--ablation-figure", type=Path, help="PNG: fmvc-iai's ablation variants")
    parser.add_argument(
        "--rounds-figure", type=Path, help="PNG: fmvc-iai's scores and graph components against the rounds"
    )
    parser.add_argument(
        "--rounds-out", type=Path, help="write the Markdown table of fmvc-iai's rounds (rounds_table) here"
    )
    args = parser.parse_args()
    runs = collect(args.folders, args.seeds, args.rates)
    table = markdown(runs)
    if args.out:
        args.out.write_text(table + "\n")
    if args.export:
        export_runs(runs, args.export)
    if args.rates_figure:
        plot_missing_rates(runs, args.rates_figure)
    if args.ablation_figure:
        plot_ablation(runs, args.ablation_figure)
    if args.rounds_figure:
        plot_rounds(runs, args.rounds_figure)
    if args.rounds_out:
        args.rounds_out.write_text(rounds_table(runs) + "\n")
    sys.stdout.write(table + "\n")


if __name__ == "__main__":
    main()
