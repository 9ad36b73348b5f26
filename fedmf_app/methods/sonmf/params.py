"""Paper A's family: the parameters, each ``sonmf.*`` key declared once beside its field.

:class:`SONMFOptions` declares every ``sonmf.*`` run-config key (default, constraint, help:
:func:`~fedmf_app.options.schema.option`), some in the kernel parameters it groups:
:class:`~fedmf_app.methods.sonmf.updates.SONMFParams` (the proposed method's steps, also
FedMGS's), its :class:`~fedmf_app.methods.sonmf.nonneg_orth.BasisSolverOptions` and
:class:`~fedmf_app.methods.sonmf.adapted_updates.FedVRAParams`, whose defaults are therefore the
run config's. :func:`sonmf_options` builds it from a validated run config; the Flower adapters
(:mod:`~fedmf_app.methods.sonmf.client`, :mod:`~fedmf_app.methods.sonmf.strategy`) read it and
never the config's ``sonmf.*`` keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT, planted_rank
from fedmf_app.methods.sonmf.adapted_updates import FEDMAVG_SCHEDULES, FedVRAParams
from fedmf_app.methods.sonmf.clustering import CLUSTER_COLUMNS
from fedmf_app.methods.sonmf.updates import SONMFParams
from fedmf_app.options.constraints import Boolean, Interval, OneOf
from fedmf_app.options.schema import from_run_config, group, option

__all__ = [
    "SONMFOptions",
    "STARTS",
    "basis_init",
    "rank_error",
    "resolve_cluster_columns",
    "resolve_rank",
    "sonmf_options",
    "start",
]

#: How a run starts ``V`` and the ``U_p``.
STARTS = ("auto", "sketch", "random")


@dataclass(frozen=True)
class SONMFOptions:
    """Every ``sonmf.*`` run-config key of a run, typed, each declared beside its field (see
    docs/options.md for each).

    Attributes
    ----------
    diagnostics : bool
    rank : int
        ``sonmf.rank`` (0: auto, :func:`resolve_rank`).
    rank_per_cluster : int
    steps : SONMFParams
        The proposed method's kernel parameters (with the ``U`` solver's, ``sonmf.basis-*``).
    fedmavg_schedule : str
    fedvra : FedVRAParams
        Adapted FedVRA-U's steps.
    start : {"auto", "sketch", "random"}
        ``sonmf.start``; ``auto`` resolved by the data set in :func:`sonmf_options`.
    sketch_reading : {"clusters", "nndsvd"}
        [A] How the sketch start reads ``V^1`` from the leading singular vectors ``W``: k-means
        groups of ``W``'s unit-norm rows as indicators (``clusters``) or NNDSVD.
    basis_init : {"random", "kmeans"}
        [A] Initial ``U_p`` of the random start: random on synthetic data, k-means on the
        client's features on real data (:func:`basis_init`).
    cluster_columns : str
        ``sonmf.cluster-columns`` (``auto``: :func:`resolve_cluster_columns`).
    stop_ratio : float
        ``sonmf.stop-ratio`` (0: no convergence stop).
    stop_change : float
        ``sonmf.stop-change`` (0: no stop on the objective's change).
    stop_patience : int
        ``sonmf.stop-patience``.
    stop_label_change : float
        ``sonmf.stop-label-change`` (0: no stop on the labels' change).
    stop_label_patience : int
        ``sonmf.stop-label-patience``.
    synthetic : bool
        Whether the run's data set is the synthetic generator (the rank is then the planted one);
        not a key.
    """

    diagnostics: bool = option(
        "sonmf.diagnostics",
        True,
        Boolean(),
        "Clients also upload grad_V f_p(U_p^{s,0}, V^s) (r x n) and two scalars so the server can "
        "compute the objective and the stationarity residual; doubles the upload.",
    )
    rank: int = option(
        "sonmf.rank",
        0,
        Interval(
            int,
            0,
            None,
            closed="left",
            text="an integer >= 0, <= the largest view's dimension",
        ),
        "Rank r; 0 = auto ([A]): synthetic data 6 (paper), real data sonmf.rank-per-cluster "
        "times the number of clusters (num-clusters, else the ground-truth classes), capped at the "
        "largest view's dimension (6 without either). A view with fewer features d_p than r, "
        "where U_p^T U_p = I is impossible, gets a U_p with zero columns ([A]: U_p >= 0, "
        "U_p^T U_p diagonal with 0/1 entries, at most d_p nonzero columns; a component that view "
        "does not use leaves its term); it needs sonmf.start = sketch (or auto on real data).",
    )
    rank_per_cluster: int = option(
        "sonmf.rank-per-cluster",
        3,
        Interval(int, 1, None, closed="left"),
        "Components per cluster of the auto rank on real data ([A] 3: with a nonnegative "
        "orthonormal U_p every feature belongs to one component, and one component per cluster "
        "puts the features common to all clusters in one of them; 3 is ahead of 2 on BBCSport, "
        "ORL and Sonar and behind on 3Sources and Yale, 3 seeds; paper: r = #clusters, 1).",
    )
    steps: SONMFParams = group(SONMFParams)
    fedmavg_schedule: str = option(
        "sonmf.fedmavg-schedule",
        "decreasing",
        OneOf(FEDMAVG_SCHEDULES),
        "fedmavg: local steps in round s, ceil(tau / sqrt(s)) or tau ([A] decreasing).",
    )
    fedvra: FedVRAParams = group(FedVRAParams)
    start: str = option(
        "sonmf.start",
        "auto",
        OneOf(STARTS),
        "How V^1 and the U_p start: `sketch` (before round 1 each client sends X_p^T X_p Omega, "
        "Omega an n x (r + 10) Gaussian drawn from the seed, always as a masked sum, so it needs "
        "num-clients >= 2; from the sum the server takes the stacked views' leading singular pairs "
        "by a Nystrom sketch and reads V^1 from them (k-means groups of the samples' directions); "
        "each client fits U_p to V^1), `random` (V^1 = |N(0, 1)|, U_p random on synthetic data, "
        "k-means on the client's features on real data), "
        "`auto` ([A]): random on synthetic data (paper A's protocol) and with one client, sketch on "
        "real data.",
    )
    sketch_reading: str = "clusters"
    basis_init: str = "random"
    cluster_columns: str = option(
        "sonmf.cluster-columns",
        "auto",
        OneOf(CLUSTER_COLUMNS),
        "Final clustering: k-means on the columns of V as they are (`as-is`), each scaled to "
        "unit l2 norm first (`unit-norm`, the cosine geometry), or each scaled to sum one and "
        "square-rooted (`hellinger`: a sample's loadings read as proportions, compared by the "
        "Hellinger distance); an all-zero column stays zero. `auto` ([A]): hellinger when every "
        "view looks like counts or bag of words (at least 90 % zeros, no negative entry: the "
        "rule of sample-normalisation = auto), as-is otherwise.",
    )
    stop_ratio: float = option(
        "sonmf.stop-ratio",
        1e-15,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop: the run ends after the first round whose residual ratio R^s/R^1 is "
        "<= this ([A] 1e-15: on the development sets the clustering is then the 100-round one; "
        "0: always run num-server-rounds; needs sonmf.diagnostics).",
    )
    stop_change: float = option(
        "sonmf.stop-change",
        1e-3,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop: the run ends once the objective's relative change between rounds has "
        "been <= this for sonmf.stop-patience rounds in a row ([A] 1e-3: on the development sets "
        "the clustering has then settled; 0: off; needs sonmf.diagnostics).",
    )
    stop_patience: int = option(
        "sonmf.stop-patience",
        3,
        Interval(int, 1, None, closed="left"),
        "Rounds in a row whose objective change is <= sonmf.stop-change before the run stops ([A] 3).",
    )
    stop_label_change: float = option(
        "sonmf.stop-label-change",
        0.015,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop on the output: after every round the server clusters V's columns as it "
        "does after the last one, and the run ends once the share of samples whose cluster changed "
        "(clusters matched one to one between the rounds) has been <= this for "
        "sonmf.stop-label-patience rounds in a row ([A] 0.015: on the development sets it ends HW "
        "and BBCSport sooner at no loss in ACC; 0: off, and no clustering before the last round). "
        "Either stop rule ends the run; this one needs no diagnostics.",
    )
    stop_label_patience: int = option(
        "sonmf.stop-label-patience",
        4,
        Interval(int, 1, None, closed="left"),
        "Rounds in a row whose label change is <= sonmf.stop-label-change before the run stops "
        "([A] 4: a patience of 2 or 3 stops Sonar on an early, poorer clustering).",
    )
    synthetic: bool = False

    @property
    def fedmgs(self) -> SONMFParams:
        """Kernel parameters of adapted FedMGS: the server-only ``V`` update with step
        :math:`\\tilde\\eta` (the proposed method's step per round) and no drift correction."""
        return replace(self.steps, v_update="server", server_step="effective", drift_correction=False)


def sonmf_options(cfg: Mapping[str, Any]) -> SONMFOptions:
    """Every ``sonmf.*`` key of a validated run config, as :class:`SONMFOptions` (built once per
    Strategy or client), with ``sonmf.start`` and the random start's ``U_p`` resolved.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SONMFOptions
    """
    return from_run_config(
        SONMFOptions,
        cfg,
        start=start(cfg),
        basis_init=basis_init(cfg),
        synthetic=cfg["dataset"] == "synthetic",
    )


def resolve_rank(options: SONMFOptions, num_clusters: int | None, view_dims: list[int]) -> int:
    """The rank a run uses (see option ``sonmf.rank``).

    Parameters
    ----------
    options : SONMFOptions
        The run's (:func:`sonmf_options`).
    num_clusters : int or None
        Clusters of the final clustering, when known before round 1.
    view_dims : list of int
        ``d_p`` of every view.

    Returns
    -------
    int
        ``sonmf.rank`` when it is set; else (auto) the planted rank for synthetic data, otherwise
        ``min(sonmf.rank-per-cluster * num_clusters, cap)``, or ``min(AUTO_RANK_DEFAULT, cap)``
        when the clusters are not known; ``cap = max_p d_p`` (a narrower view gets zero
        columns in its ``U_p``).
    """
    if options.rank > 0:
        return int(options.rank)
    if options.synthetic:
        return planted_rank(options.rank)
    cap = max(view_dims)
    if num_clusters is None:
        return int(min(AUTO_RANK_DEFAULT, cap))
    return int(min(options.rank_per_cluster * num_clusters, cap))


def rank_error(options: SONMFOptions, rank: int, view_dims: list[int]) -> str | None:
    """Why ``rank`` cannot be used with these views, or None.

    Parameters
    ----------
    options : SONMFOptions
        The run's (:func:`sonmf_options`).
    rank : int
        The run's rank (:func:`resolve_rank`).
    view_dims : list of int
        ``d_p`` of every view.

    Returns
    -------
    str or None
        One view needs ``d_p >= r``, and a view with ``d_p < r`` needs the sketch start (the
        random starts assume ``U_p^T U_p = I``).
    """
    narrow = [p for p, d in enumerate(view_dims) if d < rank]
    if not narrow:
        return None
    if len(narrow) == len(view_dims):
        return "at least one view needs that many features"
    if options.start != "sketch":
        return "a view with fewer features than the rank needs sonmf.start = sketch"
    return None


def resolve_cluster_columns(options: SONMFOptions, sparse_counts: list[bool]) -> str:
    """How the final k-means reads the columns of ``V`` (see option ``sonmf.cluster-columns``).

    Parameters
    ----------
    options : SONMFOptions
        The run's (:func:`sonmf_options`).
    sparse_counts : list of bool
        Per view: whether it looks like counts or bag of words (the clients' handshake).

    Returns
    -------
    {"as-is", "unit-norm", "hellinger"}
        ``sonmf.cluster-columns`` when it is set; else (auto) ``"hellinger"`` when every view
        looks like counts, ``"as-is"`` otherwise.
    """
    if options.cluster_columns != "auto":
        return str(options.cluster_columns)
    return "hellinger" if sparse_counts and all(sparse_counts) else "as-is"


def basis_init(cfg: Mapping[str, Any]) -> str:
    """How clients start ``U_p`` under the random start: ``"random"`` on synthetic data (paper A's
    protocol), ``"kmeans"`` on real data ([A])."""
    return "random" if cfg["dataset"] == "synthetic" else "kmeans"


def start(cfg: Mapping[str, Any]) -> str:
    """How the run starts ``V^1`` and the ``U_p`` (``sonmf.start``): ``"sketch"`` or ``"random"``
    (``auto``: random on synthetic data, paper A's protocol, and with one client, whose sketch
    could not be masked; the sketch on real data)."""
    if cfg["sonmf.start"] != "auto":
        return cfg["sonmf.start"]
    if int(cfg["num-clients"]) < 2 or cfg["dataset"] == "synthetic":
        return "random"
    return "sketch"
