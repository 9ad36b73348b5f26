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
from fedmf_app.methods.sonmf.start import SKETCH_READINGS
from fedmf_app.methods.sonmf.updates import SERVER_STEPS, SONMFParams
from fedmf_app.options.constraints import Boolean, Interval, OneOf
from fedmf_app.options.schema import from_run_config, group, option

__all__ = [
    "SONMFOptions",
    "BASIS_INITS",
    "NARROW_VIEWS",
    "STARTS",
    "basis_init",
    "rank_error",
    "resolve_cluster_columns",
    "resolve_rank",
    "sonmf_options",
    "start",
]

#: How clients start ``U_p`` under ``sonmf.start = "random"``.
BASIS_INITS = ("auto", "random", "kmeans")

#: How a run starts ``V`` and the ``U_p``.
STARTS = ("auto", "sketch", "random")

#: Values of ``sonmf.narrow-views``: how a view with fewer features than the rank is handled.
NARROW_VIEWS = ("empty-columns", "cap-rank")


@dataclass(frozen=True)
class SONMFOptions:
    """Every ``sonmf.*`` run-config key of a run, typed, each declared beside its field (see
    docs/options.md for each).

    Attributes
    ----------
    diagnostics : bool
    rank : int
        ``sonmf.rank`` (0: auto, :func:`resolve_rank`).
    narrow_views : {"empty-columns", "cap-rank"}
        How a view with fewer features than the rank is handled.
    rank_per_cluster : int
    steps : SONMFParams
        The proposed method's kernel parameters (with the ``U`` solver's, ``sonmf.basis-*``).
    fedmgs_step : {"global-times-local", "effective"}
        Adapted FedMGS's server step (:attr:`fedmgs`).
    fedmavg_schedule : str
    fedvra : FedVRAParams
        Adapted FedVRA-U's steps.
    start : {"auto", "sketch", "random"}
        ``sonmf.start``; ``auto`` resolved by the data set in :func:`sonmf_options`.
    sketch_reading : str
    basis_init : {"auto", "random", "kmeans"}
        ``sonmf.basis-init``; ``auto`` resolved in :func:`sonmf_options`.
    cluster_columns : str
        ``sonmf.cluster-columns`` (``auto``: :func:`resolve_cluster_columns`).
    v_init_scale : float
    residual_eps : float
    stop_ratio : float
        ``sonmf.stop-ratio`` (0: no convergence stop).
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
            text="an integer >= 0, <= the largest view's dimension (every view's under "
            "sonmf.narrow-views = cap-rank)",
        ),
        "Rank r; 0 = auto ([A]): synthetic data 6 (paper), real data sonmf.rank-per-cluster "
        "times the number of clusters (num-clusters, else the ground-truth classes), capped at the "
        "largest view's dimension (the smallest's under sonmf.narrow-views = cap-rank) (6 without "
        "either).",
    )
    narrow_views: str = option(
        "sonmf.narrow-views",
        "empty-columns",
        OneOf(NARROW_VIEWS),
        "A view with fewer features d_p than the rank r, where U_p^T U_p = I is impossible: "
        "`empty-columns` ([A]): its U_p may have zero columns (U_p >= 0, U_p^T U_p diagonal with "
        "0/1 entries, at most d_p nonzero columns; a component that view does not use leaves its "
        "term), so the rank is capped only by the largest view; needs sonmf.start = sketch (or auto "
        "on real data) and the assignment U solver; `cap-rank`: paper A's constraint in every "
        "view, the auto rank capped at the smallest view.",
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
    fedmgs_step: str = option(
        "sonmf.fedmgs-step",
        "effective",
        OneOf(SERVER_STEPS),
        "fedmgs: server step, eta_g * alpha or eta~ = eta_g * tau * alpha ([A] eta~, the proposed "
        "method's step per round).",
    )
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
        "by a Nystrom sketch and reads V^1 from them as sonmf.sketch-reading says; each client fits "
        "U_p to V^1), `random` (V^1 = sonmf.v-init-scale * |N(0, 1)|, U_p from sonmf.basis-init), "
        "`auto` ([A]): random on synthetic data (paper A's protocol) and with one client, sketch on "
        "real data.",
    )
    sketch_reading: str = option(
        "sonmf.sketch-reading",
        "clusters",
        OneOf(SKETCH_READINGS),
        "V^1 from the sketch's leading right singular vectors W (n x r): `clusters` ([A]): "
        "k-means into r groups on W's rows scaled to unit norm, row j of V^1 the indicator of "
        "group j (scaled to the singular values' energy); `nndsvd`: the NNDSVD part of the "
        "singular pairs.",
    )
    basis_init: str = option(
        "sonmf.basis-init",
        "auto",
        OneOf(BASIS_INITS),
        "Initial U_p under sonmf.start = random: `random` (round(P(|randn|))), `kmeans` (the "
        "client's features grouped by k-means into r groups, unit-norm group indicators), "
        "`auto` ([A]): random on synthetic data, kmeans on real data.",
    )
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
    v_init_scale: float = option(
        "sonmf.v-init-scale",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "Initial V = scale * |N(0, 1)| under sonmf.start = random ([A]).",
    )
    residual_eps: float = option(
        "sonmf.residual-eps",
        1e-12,
        Interval(float, 0, None, closed="neither"),
        "Floor of the residual normaliser max(R^1, eps) ([A] 1e-12).",
    )
    stop_ratio: float = option(
        "sonmf.stop-ratio",
        1e-15,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop: the run ends after the first round whose residual ratio R^s/R^1 is "
        "<= this ([A] 1e-15: on the development sets the clustering is then the 100-round one; "
        "0: always run num-server-rounds; needs sonmf.diagnostics).",
    )
    synthetic: bool = False

    @property
    def fedmgs(self) -> SONMFParams:
        """Kernel parameters of adapted FedMGS: the server-only ``V`` update with step
        ``sonmf.fedmgs-step`` and no drift correction."""
        return replace(self.steps, v_update="server", server_step=self.fedmgs_step, drift_correction=False)


def sonmf_options(cfg: Mapping[str, Any]) -> SONMFOptions:
    """Every ``sonmf.*`` key of a validated run config, as :class:`SONMFOptions` (built once per
    Strategy or client), with ``sonmf.start`` and ``sonmf.basis-init`` resolved.

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
        when the clusters are not known; ``cap = max_p d_p`` (``min_p d_p`` under
        ``sonmf.narrow-views = "cap-rank"``).
    """
    if options.rank > 0:
        return int(options.rank)
    if options.synthetic:
        return planted_rank(options.rank)
    cap = min(view_dims) if options.narrow_views == "cap-rank" else max(view_dims)
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
        Under ``sonmf.narrow-views = "cap-rank"`` every view needs ``d_p >= r``; under
        ``"empty-columns"`` one view does, and a view with ``d_p < r`` needs the sketch start and
        the assignment ``U`` solver (the random starts and the penalty method assume
        ``U_p^T U_p = I``).
    """
    narrow = [p for p, d in enumerate(view_dims) if d < rank]
    if not narrow:
        return None
    if options.narrow_views == "cap-rank":
        return "every view needs at least that many features for a nonnegative orthonormal basis"
    if len(narrow) == len(view_dims):
        return "at least one view needs that many features"
    if options.start != "sketch":
        return "a view with fewer features than the rank needs sonmf.start = sketch"
    if options.steps.basis.method != "assignment":
        return "a view with fewer features than the rank needs sonmf.basis-solver = assignment"
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


