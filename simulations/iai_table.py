"""FMVC-IAI results table: ACC, NMI and ARI as mean ± mean absolute deviation over seeds.

Reads every ``*.json`` under the given folders that holds a run config and final scores (a
``result.json`` of a Flower run, or a ``simulations.bench_iai --out`` file), groups the runs by
missing rate and by the ablation switches (M1 imputation, M2 weighted fusion, M3 attribute loss,
M4 structure loss), and prints one Markdown row per group::

    python -m simulations.iai_table multirun/iai_hw_missing/<time>
    python -m simulations.iai_table docs/iai_runs --out docs/iai_table.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["iai_table", "variant_name"]


def variant_name(cfg: dict[str, Any]) -> str:
    """``full`` or the removed modules, e.g. ``no M1``, from a run config."""
    removed = [name for name, off in (
        ("M1", cfg.get("iai-imputation") == "zeros"),
        ("M2", cfg.get("iai-fusion") == "uniform"),
        ("M3", cfg.get("iai-attribute-loss") is False),
        ("M4", cfg.get("iai-structure-loss") is False),
    ) if off]
    return "full" if not removed else "no " + "+".join(removed)


def _mean_mad(values: list[float]) -> str:
    x = np.asarray(values)
    return f"{x.mean():.3f} ± {np.abs(x - x.mean()).mean():.3f}"


def iai_table(folders: list[Path]) -> str:
    """Markdown table of the FMVC-IAI runs found under ``folders``.

    Parameters
    ----------
    folders : list of Path

    Returns
    -------
    str
    """
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(p for folder in folders for p in Path(folder).rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        cfg, final = data.get("config"), data.get("final")
        if not cfg or not final or cfg.get("algorithm") != "fmvc-iai" or "acc" not in final:
            continue
        key = (cfg["dataset"], variant_name(cfg), float(cfg.get("missing-rate", 0.0)))
        groups[key].append({"seed": cfg["seed"], **final})
    rows = ["| data | variant | missing rate | runs (seeds) | ACC | NMI | ARI |",
            "|---|---|---|---|---|---|---|"]
    for (dataset, variant, rate), runs in sorted(groups.items()):
        seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
        rows.append(f"| {Path(dataset).stem} | {variant} | {rate:g} | {len(runs)} ({seeds}) | "
                    + " | ".join(_mean_mad([r[m] for r in runs]) for m in ("acc", "nmi", "ari"))
                    + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = iai_table(args.folders)
    if args.out:
        args.out.write_text(table + "\n")
    sys.stdout.write(table + "\n")


if __name__ == "__main__":
    main()
