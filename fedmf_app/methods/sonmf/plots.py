"""Paper A's per-run figure, drawn from a saved result (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedmf_app.federated.figures import save_figure  # noqa: E402

__all__ = ["plot_residuals"]

#: Absolute residuals: key, label, style. Curves that can coincide (R^s and the min-norm R; R^s
#: and R_V when R_U vanishes) differ in line style and marker, so none hides another.
_ABSOLUTE = (
    ("residual", "R^s = R_V + R_U", dict(lw=3.0, alpha=0.45, color="C0")),
    ("residual_v", "R_V", dict(ls="--", marker="s", color="C1")),
    ("residual_u", "R_U", dict(ls=":", marker="v", color="C2")),
    ("residual_min", "R with the min-norm subgradient", dict(ls="-.", marker="^", color="C3")),
    (
        "gradient_mapping",
        "||V^s - V^{s+1}||^2 / t^2 (server prox step t)",
        dict(ls=(0, (1, 3)), marker="x", color="C4"),
    ),
)
#: Residuals relative to round 1, the measures of the convergence stop and of the papers' figures.
_RELATIVE = (
    ("residual_ratio", "R^s / R^1", dict(color="C0")),
    ("normalized_residual", "running average / R^1 (printed each round)", dict(ls="--", color="C5")),
)
#: The target the rounds-to tables count to.
TARGET = 1e-2


def plot_residuals(result: dict[str, Any], path: str | Path, title: str) -> Path:
    """Absolute residuals, residuals relative to round 1 (with the 1e-2 target) and the objective
    against communication rounds (log scales).

    Parameters
    ----------
    result : dict
        Content of a ``result.json``.
    path : str or Path
        Where ``residuals.png`` goes.
    title : str
        The run (algorithm, h, tau, m, seed), above the three panels.

    Returns
    -------
    Path
        The written ``residuals.png``.
    """
    rounds = result["rounds"]
    s = [r["round"] for r in rounds]
    every = max(1, len(s) // 8)
    fig, (ax_a, ax_r, ax_f) = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, curves in ((ax_a, _ABSOLUTE), (ax_r, _RELATIVE)):
        for i, (key, label, style) in enumerate(curves):
            values = [r.get(key) for r in rounds]
            if values and all(v is not None and v > 0 for v in values):
                # markers offset per curve, so that coinciding curves still show theirs
                ax.semilogy(s, values, label=label, markevery=(i % every, every), markersize=5, **style)
        ax.set_xlabel("communication round")
    ax_a.set_ylabel("residual")
    ax_a.set_title("absolute", fontsize=9)
    ax_r.axhline(TARGET, color="grey", lw=0.8, ls=":", label=f"target {TARGET:g} (rounds to it: summary)")
    ax_r.set_ylabel("relative to round 1")
    ax_r.set_title("relative (the convergence measures)", fontsize=9)
    for ax in (ax_a, ax_r):
        if ax.lines:
            ax.legend(fontsize=7)
    objective = [r.get("objective") for r in rounds]
    if objective and all(v is not None and v > 0 for v in objective):
        ax_f.semilogy(s, objective)
    ax_f.set_xlabel("communication round")
    ax_f.set_ylabel("objective F")
    return save_figure(fig, path, title)
