"""Tabulate saved runs: one Markdown row per ``result.json`` found under the given folders.

Usage::

    python -m simulations.sonmf.report results/measure            # prints the table
    python -m simulations.sonmf.report results/measure --out table.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fedmf_app.federated.results import load_result
from fedmf_app.methods.sonmf.residuals import rounds_to_target

__all__ = ["runs_table"]


def _fmt(value: float | int | None, spec: str) -> str:
    return "never" if value is None else format(value, spec)


def runs_table(folders: list[Path], target: float = 1e-2) -> str:
    """Markdown table of the runs under ``folders`` (sorted by path).

    Parameters
    ----------
    folders : list of Path
        Folders searched recursively for ``result.json``.
    target : float
        Level for the rounds-to-target columns.

    Returns
    -------
    str
    """
    header = (
        f"| run | h | tau | m | rounds | wall (s) | s/round | final R | final R/R^1 | final running avg "
        f"| rounds to {target:g}: R/R^1 | rounds to {target:g}: running avg | final objective |"
    )
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    paths = sorted(p for folder in folders for p in Path(folder).rglob("result.json"))
    for path in paths:
        result = load_result(path)
        cfg, rounds = result["config"], result["rounds"]
        if not rounds or "residual" not in rounds[0]:
            continue
        last = rounds[-1]
        wall = result["summary"].get("wall_s", last["elapsed_s"])
        rows.append(
            f"| {path.parent.name} | {cfg['heterogeneity']} | {cfg['sonmf.local-steps']} "
            f"| {cfg['num-clients']} "
            f"| {len(rounds)} | {wall:.1f} | {wall / len(rounds):.3f} | {last['residual']:.2e} "
            f"| {last['residual_ratio']:.2e} | {last['normalized_residual']:.2e} "
            f"| {_fmt(rounds_to_target([r['residual_ratio'] for r in rounds], target), 'd')} "
            f"| {_fmt(rounds_to_target([r['normalized_residual'] for r in rounds], target), 'd')} "
            f"| {last['objective']:.4g} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="Tabulate saved fedsonmf runs.")
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--target", type=float, default=1e-2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = runs_table(args.folders, args.target)
    if args.out:
        args.out.write_text(table + "\n")
    sys.stdout.write(table + "\n")


if __name__ == "__main__":
    main()