def _resolve_auto(cfg: Mapping[str, Any], key: str, synthetic: str, real: str) -> str:
    """``cfg[key]``, with ``auto`` resolved by the data set: ``synthetic`` on synthetic data,
    ``real`` otherwise.

    Parameters
    ----------
    cfg : mapping
        Validated run config.
    key : str
    synthetic, real : str

    Returns
    -------
    str
    """
    if cfg[key] != "auto":
        return cfg[key]
    return synthetic if cfg["dataset"] == "synthetic" else real


def basis_init(cfg: Mapping[str, Any]) -> str:
    """How clients start ``U_p`` under the random start (``sonmf.basis-init``): ``"random"`` or
    ``"kmeans"`` (``auto``: random on synthetic data, k-means on real data)."""
    return _resolve_auto(cfg, "sonmf.basis-init", "random", "kmeans")


def start(cfg: Mapping[str, Any]) -> str:
    """How the run starts ``V^1`` and the ``U_p`` (``sonmf.start``): ``"sketch"`` or ``"random"``
    (``auto``: random on synthetic data, paper A's protocol, and with one client, whose sketch
    could not be masked; the sketch on real data)."""
    if cfg["sonmf.start"] == "auto" and int(cfg["num-clients"]) < 2:
        return "random"
    return _resolve_auto(cfg, "sonmf.start", "random", "sketch")
