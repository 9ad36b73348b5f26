"""The settle round of a run, and the table and figure of :mod:`simulations.rounds_study`.

A run's *settle round* is the first round from which every round's ACC stays within
:data:`TOLERANCE` (0.5 ACC point) of the last round's ACC: the rounds after it change the
clustering's score by less than that. The functions only read the study's JSON records (and the
default ``imk.tol``, drawn in the figure).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from fedmf_app.common.stopping import plateau, settled  # noqa: E402
from fedmf_app.common.stopping import relative_changes as stop_rule_changes  # noqa: E402
from fedmf_app.registry import defaults  # noqa: E402
from simulations.quality.datasets import DEVELOPMENT_SETS  # noqa: E402
from simulations.spread import header, mean_spread  # noqa: E402

__all__ = [
    "CHANGE_FLOOR",
    "MARKERS",
    "METHODS",
    "ROUND_KEYS",
    "TOLERANCE",
    "comparison",
    "curves",
    "label_stop_round",
    "objective",
    "relative_changes",
    "run_summary",
    "plateau_round",
    "settle_round",
    "stop_table",
    "table",
    "write_figure",
]

#: The methods of the study, in table order.
METHODS = ("fedsonmf", "fmvc-imk", "fmvc-iai")

#: Per method, what its rounds record besides ACC, NMI and wall time: the objective of paper A
#: and paper B; fmvc-iai's mean training losses over the clients (none in its set-up round) and
#: the share of labels that changed since the previous round.
ROUND_KEYS: dict[str, tuple[str, ...]] = {
    "fedsonmf": ("objective", "label_change"),
    "fmvc-imk": ("objective",),
    "fmvc-iai": ("loss_attribute", "loss_structure", "loss_clustering", "label_change"),
}

#: How far (in ACC, 0.005 = 0.5 point) a settled round may be from the last round's ACC.
TOLERANCE = 0.005


def settle_round(acc: Sequence[float], tolerance: float = TOLERANCE) -> int:
    """The first round (1-based) from which every round's ACC is within ``tolerance`` of the last.

    Parameters
    ----------
    acc : sequence of float
        ACC after each round, round 1 first (at least one round).
    tolerance : float

    Returns
    -------
    int
        Between 1 and ``len(acc)``; ``len(acc)`` when the last round still moved by more than
        ``tolerance``.
    """
    values = np.asarray(acc, dtype=np.float64)
    off = np.flatnonzero(np.abs(values - values[-1]) > tolerance + 1e-12)
    return int(off[-1]) + 2 if off.size else 1


def run_summary(record: dict[str, Any]) -> dict[str, Any]:
    """A run record's rounds run, settle round, share of rounds after it and final ACC.

    Parameters
    ----------
    record : dict
        A record of :func:`simulations.rounds_study.one_run` (not a refused one).

    Returns
    -------
    dict
        ``rounds``, ``settle``, ``after`` (``(rounds - settle) / rounds``), ``acc`` (the last
        round's), ``stopped`` (whether a stop rule ended the run) and ``wall_s``.
    """
    rounds = len(record["rounds"])
    settle = settle_round([r["acc"] for r in record["rounds"]])
    return {
        "rounds": rounds,
        "settle": settle,
        "after": (rounds - settle) / rounds,
        "acc": record["rounds"][-1]["acc"],
        "stopped": record["stopped_early"] is not None,
        "wall_s": record["wall_s"],
    }


def _groups(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Records by (method, data set), in study order, seeds in order."""
    order = list(DEVELOPMENT_SETS)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (METHODS.index(r["method"]), order.index(r["set"]), r["seed"])):
        groups.setdefault((r["method"], r["set"]), []).append(r)
    return groups


def _span(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}-{max(values)}"


