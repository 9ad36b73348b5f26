"""Paper A's family: the parameters, typed, built once from the validated run config.

:func:`sonmf_options` turns the ``sonmf.*`` keys of a validated run config into one
:class:`SONMFOptions`; the Flower adapters (:mod:`~fedmf_app.methods.sonmf.client`,
:mod:`~fedmf_app.methods.sonmf.strategy`) read it and never the config's ``sonmf.*`` keys. The
maths takes :class:`~fedmf_app.methods.sonmf.updates.SONMFParams` (the proposed method's steps,
also FedMGS's) and :class:`~fedmf_app.methods.sonmf.adapted_updates.FedVRAParams`. The keys
themselves (defaults, constraints, help) are :mod:`fedmf_app.methods.sonmf.options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT, planted_rank
from fedmf_app.methods.sonmf.adapted_updates import FedVRAParams
from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions
from fedmf_app.methods.sonmf.updates import SONMFParams

__all__ = [
    "SONMFOptions",
    "basis_init",
    "fedmgs_params",
    "fedvra_params",
    "rank_error",
    "resolve_cluster_columns",
    "resolve_rank",
    "sonmf_options",
    "sonmf_params",
    "start",
]


@dataclass(frozen=True)
class SONMFOptions:
    """Every ``sonmf.*`` run-config key of a run, typed (see docs/options.md for each).

    Attributes
    ----------
    steps : SONMFParams
        The proposed method's kernel parameters (:func:`sonmf_params`).
    fedmgs : SONMFParams
        Adapted FedMGS's: the server-only ``V`` update with ``sonmf.fedmgs-step``
        (:func:`fedmgs_params`).
    fedvra : FedVRAParams
        Adapted FedVRA-U's steps (:func:`fedvra_params`).
    start : {"sketch", "random"}
        ``sonmf.start``, ``auto`` resolved by the data set (:func:`start`).
    basis_init : {"random", "kmeans"}
        ``sonmf.basis-init``, ``auto`` resolved (:func:`basis_init`).
    rank : int
        ``sonmf.rank`` (0: auto, :func:`resolve_rank`).
    rank_per_cluster : int
    narrow_views : {"empty-columns", "cap-rank"}
        ``sonmf.narrow-views``: how a view with fewer features than the rank is handled.
    synthetic : bool
        Whether the run's data set is the synthetic generator (the rank is then the planted one).
    cluster_columns : str
        ``sonmf.cluster-columns`` (``auto``: :func:`resolve_cluster_columns`).
    v_init_scale : float
    sketch_reading : str
    diagnostics : bool
    fedmavg_schedule : str
    residual_eps : float
    stop_ratio : float
        ``sonmf.stop-ratio`` (0: no convergence stop).
    stop_change : float
        ``sonmf.stop-change`` (0: no stop on the objective's change).
    stop_patience : int
        ``sonmf.stop-patience``.
    """

    steps: SONMFParams
    fedmgs: SONMFParams
    fedvra: FedVRAParams
    start: str
    basis_init: str
    rank: int
    rank_per_cluster: int
    narrow_views: str
    synthetic: bool
    cluster_columns: str
    v_init_scale: float
    sketch_reading: str
    diagnostics: bool
    fedmavg_schedule: str
    residual_eps: float
    stop_ratio: float
    stop_change: float
    stop_patience: int


def sonmf_options(cfg: Mapping[str, Any]) -> SONMFOptions:
    """Every ``sonmf.*`` key of a validated run config, as :class:`SONMFOptions` (built once per
    Strategy or client).

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SONMFOptions
    """
    return SONMFOptions(
        steps=sonmf_params(cfg),
        fedmgs=fedmgs_params(cfg),
        fedvra=fedvra_params(cfg),
        start=start(cfg),
        basis_init=basis_init(cfg),
        rank=cfg["sonmf.rank"],
        rank_per_cluster=cfg["sonmf.rank-per-cluster"],
        narrow_views=cfg["sonmf.narrow-views"],
        synthetic=cfg["dataset"] == "synthetic",
        cluster_columns=cfg["sonmf.cluster-columns"],
        v_init_scale=cfg["sonmf.v-init-scale"],
        sketch_reading=cfg["sonmf.sketch-reading"],
        diagnostics=cfg["sonmf.diagnostics"],
        fedmavg_schedule=cfg["sonmf.fedmavg-schedule"],
        residual_eps=cfg["sonmf.residual-eps"],
        stop_ratio=cfg["sonmf.stop-ratio"],
        stop_change=cfg["sonmf.stop-change"],
        stop_patience=cfg["sonmf.stop-patience"],
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


def sonmf_params(cfg: Mapping[str, Any]) -> SONMFParams:
    """Kernel parameters of paper A's method from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SONMFParams
    """
    return SONMFParams(
        local_steps=cfg["sonmf.local-steps"],
        local_lr=cfg["sonmf.local-lr"],
        global_lr=cfg["sonmf.global-lr"],
        mu=cfg["sonmf.mu"],
        rho1=cfg["sonmf.rho1"],
        rho1_scale=cfg["sonmf.rho1-scale"],
        drift_correction=cfg["sonmf.drift-correction"],
        v_update=cfg["sonmf.v-update"],
        server_step=cfg["sonmf.server-step"],
        basis=BasisSolverOptions(
            sigma0=cfg["sonmf.basis-sigma0"],
            max_outer=cfg["sonmf.basis-max-outer"],
            inner_tol0=cfg["sonmf.basis-inner-tol"],
            polish=cfg["sonmf.basis-polish"],
            kernel=cfg["sonmf.basis-kernel"],
            method=cfg["sonmf.basis-solver"],
        ),
    )


def fedmgs_params(cfg: Mapping[str, Any]) -> SONMFParams:
    """Kernel parameters of adapted FedMGS: the server-only ``V`` update with step ``sonmf.fedmgs-step``.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SONMFParams
    """
    return replace(
        sonmf_params(cfg), v_update="server", server_step=cfg["sonmf.fedmgs-step"], drift_correction=False
    )


def fedvra_params(cfg: Mapping[str, Any]) -> FedVRAParams:
    """Steps of adapted FedVRA-U from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    FedVRAParams
    """
    return FedVRAParams(
        rho=cfg["sonmf.fedvra-rho"],
        dual_step=cfg["sonmf.fedvra-dual-step"],
        aggregation_step=cfg["sonmf.fedvra-aggregation-step"],
    )
