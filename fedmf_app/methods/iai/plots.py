"""Paper C's per-run figure, drawn from a saved result (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from fedmf_app.federated.figures import save_figure  # noqa: E402

__all__ = ["LOSS_KEYS", "SCORE_KEYS", "plot_rounds"]

#: Per-round scores drawn (present once the run was scored against ground truth).
SCORE_KEYS = ("acc", "nmi", "ari")

#: Training losses of a round (means over the clients), with their labels.
LOSS_KEYS = {
    "loss_attribute": "attribute (M3)",
    "loss_structure": "structure (M4)",
    "loss_clustering": "clustering (KL)",
}


def plot_rounds(result: dict[str, Any], path: str | Path, title: str) -> Path:
    """Scores, training losses and connected components of A_g against communication rounds.

    Round 1 is the set-up round: its scores are those of Y⁰ and it has no losses. The score axis is
    scaled to the scores (the legend gives the first and last), a loss that is 0 in a round (the
    clustering loss before the first target) is not drawn on the log axis, and a component count
    that never changes is said in the title instead of a panel.

    Parameters
    ----------
    result : dict
        Content of a ``result.json`` of ``fmvc-iai``: per-round ``components``, the losses of the
        training rounds and, when the run was scored, ``acc``, ``nmi`` and ``ari``.
    path : str or Path
        Where the PNG goes.
    title : str
        The run (algorithm, data set, missing rate, seed); a component count that never changes
        is added to it.

    Returns
    -------
    Path
        The PNG, written.
    """
    rounds = result["rounds"]
    components = [r["components"] for r in rounds]
    varies = len(set(components)) > 1
    fig, axes = plt.subplots(1, 3 if varies else 2, figsize=(13 if varies else 9, 3.8))
    ax_s, ax_l = axes[0], axes[1]
    scored = [r for r in rounds if "acc" in r]
    for key, style in zip(SCORE_KEYS, ("-o", "--s", ":^")):
        values = [r[key] for r in scored]
        label = f"{key.upper()} {values[0]:.3f} -> {values[-1]:.3f}" if values else key.upper()
        ax_s.plot([r["round"] for r in scored], values, style, label=label)
    ax_s.set_ylabel("score of Y (round 1: Y0 of the set-up)")
    if scored:
        ax_s.legend(fontsize=8)
        ax_s.margins(y=0.15)
    else:
        ax_s.text(0.5, 0.5, "no ground truth", ha="center", va="center", transform=ax_s.transAxes)
    trained = [r for r in rounds if r.get("phase") == "train"]
    for key, label in LOSS_KEYS.items():
        points = [(r["round"], r[key]) for r in trained if r.get(key) is not None and r[key] > 0]
        skipped = len(trained) - len(points)
        if points:
            note = f" (0 in {skipped} round{'s' if skipped > 1 else ''}: not drawn)" if skipped else ""
            ax_l.plot(*zip(*points), marker="o", label=label + note)
    ax_l.set_ylabel("training loss (mean over clients)")
    ax_l.set_yscale("log")
    if ax_l.lines:
        ax_l.legend(fontsize=8)
    if varies:
        ax_c = axes[2]
        ax_c.plot([r["round"] for r in rounds], components, marker="o", color="C3")
        ax_c.set_ylabel("connected components of A_g")
        ax_c.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        title = f"{title}; A_g: {components[0]} connected component(s) in every round"
    for ax in axes:
        ax.set_xlabel("communication round")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save_figure(fig, path, title)