def table(records: list[dict[str, Any]]) -> str:
    """Markdown: per method and data set, rounds run, settle round, final ACC and wasted rounds.

    Parameters
    ----------
    records : list of dict
        The study's records (refused runs give a row with the reason).

    Returns
    -------
    str
    """
    lines = [
        header("Settle round and ACC %")
        + f"; settle round: the first round from which ACC stays within {100 * TOLERANCE:g} point "
        "of the last round's; after settling: the share of the rounds run that came after it.",
        "",
        "| method | data set | seeds | rounds run | stopped by its rule | settle round | settle round, max "
        "| final ACC | after settling | s per run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (method, name), runs in _groups(records).items():
        done = [run_summary(r) for r in runs if "refused" not in r]
        if not done:
            lines.append(f"| {method} | {name} | {len(runs)} | refused: {runs[0]['refused']} |||||||")
            continue
        lines.append(
            f"| {method} | {name} | {len(done)} | {_span([s['rounds'] for s in done])} "
            f"| {sum(s['stopped'] for s in done)} of {len(done)} "
            f"| {mean_spread(s['settle'] for s in done)} | {max(s['settle'] for s in done)} "
            f"| {mean_spread((s['acc'] for s in done), scale=100)} "
            f"| {100 * np.mean([s['after'] for s in done]):.0f} % "
            f"| {np.mean([s['wall_s'] for s in done]):.0f} |"
        )
    return "\n".join(lines) + "\n"


def comparison(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    """Markdown: per method and data set, rounds run and final ACC before and after a change.

    Only the (method, data set, seed) runs present in both record lists are compared.

    Parameters
    ----------
    before, after : list of dict
        Records of :func:`simulations.rounds_study.one_run` (refused runs are left out).

    Returns
    -------
    str
        A table with the mean rounds and ACC % (mean ± sd) of each side, the ACC difference, and a
        last row with the means over the data sets of each method.
    """

    def key(r: dict[str, Any]) -> tuple[str, str, int]:
        return r["method"], r["set"], r["seed"]

    earlier = {key(r): r for r in before if "refused" not in r}
    pairs = [(earlier[key(r)], r) for r in after if "refused" not in r and key(r) in earlier]
    lines = [
        header("Rounds run and final ACC %") + "; only the runs (method, data set, seed) on both sides.",
        "",
        "| method | data set | seeds | rounds before | rounds after | ACC before | ACC after | ACC change |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups = _groups([b for b, _ in pairs])
    by_run = {key(b): a for b, a in pairs}
    for method in METHODS:
        means: list[tuple[float, float, float, float]] = []
        for (m, name), runs in groups.items():
            if m != method:
                continue
            later = [by_run[key(r)] for r in runs]
            acc_b = [r["final"]["acc"] for r in runs]
            acc_a = [r["final"]["acc"] for r in later]
            rounds_b = np.mean([len(r["rounds"]) for r in runs])
            rounds_a = np.mean([len(r["rounds"]) for r in later])
            means.append((rounds_b, rounds_a, np.mean(acc_b), np.mean(acc_a)))
            lines.append(
                f"| {method} | {name} | {len(runs)} | {rounds_b:.1f} | {rounds_a:.1f} "
                f"| {mean_spread(acc_b, scale=100)} | {mean_spread(acc_a, scale=100)} "
                f"| {100 * (np.mean(acc_a) - np.mean(acc_b)):+.1f} |"
            )
        if means:
            rb, ra, ab, aa = np.mean(means, axis=0)
            lines.append(
                f"| {method} | mean of {len(means)} sets | | {rb:.1f} | {ra:.1f} | {100 * ab:.1f} "
                f"| {100 * aa:.1f} | {100 * (aa - ab):+.1f} |"
            )
    return "\n".join(lines) + "\n"


def plateau_round(objectives: Sequence[float], tol: float, patience: int) -> int:
    """The round (1-based) after which the objective stop rule (:func:`~fedmf_app.common.stopping.plateau`
    with ``tol`` and ``patience``) would have ended a run with these objectives; the last round if
    it never fires.

    Parameters
    ----------
    objectives : sequence of float, shape (T,)
        The objective after each round of a run made without a stop.
    tol : float
    patience : int

    Returns
    -------
    int
    """
    return _first_round(plateau, objectives, tol, patience)


def settled_round(changes: Sequence[float | None], tol: float, patience: int) -> int:
    """The round (1-based) after which fmvc-iai's label stop rule
    (:func:`~fedmf_app.common.stopping.settled` with ``tol`` and ``patience``) would have ended a
    run with these label changes; the last round if it never fires.

    Parameters
    ----------
    changes : sequence of float or None, shape (T,)
        The fraction of samples whose label changed in each round (``None`` in the set-up round)
        of a run that ran all its rounds.
    tol : float
    patience : int

    Returns
    -------
    int
    """
    return _first_round(settled, changes, tol, patience)


def _first_round(rule: Callable[..., bool], history: Sequence[Any], tol: float, patience: int) -> int:
    """The first round ``t`` (1-based) at which ``rule(history[:t], tol, patience)`` holds; the
    last round if never."""
    for t in range(1, len(history) + 1):
        if rule(history[:t], tol, patience):
            return t
    return len(history)


def stop_round(record: dict[str, Any], tol: float, patience: int) -> int:
    """The round after which the method's stop rule with ``tol`` and ``patience`` would have ended
    the run of ``record``: the objective's relative change (:func:`plateau_round`) for fedsonmf and
    fmvc-imk, the label change (:func:`settled_round`) for fmvc-iai."""
    if record["method"] == "fmvc-iai":
        return settled_round([x.get("label_change") for x in record["rounds"]], tol, patience)
    return plateau_round([x["objective"] for x in record["rounds"]], tol, patience)


def label_stop_round(record: dict[str, Any], tol: float, patience: int) -> int:
    """The round after which fedsonmf's label rule with ``tol`` and ``patience``
    (:func:`settled_round` on the rounds' ``label_change``), or its objective rule at its defaults
    (``sonmf.stop-change``, ``sonmf.stop-patience``), whichever fires first, would have ended the
    run of ``record``."""
    rounds = record["rounds"]
    options = defaults()
    by_objective = plateau_round(
        [x["objective"] for x in rounds], options["sonmf.stop-change"], options["sonmf.stop-patience"]
    )
    return min(settled_round([x.get("label_change") for x in rounds], tol, patience), by_objective)


def stop_table(
    records: list[dict[str, Any]], tolerances: Sequence[float], patience: int, labels: bool = False
) -> str:
    """Markdown: for each tolerance, the round and the ACC at which the method's stop rule
    (:func:`stop_round`; with ``labels``, fedsonmf's label rule beside its objective rule:
    :func:`label_stop_round`) would have ended each run, from runs made without a stop (every
    round's ACC and objective or label change recorded).

    A stopped run's output is its last round's labels, so the ACC after round ``t`` of a longer run
    is the final ACC of the same run stopped there.

    Parameters
    ----------
    records : list of dict
        Records of :func:`simulations.rounds_study.one_run` (refused runs are left out).
    tolerances : sequence of float
    patience : int
    labels : bool
        Read fedsonmf's records with :func:`label_stop_round` (the other methods' are left out).

    Returns
    -------
    str
        One row per method and tolerance: mean ACC % per data set (over the seeds) with the mean
        round in brackets, and the mean over the data sets.
    """
    if labels:
        records = [r for r in records if r["method"] == "fedsonmf"]
    groups = {k: [r for r in runs if "refused" not in r] for k, runs in _groups(records).items()}
    sets = [name for _, name in groups]
    seeds = ", ".join(sorted({str(len(r)) for r in groups.values()}))
    options = defaults()
    rule = (
        "the fraction of samples whose cluster changed (clusters matched one to one) has been at most "
        f"the tolerance for {patience} rounds in a row, or the objective's relative change at most "
        f"{options['sonmf.stop-change']:g} for {options['sonmf.stop-patience']} rounds (whichever comes "
        "first)"
        if labels
        else "the objective's relative change (fmvc-iai: the fraction of samples whose label changed) "
        f"has been at most the tolerance for {patience} rounds in a row"
    )
    stop = label_stop_round if labels else stop_round
    lines = [
        f"ACC % at the round (mean, in brackets) after which {rule}, mean over the seeds ({seeds} per "
        "set), read from runs without a stop.",
        "",
        "| method | tolerance | " + " | ".join(sets) + " | mean | rounds, mean |",
        "|---|---|" + "---|" * len(sets) + "---|---|",
    ]
    for method in METHODS:
        keyed = {name: runs for (m, name), runs in groups.items() if m == method}
        if not keyed:
            continue
        for tol in tolerances:
            cells, accs, rounds = [], [], []
            for name in sets:
                runs = keyed.get(name, [])
                stops = [stop(r, tol, patience) for r in runs]
                acc = [r["rounds"][t - 1]["acc"] for r, t in zip(runs, stops)]
                cells.append(f"{100 * np.mean(acc):.2f} ({np.mean(stops):.1f})" if runs else "-")
                accs.append(np.mean(acc))
                rounds.append(np.mean(stops))
            lines.append(
                f"| {method} | {tol:g} | " + " | ".join(cells) + f" | {100 * np.mean(accs):.2f} "
                f"| {np.mean(rounds):.1f} |"
            )
    return "\n".join(lines) + "\n"


def curves(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """ACC per round of each run, each run's last value carried to the longest run's end.

    A run that a stop rule ended keeps its last clustering, so its ACC stays the last one.

    Parameters
    ----------
    runs : list of dict
        Records of one method on one data set.

    Returns
    -------
    rounds : ndarray, shape (t,)
        1 to the longest run's last round.
    acc : ndarray, shape (len(runs), t)
    """
    rows = [[r["acc"] for r in record["rounds"]] for record in runs]
    longest = max(len(row) for row in rows)
    return np.arange(1, longest + 1), np.array([row + row[-1:] * (longest - len(row)) for row in rows])


def objective(round_record: dict[str, Any]) -> float | None:
    """A round's objective; fmvc-iai's: the sum of its mean training losses (``None`` in its
    set-up round, which trains nothing)."""
    if "objective" in round_record:
        return round_record["objective"]
    losses = [round_record.get(k) for k in ROUND_KEYS["fmvc-iai"][:3]]
    return None if None in losses else float(sum(losses))


def relative_changes(record: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """:math:`|f_t - f_{t-1}| / |f_{t-1}|` of a run's objective, for every round after a round with
    an objective (what a stop rule on the relative change, such as ``imk.tol``, reads).

    Parameters
    ----------
    record : dict
        A run record.

    Returns
    -------
    rounds, change : ndarray
    """
    points = [(r["round"], f) for r in record["rounds"] if (f := objective(r)) is not None]
    rounds = np.array([t for t, _ in points[1:]], dtype=int)
    return rounds, stop_rule_changes([v for _, v in points])


#: Each data set's marker in the figure (beside its colour, so that lines at one level stay apart).
MARKERS = {"HW": "o", "ORL": "s", "Yale": "^", "Sonar": "v", "3Sources": "D", "BBCSport": "P"}

#: Relative changes below this (rounding) are drawn at it, so that no round drops off the log axis.
CHANGE_FLOOR = 1e-16


def write_figure(records: list[dict[str, Any]], path: Path) -> None:
    """ACC and the objective's relative change against rounds: a row per method, a colour per set.

    ACC: the mean over the seeds (a run stopped by its rule keeps its last value), the band their
    range, a dot the latest settle round over the seeds. Objective: one line per seed, ending where
    the run ended; fmvc-imk's panel shows ``imk.tol``, the change at which its rule stops.

    Parameters
    ----------
    records : list of dict
        The study's records (refused runs are left out).
    path : Path
        The PNG to write.
    """
    groups = {g: [r for r in runs if "refused" not in r] for g, runs in _groups(records).items()}
    groups = {g: runs for g, runs in groups.items() if runs}
    methods = [m for m in METHODS if any(g[0] == m for g in groups)]
    if not methods:
        return
    colours = dict(zip(DEVELOPMENT_SETS, plt.get_cmap("tab10").colors, strict=False))
    fig, axes = plt.subplots(len(methods), 2, figsize=(12, 3.4 * len(methods) + 0.6), squeeze=False)
    for (left, right), method in zip(axes, methods, strict=True):
        for (m, name), runs in groups.items():
            if m != method:
                continue
            x, acc = curves(runs)
            mean = acc.mean(axis=0)
            style = {"color": colours[name], "marker": MARKERS[name], "markevery": max(1, len(x) // 10)}
            left.plot(x, mean, lw=1.4, ms=4, **style)
            left.fill_between(x, acc.min(axis=0), acc.max(axis=0), color=colours[name], alpha=0.12)
            settle = max(settle_round(row) for row in ([r["acc"] for r in run["rounds"]] for run in runs))
            left.plot(settle, mean[settle - 1], "o", color=colours[name], ms=9, mec="black", zorder=5)
            for run in runs:
                t, change = relative_changes(run)
                right.plot(t, np.maximum(change, CHANGE_FLOOR), lw=0.8, ms=3, alpha=0.8, **style)
        if method == "fmvc-imk":
            right.axhline(
                defaults()["imk.tol"], color="black", ls="--", lw=0.8, label="imk.tol, its stop rule"
            )
            right.legend(fontsize=8, loc="upper right")
        left.set_ylabel(f"{method}\nACC")
        loss = "summed training loss" if method == "fmvc-iai" else "objective"
        right.set_ylabel(f"relative change of the\n{loss} from the round before")
        right.set_yscale("log")
        for ax in (left, right):
            ax.set_xlabel("round")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
    handles = [
        Line2D([], [], color=colours[name], marker=MARKERS[name], label=name)
        for name in DEVELOPMENT_SETS
        if any(g[1] == name for g in groups)
    ]
    fig.legend(
        handles=handles, loc="upper center", ncol=len(handles), bbox_to_anchor=(0.5, 0.985), frameon=False
    )
    fig.suptitle(
        "Left: ACC, mean over the seeds, band: their range, ringed dot: the latest settle round (ACC within "
        f"{100 * TOLERANCE:g} point of the last round's from there on). Right: one line per seed.",
        fontsize=9,
        y=0.998,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.955))
    fig.savefig(path, dpi=110)
    plt.close(fig)
