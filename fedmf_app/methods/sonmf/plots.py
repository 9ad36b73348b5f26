"""Paper A's per-run figure, drawn from a saved result (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedmf_app.federated.figures import save_figure  # noqa: E402

__all__ = ["plot_residuals"]

_CURVES = (
    ("residual", "R^s = R_V + R_U"),
    ("residual_v", "R_V"),
    ("residual_u", "R_U"),
    ("residual_min", "R with the min-norm subgradient"),
    ("residual_ratio", "R^s / R^1"),
    ("normalized_residual", "running average / R^1 (printed)"),
    ("gradient_mapping", "||V^s - V^{s+1}||^2 / t^2 (server prox step t)"),
)


def plot_residuals(result: dict[str, Any], path: str | Path, title: str) -> Path:
    """Residual curves (log scale) and the objective against communication rounds.

    Parameters
    ----------
    result : dict
        Content of a ``result.json``.
    path : str or Path
        PNG file to write.
    title : str
        The figure's title (the run: algorithm, data, seed).

    Returns
    -------
    Path
        ``path``.
    """
    rounds = result["rounds"]
    s = [r["round"] for r in rounds]
    fig, (ax_r, ax_f) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in _CURVES:
        values = [r.get(key) for r in rounds]
        if values and all(v is not None and v > 0 for v in values):
            ax_r.semilogy(s, values, label=label)
    ax_r.axhline(1e-2, color="grey", lw=0.8, ls=":")
    ax_r.set_xlabel("communication round")
    ax_r.set_ylabel("residual")
    ax_r.legend(fontsize=7)
    objective = [r.get("objective") for r in rounds]
    if objective and all(v is not None for v in objective):
        ax_f.plot(s, objective)
        ax_f.set_yscale("log")
    ax_f.set_xlabel("communication round")
    ax_f.set_ylabel("objective F")
    return save_figure(fig, path, title)
