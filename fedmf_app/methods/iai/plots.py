"""Paper C's per-run figure, drawn from a saved result (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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

    Round 1 is the set-up round: its scores are those of Y⁰ and it has no losses.

    Parameters
    ----------
    result : dict
        Content of a ``result.json`` of ``fmvc-iai``: per-round ``components``, the losses of the
        training rounds and, when the run was scored, ``acc``, ``nmi`` and ``ari``.
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
    fig, (ax_s, ax_l, ax_c) = plt.subplots(1, 3, figsize=(13, 3.8))
    scored = [r for r in rounds if "acc" in r]
    for key in SCORE_KEYS:
        ax_s.plot([r["round"] for r in scored], [r[key] for r in scored], marker="o", label=key.upper())
    ax_s.set_ylabel("score of Y")
    ax_s.set_ylim(0, 1)
    if scored:
        ax_s.legend(fontsize=8)
    else:
        ax_s.text(0.5, 0.5, "no ground truth", ha="center", va="center", transform=ax_s.transAxes)
    trained = [r for r in rounds if r.get("phase") == "train"]
    for key, label in LOSS_KEYS.items():
        ax_l.plot([r["round"] for r in trained], [r[key] for r in trained], marker="o", label=label)
    ax_l.set_ylabel("training loss (mean over clients)")
    ax_l.set_yscale("symlog", linthresh=1e-3)
    ax_l.legend(fontsize=8)
    ax_c.plot([r["round"] for r in rounds], [r["components"] for r in rounds], marker="o", color="C3")
    ax_c.set_ylabel("connected components of A_g")
    for ax in (ax_s, ax_l, ax_c):
        ax.set_xlabel("communication round")
    return save_figure(fig, path, title)
