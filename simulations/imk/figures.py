"""Paper B's Fig. 3 (lambda x mu grid) from an fmvc-imk sweep's result.json files.

Usage::

    python -m simulations.imk.figures grid multirun/imk-grid/<time> --out docs/figures

writes ``imk_grid_<data set>.png`` (final ACC, mean over the seeds found, per ``imk.lambda`` x
``imk.mu``) and prints the best, the default and the worst cell. Failed or incomplete runs are
listed on standard error and left out. Tables of other sweeps (e.g. the Table 3 ablation,
``+experiment=imk/ablation``): ``python -m simulations.sweep_table``.
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
from fedmf_app.registry import defaults  # noqa: E402

__all__ = ["GRID", "collect", "grid_figure"]

GRID = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0)


def collect(folders: list[Path]) -> list[dict[str, Any]]:
    """Every completed fmvc-imk ``result.json`` under ``folders`` (with final scores)."""
    runs = []
    for folder in folders:
        for path in sorted(folder.rglob("result.json")):
            result = load_result(path)
            if result["status"] != "completed" or "acc" not in (result.get("final") or {}):
                print(f"skipped {path}: {result['status']} {result.get('error') or ''}", file=sys.stderr)
            elif result["config"]["algorithm"] == "fmvc-imk":
                runs.append(result)
    return runs


def grid_figure(acc: np.ndarray, title: str, note: str, path: Path) -> None:
    """Heat map of ``acc[i, j]`` (%, lambda = GRID[i], mu = GRID[j]) with the values written in."""
    fig, ax = plt.subplots(figsize=(5, 4))
    image = ax.imshow(acc, origin="lower", cmap="viridis")
    ax.set_xticks(range(len(GRID)), [f"{g:g}" for g in GRID])
    ax.set_yticks(range(len(GRID)), [f"{g:g}" for g in GRID])
    ax.set_xlabel("mu")
    ax.set_ylabel("lambda")
    for i in range(len(GRID)):
        for j in range(len(GRID)):
            if np.isfinite(acc[i, j]):
                ax.text(j, i, f"{acc[i, j]:.0f}", ha="center", va="center", fontsize=7, color="w")
    fig.colorbar(image, label=note)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def describe(name: str, acc: np.ndarray) -> str:
    """Best, default and worst cell of a grid."""
    base = defaults()
    lam, mu = base["imk.lambda"], base["imk.mu"]
    best = np.unravel_index(np.nanargmax(acc), acc.shape)
    return (
        f"{name}: best ACC {acc[best]:.1f} % at lambda={GRID[best[0]]:g}, mu={GRID[best[1]]:g}; "
        f"defaults ({lam:g}, {mu:g}): {acc[GRID.index(lam), GRID.index(mu)]:.1f} %; "
        f"worst {np.nanmin(acc):.1f} %"
    )


def grid(runs: list[dict[str, Any]], out: Path) -> None:
    cells: dict[str, dict[tuple[int, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        cfg = r["config"]
        i, j = GRID.index(cfg["imk.lambda"]), GRID.index(cfg["imk.mu"])
        cells[Path(cfg["dataset"]).stem][(i, j)].append(100 * r["final"]["acc"])
    out.mkdir(parents=True, exist_ok=True)
    for name, values in cells.items():
        acc = np.full((len(GRID), len(GRID)), np.nan)
        for (i, j), accs in values.items():
            acc[i, j] = np.mean(accs)
        seeds = max(len(v) for v in values.values())
        grid_figure(
            acc,
            f"fmvc-imk on {name}: ACC over lambda x mu",
            f"ACC % ({seeds} seed(s))",
            out / f"imk_grid_{name}.png",
        )
        print(describe(name, acc))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("grid",))
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    grid(collect(args.folders), args.out)


if __name__ == "__main__":
    main()
