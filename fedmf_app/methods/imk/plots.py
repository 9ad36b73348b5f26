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
    """Objective and clustering accuracy against communication rounds (paper B's Fig. 2).

    Parameters
    ----------
    result : dict
        Content of a ``result.json`` with per-round ``objective`` (and ``acc`` when labels were
        known).
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
    fig, ax_f = plt.subplots(figsize=(6, 4))
    ax_f.plot(s, [r["objective"] for r in rounds], color="C0")
    ax_f.set_xlabel("communication round")
    ax_f.set_ylabel("objective", color="C0")
    if rounds and all("acc" in r for r in rounds):
        ax_a = ax_f.twinx()
        ax_a.plot(s, [100 * r["acc"] for r in rounds], color="C1")
        ax_a.set_ylabel("ACC (%)", color="C1")
    return save_figure(fig, path, title)
