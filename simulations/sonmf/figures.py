"""Figures and tables of paper A's Figs. 2-5 from a sweep's saved ``result.json`` files.

Usage::

    python -m simulations.sonmf.figures fig2 multirun/fig2/<time> [more sweep folders] --out docs/figures

reads every completed ``result.json`` under the folders, groups the runs into one curve per
method, local-step count or ablation variant (the figure's *line*) and one panel per
heterogeneity ``h``, and writes, for each residual normalisation,

* ``<fig>_<normalisation>.png``: residual against communication round, log scale, the mean over
  seeds as a line and the min-max over seeds as a band;
* ``<fig>_rounds_to_1e-2.md``: for each line and ``h``, the rounds each normalisation needs to
  reach 1e-2 (mean over seeds, with the per-seed values), ``never`` when a seed did not reach it
  within the run's rounds; then how each curve moves (peak of the per-round ratio and its round,
  final values, final objective).

Normalisations, all computed from the raw residuals recorded per round:

* ``ratio``: :math:`R^s / \\max(R^1, \\varepsilon)` (``residual``; the server-prox ``R_V``);
* ``running-average``: :math:`(\\frac1s\\sum_{t\\le s} R^t)/\\max(R^1, \\varepsilon)`, as printed in
  paper A (at least ``1/s``);
* ``min-norm-ratio``: the per-round ratio of ``residual_min`` (``R_V`` with the min-norm
  subgradient, the same definition for every method).

Failed or incomplete runs are listed on standard error and left out.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from fedmf_app.federated.results import load_result  # noqa: E402
from fedmf_app.methods.sonmf.residuals import RESIDUAL_EPS, rounds_to_target  # noqa: E402

__all__ = [
    "FIGURES",
    "NORMALISATIONS",
    "collect",
    "line_label",
    "normalised",
    "rounds_table",
    "shape_table",
    "write_figure",
]

NORMALISATIONS = ("ratio", "running-average", "min-norm-ratio")
TARGET = 1e-2


def variant_label(cfg: dict[str, Any]) -> str:
    """Name of the ablation variant (conf/variant) a fedsonmf run config is."""
    if cfg["sonmf.v-update"] == "server":
        return "server update"
    if cfg["sonmf.local-steps"] == 1:
        return "local copies, tau=1"
    corrected = "proposed (corrected)" if cfg["sonmf.drift-correction"] else "local copies, no correction"
    return f"{corrected}, tau={cfg['sonmf.local-steps']}"


_VARIANT_ORDER = (
    "server update",
    "local copies, tau=1",
    "local copies, no correction, tau=10",
    "proposed (corrected), tau=10",
)
_METHOD_ORDER = ("fedsonmf", "fedmgs", "fedmavg", "fedvra-u")


def adaptation_label(cfg: dict[str, Any]) -> str:
    """An adapted baseline with the [A] choice its Fig. 3 curve depends on."""
    if cfg["algorithm"] == "fedmavg":
        return f"fedmavg, schedule={cfg['sonmf.fedmavg-schedule']}"
    if cfg["algorithm"] == "fedvra-u":
        return f"fedvra-u, a={cfg['sonmf.fedvra-dual-step']:g}, d={cfg['sonmf.fedvra-aggregation-step']:g}"
    return cfg["algorithm"]


#: figure -> (title, run config -> line label, line label -> sort key)
FIGURES = {
    "fig2": (
        "Fig. 2: proposed method, tau",
        lambda cfg: f"tau={cfg['sonmf.local-steps']}",
        lambda label: (int(label.split("=")[1]), label),
    ),
    "fig3-adaptations": (
        "Fig. 3: the adapted baselines' alternatives",
        adaptation_label,
        lambda label: (_METHOD_ORDER.index(label.split(",")[0]), label),
    ),
    "fig3": (
        "Fig. 3: proposed vs adapted methods",
        lambda cfg: cfg["algorithm"],
        lambda label: (_METHOD_ORDER.index(label) if label in _METHOD_ORDER else 99, label),
    ),
    "fig4": (
        "Figs. 4-5: ablation variants",
        variant_label,
        lambda label: (_VARIANT_ORDER.index(label) if label in _VARIANT_ORDER else 99, label),
    ),
}


def line_label(figure: str, cfg: dict[str, Any]) -> str:
    """Label of the curve a run belongs to in ``figure``."""
    return FIGURES[figure][1](cfg)


def normalised(rounds: list[dict[str, Any]], normalisation: str, eps: float) -> np.ndarray:
    """One normalised residual per round.

    Parameters
    ----------
    rounds : list of dict
        ``result.json`` round records.
    normalisation : {"ratio", "running-average", "min-norm-ratio"}
    eps : float
        Floor of the normaliser.

    Returns
    -------
    ndarray, shape (rounds,)
    """
    key = "residual_min" if normalisation == "min-norm-ratio" else "residual"
    raw = np.array([r[key] for r in rounds], dtype=float)
    base = max(raw[0], eps)
    if normalisation == "running-average":
        return np.cumsum(raw) / np.arange(1, len(raw) + 1) / base
    return raw / base


def collect(folders: list[Path], figure: str) -> tuple[dict, list[str]]:
    """Group the completed runs under ``folders``.

    Returns
    -------
    runs : dict
        ``(line label, h) -> list of (seed, rounds, eps)``.
    skipped : list of str
        Runs left out, with the reason.
    """
    runs: dict[tuple[str, float], list] = defaultdict(list)
    skipped = []
    for path in sorted(p for folder in folders for p in Path(folder).rglob("result.json")):
        result = load_result(path)
        if result["status"] != "completed" or not result["rounds"] or "residual" not in result["rounds"][0]:
            skipped.append(f"{path.parent}: {result['status']} {result.get('error') or ''}".strip())
            continue
        cfg = result["config"]
        runs[(line_label(figure, cfg), cfg["heterogeneity"])].append(
            (cfg["seed"], result["rounds"], RESIDUAL_EPS)
        )
    return runs, skipped


def _lines_and_hs(runs: dict, figure: str) -> tuple[list[str], list[float]]:
    lines = sorted({k[0] for k in runs}, key=FIGURES[figure][2])
    return lines, sorted({k[1] for k in runs})


def write_figure(runs: dict, figure: str, normalisation: str, path: Path) -> Path:
    """One panel per ``h``: mean over seeds (line) and min-max (band), log scale."""
    lines, hs = _lines_and_hs(runs, figure)
    fig, axes = plt.subplots(1, len(hs), figsize=(4.2 * len(hs), 3.6), sharey=True, squeeze=False)
    for ax, h in zip(axes[0], hs):
        for i, label in enumerate(lines):
            cell = runs.get((label, h))
            if not cell:
                continue
            length = min(len(rounds) for _, rounds, _ in cell)
            curves = np.array([normalised(rounds[:length], normalisation, eps) for _, rounds, eps in cell])
            floor = np.finfo(float).tiny
            s = np.arange(1, length + 1)
            color = f"C{i}"
            ax.semilogy(
                s, np.maximum(curves.mean(axis=0), floor), color=color, label=f"{label} ({len(cell)} seeds)"
            )
            ax.fill_between(
                s,
                np.maximum(curves.min(axis=0), floor),
                np.maximum(curves.max(axis=0), floor),
                color=color,
                alpha=0.2,
                lw=0,
            )
        ax.axhline(TARGET, color="grey", lw=0.8, ls=":", label=f"target {TARGET:g} (rounds to it: table)")
        ax.set_title(f"h = {h}")
        ax.set_xlabel("communication round")
    axes[0][0].set_ylabel(f"residual, {normalisation}")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"{FIGURES[figure][0]} ({normalisation})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def rounds_table(runs: dict, figure: str) -> str:
    """Markdown: rounds to 1e-2 for each line, ``h`` and normalisation (mean; per-seed values)."""
    lines, hs = _lines_and_hs(runs, figure)
    out = []
    for normalisation in NORMALISATIONS:
        out += [
            f"**Rounds to {TARGET:g}, {normalisation}** (mean over seeds; per seed in brackets; "
            "`never` = not within the run's rounds)",
            "",
            "| line | " + " | ".join(f"h = {h}" for h in hs) + " |",
            "|---|" + "---|" * len(hs),
        ]
        for label in lines:
            cells = []
            for h in hs:
                cell = sorted(runs.get((label, h), []), key=lambda c: c[0])
                if not cell:
                    cells.append("")
                    continue
                reached = [
                    rounds_to_target(normalised(rounds, normalisation, eps), TARGET)
                    for _, rounds, eps in cell
                ]
                per_seed = ", ".join("never" if r is None else str(r) for r in reached)
                mean = (
                    "never"
                    if all(r is None for r in reached)
                    else f"{np.mean([r for r in reached if r is not None]):.1f}"
                    + ("*" if None in reached else "")
                )
                cells.append(f"{mean} [{per_seed}]")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    out.append(
        "`*`: mean over the seeds that reached it. Runs: "
        + ", ".join(f"{k[0]} h={k[1]}: {len(v)}" for k, v in sorted(runs.items()))
        + "."
    )
    return "\n".join(out)


def shape_table(runs: dict, figure: str) -> str:
    """Markdown: how each curve moves (mean over seeds): its peak of the per-round ratio and where,
    the value at the last round for each normalisation, and the final objective."""
    lines, hs = _lines_and_hs(runs, figure)
    out = [
        "| line | h | rounds | peak R/R^1 (round) | final R/R^1 | final running avg "
        "| final min-norm R/R^1 | final objective |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in lines:
        for h in hs:
            cell = runs.get((label, h))
            if not cell:
                continue
            length = min(len(rounds) for _, rounds, _ in cell)
            curves = {
                n: np.array([normalised(rounds[:length], n, eps) for _, rounds, eps in cell]).mean(axis=0)
                for n in NORMALISATIONS
            }
            ratio = curves["ratio"]
            objective = np.mean([rounds[length - 1]["objective"] for _, rounds, _ in cell])
            out.append(
                f"| {label} | {h} | {length} | {ratio.max():.3g} ({int(ratio.argmax()) + 1}) "
                f"| {ratio[-1]:.2e} | {curves['running-average'][-1]:.2e} "
                f"| {curves['min-norm-ratio'][-1]:.2e} | {objective:.4g} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Paper A's Figs. 2-5 from saved sweeps.")
    parser.add_argument("figure", choices=sorted(FIGURES))
    parser.add_argument("folders", type=Path, nargs="+", help="sweep folders (searched recursively)")
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args(argv)
    runs, skipped = collect(args.folders, args.figure)
    for line in skipped:
        sys.stderr.write(f"left out: {line}\n")
    if not runs:
        raise SystemExit(f"no completed run with diagnostics under {', '.join(map(str, args.folders))}")
    args.out.mkdir(parents=True, exist_ok=True)
    written = [
        write_figure(runs, args.figure, n, args.out / f"{args.figure}_{n}.png") for n in NORMALISATIONS
    ]
    table = rounds_table(runs, args.figure) + "\n\n" + shape_table(runs, args.figure)
    table_path = args.out / f"{args.figure}_rounds_to_1e-2.md"
    table_path.write_text(table + "\n")
    sys.stdout.write(table + "\n\nwritten: " + ", ".join(map(str, [*written, table_path])) + "\n")


if __name__ == "__main__":
    main()
