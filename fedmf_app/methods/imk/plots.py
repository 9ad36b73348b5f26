"""Paper B's per-run figure, drawn from a saved result (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedmf_app.federated.figures import save_figure  # noqa: E402

__all__ = ["plot_convergence"]


def plot_convergence(result: dict[str, Any], path: str | Path, title: str) -> Path:
    """Objective and clustering accuracy against communication rounds (paper B's Fig. 2), side by
    side, each on an axis scaled to its values.

    Parameters
    ----------
    result : dict
        Content of a ``result.json`` with per-round ``objective`` (and ``acc`` when labels were
        known).
    path : str or Path
        Where ``convergence.png`` goes.
    title : str
        The run (algorithm, data set, seed).

    Returns
    -------
    Path
        ``path``, written.
    """
    rounds = result["rounds"]
    s = [r["round"] for r in rounds]
    scored = bool(rounds) and all("acc" in r for r in rounds)
    fig, axes = plt.subplots(1, 2 if scored else 1, figsize=(10 if scored else 5.5, 3.8), squeeze=False)
    ax_f = axes[0][0]
    ax_f.plot(s, [r["objective"] for r in rounds], color="C0")
    ax_f.set_ylabel("objective")
    if scored:
        ax_a = axes[0][1]
        ax_a.plot(s, [100 * r["acc"] for r in rounds], color="C1")
        ax_a.set_ylabel("ACC of the round's labels (%)")
    for ax in axes[0]:
        ax.set_xlabel("communication round")
    return save_figure(fig, path, title)
