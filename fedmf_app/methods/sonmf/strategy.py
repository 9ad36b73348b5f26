"""Server side shared by every method on paper A's sparse ONMF model (no math here).

The proposed method (``fedsonmf``, with its ablation variants) and the adapted FedMAvg, FedMGS and
FedVRA-U hold one global :math:`V` (``r x n``) and differ only in what the clients upload and how
the server turns the uploads into :math:`V^{s+1}`. :class:`SparseONMFStrategy` does the rest, the
same way for all of them, so that their records can be compared:

* before round 1: checks that the views allow the rank (``rank <= max_p d_p``; a narrower view
  needs the sketch start); draws :math:`\\bar V^1 = |N(0,1)|`
  (the server's seed stream) and sets :math:`V^1 = P_{t\\mu}(\\bar V^1)` with
  the method's server prox step ``t``;
* each round, with ``diagnostics = true`` (every client then appends
  :math:`\\nabla_V f_p(U_p^{s,0}, V^s)` to its upload and reports its loss and ``U`` residual):
  the objective at :math:`(U^{s,0}, V^s)`, :math:`R_U`, and :math:`R_V` in two forms
  (:mod:`fedmf_app.methods.sonmf.residuals`):

  - ``residual_v``: with the subgradient the server's own prox produces at :math:`V^{s+1}` when
    the update ends in one (``fedsonmf``, ``fedmgs``, ``fedvra-u`` with ``d = 1``), otherwise
    (``fedmavg``: averaging after the clients' proxes; ``fedvra-u`` with ``d < 1``) the min-norm
    subgradient;
  - ``residual_v_min``: the min-norm subgradient for every method,
    :math:`\\operatorname{dist}^2(0, \\bar g^s + \\partial h(V^{s+1})) \\le` ``residual_v``;

  ``residual = residual_v + residual_u`` and ``residual_min = residual_v_min + residual_u``, with
  the per-round ratio and the printed running average of ``residual``;
* after the last round: the summary (rounds to 1e-2 per normalisation), ``residuals.png``, and
  the final labels by k-means on :math:`V^T` (paper A's protocol: 10 replicates x 300
  iterations, seeded; ``k`` = :attr:`num_clusters`, else the rank);
* with ``sonmf.stop-label-change > 0``, that clustering after every round as well: the round's
  ``label_change`` (the share of samples whose cluster moved since the last round, clusters
  matched one to one) feeds the label stop rule, the rounds' labels are scored when the run ends,
  and the last round's labels are the output.

**The proposed method** (``algorithm = "fedsonmf"``, :class:`FedSONMFStrategy`) owns the global
state:

* :math:`\\bar V^s` (pre-proximal, broadcast), :math:`V^s` (post-proximal), :math:`V^{s-1}`;
* :math:`\\tilde\\eta = \\eta_g\\tau\\alpha`;
* the global part of the drift correction, :math:`(V^{s} - \\bar V^{s+1})/\\tilde\\eta`, which equals
  the clients' mean average gradient :math:`\\frac1m\\sum_p G_p^s` (clients recover it from the
  broadcast and their stored :math:`V^s`, so it never travels).

Messages per round: down :math:`\\bar V^s` (``r x n``); up :math:`\\hat V_p^{s,\\tau}`
(``r x n``), plus, with ``diagnostics = true``, :math:`\\nabla_V f_p(U_p^{s,0}, V^s)` (``r x n``)
and two scalars, from which the server computes the objective and the stationarity residual.
With ``secure-aggregation = true`` all of an upload travels as one masked vector and the server
sees only the means (:mod:`fedmf_app.federated.secure_sum_flower`); every update below depends
on the uploads only through their mean, and reads that mean whether or not the round masks.

Ablation variants are run configs of this strategy: ``drift-correction = false`` (uncorrected
local copies), ``local-steps = 1``, and ``v-update = "server"`` (clients upload their average
gradient at fixed :math:`V^s`; the server takes one prox-gradient step of size ``server-step``
and broadcasts its pre-proximal :math:`\\bar V^{s+1}`).

**The compared methods**, adapted to paper A's model: FedMAvg and FedVRA-U broadcast :math:`V^s`
itself; FedMGS, which is the proposed method's server-only ``V`` update with its own step,
broadcasts :math:`\\bar V^{s}` like it. All record the same diagnostics as the proposed method.
The math is in :mod:`fedmf_app.methods.sonmf.adapted_updates` and
:mod:`fedmf_app.methods.sonmf.updates`.

* ``fedmavg`` uploads :math:`V_p` after its local steps; the server averages,
  :math:`V^{s+1} = \\mathrm{mean}_p V_p`; ``residual_v`` uses the min-norm subgradient (no server
  prox).
* ``fedmgs`` uploads :math:`G_p` at fixed :math:`V^s`; the server steps,
  :math:`V^{s+1} = P_{\\eta\\mu}(V^s - \\eta\\bar G)`; ``residual_v`` uses the server prox's subgradient
  (step ``eta``).
* ``fedvra-u`` uploads :math:`Z_p = V_p + \\Lambda_p/\\rho`; the server relaxes,
  :math:`V^{s+1} = V^s + d(P_{\\mu/\\rho}(\\bar Z) - V^s)`; ``residual_v`` uses the server prox's
  subgradient when ``d = 1``, else the min-norm one.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass
from logging import WARNING
from typing import Any

import numpy as np
from flwr.common import Scalar
from flwr.common.logger import log

from fedmf_app.common.metrics import label_change
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.common.stopping import plateau, settled
from fedmf_app.federated.handshake import ask_all
from fedmf_app.federated.protocol import Stage
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.strategy import ClientReply, FederationError, ViewFederationStrategy
from fedmf_app.methods.sonmf.adapted_updates import fedmavg_server_step, fedvra_server_step
from fedmf_app.methods.sonmf.clustering import cluster_columns
from fedmf_app.methods.sonmf.params import rank_error, resolve_cluster_columns, resolve_rank, sonmf_options
from fedmf_app.methods.sonmf.protocol import PROTOCOL
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.residuals import (
    RESIDUAL_EPS,
    gradient_mapping,
    normalised_residuals,
    residual_v,
    residual_v_min_norm,
    rounds_to_target,
)
from fedmf_app.methods.sonmf.start import coefficients_from_sketch, sketch_test_matrix
from fedmf_app.methods.sonmf.updates import SONMFParams, prox_gradient_step, regulariser, server_step
from fedmf_app.methods.sonmf.upload_bounds import UploadBounds, round_bounds, sketch_bound

__all__ = [
    "STRATEGIES",
    "FedMAvgStrategy",
    "FedMGSStrategy",
    "FedSONMFStrategy",
    "FedVRAUStrategy",
    "ServerUpdate",
    "SparseONMFStrategy",
]


@dataclass(frozen=True)
class ServerUpdate:
    """What one server update produced.

    Attributes
    ----------
    v_next : ndarray, shape (r, n)
        :math:`V^{s+1}`.
    broadcast : list of ndarray
        Sent to every client in the next round.
    prox_input : ndarray, shape (r, n), or None
        ``Z`` when :math:`V^{s+1} = P_{t\\mu}(Z)`; ``None`` when the update is not a prox step.
    prox_step : float or None
        ``t`` of that prox.
    """

    v_next: np.ndarray
    broadcast: list[np.ndarray]
    prox_input: np.ndarray | None = None
    prox_step: float | None = None


class SparseONMFStrategy(ViewFederationStrategy):
    """Base strategy of paper A's model: global ``V``, diagnostics, residuals, summary, plots.

    Built from ``cfg`` and ``recorder`` as
    :class:`~fedmf_app.federated.strategy.ViewFederationStrategy` is.

    Attributes
    ----------
    options : SONMFOptions
        The run's ``sonmf.*`` keys, typed (:func:`~fedmf_app.methods.sonmf.params.sonmf_options`).
    params : SONMFParams
        Kernel parameters (:meth:`make_params`).
    v : ndarray, shape (r, n)
        :math:`V^s`, the current post-proximal global variable (set before round 1).
    rank : int
        ``r`` of this run (:func:`~fedmf_app.methods.sonmf.params.resolve_rank`, set before round 1).

    Notes
    -----
    Subclasses implement :meth:`server_update` and :attr:`initial_prox_step`, and may override
    :meth:`make_params` and :meth:`initial_broadcast`. The server update sees the mean of the
    clients' uploads (:meth:`~fedmf_app.federated.strategy.ViewFederationStrategy.round_sums`).
    """

    protocol = PROTOCOL
    progress_keys = ("residual", "residual_ratio", "normalized_residual", "objective", "label_change")
    later_imports = (
        *ViewFederationStrategy.later_imports,
        "sklearn.cluster",
        "fedmf_app.methods.sonmf.plots",
    )
    checkpoint_attrs = ("num_clusters", "rank", "v", "_residuals", "upload_bounds", "_labels")
    checkpoint_types = (UploadBounds,)

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.options = sonmf_options(cfg)
        self.params = self.make_params()
        self.v: np.ndarray | None = None
        self.rank: int = 0
        self.cluster_read: str = "as-is"
        self.start_s: float | None = None
        self._residuals: list[float] = []
        self.upload_bounds: UploadBounds | None = None
        self._sketch_bound: float | None = None
        self._labels: np.ndarray | None = None
        options = self.options
        if not options.diagnostics and (options.stop_ratio > 0 or options.stop_change > 0):
            log(
                WARNING,
                "sonmf.diagnostics = false: the clients send no objective or residual, so the stop rules "
                "(sonmf.stop-ratio, sonmf.stop-change) cannot end the run; %s",
                "only sonmf.stop-label-change can end it early"
                if options.stop_label_change > 0
                else f"it runs all {self.num_rounds} rounds",
            )

    # ----------------------------------------------------------------- hooks for the methods
    def make_params(self) -> SONMFParams:
        """Kernel parameters of the method (default: the proposed method's)."""
        return self.options.steps

    @property
    @abstractmethod
    def initial_prox_step(self) -> float:
        """Step ``t`` of :math:`V^1 = P_{t\\mu}(\\bar V^1)` (the method's server prox step)."""

    def initial_broadcast(self, v_bar: np.ndarray) -> list[np.ndarray]:
        """Round-1 broadcast (default: :math:`V^1` itself)."""
        return [self.v]

    @abstractmethod
    def server_update(self, server_round: int, mean_upload: np.ndarray) -> ServerUpdate:
        """Turn the mean of the clients' uploads (shape ``(r, n)``) into :math:`V^{s+1}`; ``self.v``
        is :math:`V^s`."""

    # ---------------------------------------------------------------------------- base hooks
    def check_clients(self, info: list[dict[str, Scalar]]) -> None:
        """Equal sample counts; sets :attr:`rank` (option ``rank``, 0 = auto) and
        :attr:`cluster_read` (option ``cluster-columns``) and checks that the views allow the rank
        (:func:`~fedmf_app.methods.sonmf.params.rank_error`)."""
        super().check_clients(info)
        dims = [int(i["num-features"]) for i in info]
        self.rank = resolve_rank(self.options, self.num_clusters, dims)
        rank = self.rank
        problem = rank_error(self.options, rank, dims)
        if problem:
            small = [i for i in info if int(i["num-features"]) < rank]
            detail = ", ".join(
                f"partition {i['partition-id']} ({i['source']}) has {i['num-features']}" for i in small
            )
            raise FederationError(f"rank {rank} cannot be used: {problem}, but {detail} features")
        self.cluster_read = resolve_cluster_columns(self.options, [bool(i["sparse-counts"]) for i in info])

    def initial_arrays(self) -> list[np.ndarray]:
        """:math:`\\bar V^1` from the federated sketch (``sonmf.start = "sketch"``:
        :meth:`sketched_start`) or :math:`|N(0,1)|^{r \\times n}` (``"random"``, [A]);
        :math:`V^1 = P_{t\\mu}(\\bar V^1)`."""
        n = int(self.client_info[0]["num-samples"])
        if self.options.start == "sketch":
            v_bar = self.sketched_start(n)
        else:
            rng = rng_for(self.shared.seed, Stream.SERVER_INIT)
            v_bar = np.abs(rng.standard_normal((self.rank, n)))
        self.v = prox_l21_nonneg(v_bar, self.initial_prox_step * self.params.mu)
        broadcast = self.initial_broadcast(v_bar)
        self.upload_bounds = self._round_bounds(broadcast[0], 1, None, None)
        return broadcast

    def run_facts(self) -> dict[str, int]:
        """The number of clusters (0: unknown) and the rank."""
        return {"clusters": int(self.num_clusters or 0), "rank": int(self.rank)}

    def bound_context(self, stage: Stage, server_round: int) -> UploadBounds | float | None:
        """The sketch's bound (the sketch stage), else this round's :class:`UploadBounds`."""
        return self._sketch_bound if stage.name == "sketch" else self.upload_bounds

    def _round_bounds(
        self, broadcast: np.ndarray, server_round: int, previous: float | None, v_prev: np.ndarray | None
    ) -> UploadBounds:
        """:func:`~fedmf_app.methods.sonmf.upload_bounds.round_bounds` of this method."""
        options = self.options
        return round_bounds(
            self.shared.algorithm,
            self.params,
            options.fedmavg_schedule,
            broadcast,
            server_round,
            previous,
            v_prev,
        )

    def sketched_start(self, n: int) -> np.ndarray:
        """Ask every client for its share :math:`X_p^\\top X_p\\Omega` of the sketch, always masked,
        and turn their sum (the only thing decoded, checked against ``m`` times the share's bound)
        into :math:`\\bar V^1` (:func:`~fedmf_app.methods.sonmf.start.coefficients_from_sketch`).

        Parameters
        ----------
        n : int
            Samples.

        Returns
        -------
        ndarray, shape (r, n)
        """
        started = time.perf_counter()
        omega = sketch_test_matrix(n, self.rank, rng_for(self.shared.seed, Stream.SONMF_SKETCH))
        self._sketch_bound = sketch_bound(omega)
        replies = ask_all(
            self.clients,
            lambda p: self.stage_config("sketch"),
            float(self.shared.round_timeout_s),
            "sonmf start sketch",
        )
        stage = self.protocol.stage("sketch")
        uploads = [np.frombuffer(bytes(reply["sketch"]), dtype=np.uint64) for reply in replies]
        scalars = [{k: v for k, v in reply.items() if k != "sketch"} for reply in replies]
        self.check_replies(
            stage, [([u], rest) for u, rest in zip(uploads, scalars)], [], "start sketch (before round 1)"
        )
        stage_text = "start sketch (before round 1), masked 'sonmf-sketch'"
        total = self.decode_sum(stage, uploads, [], stage_text, 0)["sketch"]
        v_bar = coefficients_from_sketch(
            total,
            omega,
            self.rank,
            len(replies),
            self.options.sketch_reading,
            rng_for(self.shared.seed, Stream.SERVER_INIT),
            entry_error=len(replies) * 2.0**-self.shared.frac_bits,
        )
        self.start_s = time.perf_counter() - started
        return v_bar

    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Server update; with diagnostics, the objective and the residuals of round ``s``.

        The server reads the replies only through their sums (:meth:`round_sums`: decoded under
        ``secure-aggregation = true``, added up otherwise): every method's server update depends
        on the uploads only through their mean, and the diagnostics are means too.
        """
        diagnostics = self.options.diagnostics
        record: dict[str, Any] = {}
        m = len(replies)
        sums = self.round_sums(server_round, replies)
        mean_upload = sums["upload"] / m
        if diagnostics:
            mean_grad, loss, r_u = sums["gradient"] / m, sums["loss"] / m, sums["basis_residual"] / m
        v_used = self.v
        update = self.server_update(server_round, mean_upload)
        if update.prox_step is not None:
            record["gradient_mapping"] = gradient_mapping(self.v, update.v_next, update.prox_step)
        if diagnostics:
            r_v_min = residual_v_min_norm(update.v_next, mean_grad, self.params.mu)
            if update.prox_input is None:
                r_v = r_v_min
            else:
                r_v = residual_v(update.prox_input, update.v_next, mean_grad, update.prox_step)
            self._residuals.append(r_v + r_u)
            ratio, running = normalised_residuals(self._residuals)
            record.update(
                objective=loss + regulariser(self.v, self.params.mu),
                residual=r_v + r_u,
                residual_v=r_v,
                residual_u=r_u,
                residual_ratio=ratio,
                normalized_residual=running,
                residual_min=r_v_min + r_u,
                residual_v_min=r_v_min,
            )
        self.v = update.v_next
        if self.options.stop_label_change > 0:
            before, self._labels = self._labels, self._cluster()
            record["label_change"] = None if before is None else label_change(before, self._labels)
        previous = None if self.upload_bounds is None else self.upload_bounds.upload
        self.upload_bounds = self._round_bounds(update.broadcast[0], server_round + 1, previous, v_used)
        return update.broadcast, record

    def converged(self, record: dict[str, Any]) -> str | None:
        """Residual ratio at or below ``sonmf.stop-ratio``, or the objective flat for
        ``sonmf.stop-patience`` rounds by ``sonmf.stop-change`` (both never without diagnostics),
        or the labels' change at most ``sonmf.stop-label-change`` for ``sonmf.stop-label-patience``
        rounds."""
        tol = self.options.stop_ratio
        ratio = record.get("residual_ratio")
        if tol > 0 and ratio is not None and ratio <= tol:  # NaN never converges
            return f"residual ratio R^s/R^1 = {ratio:.3g} <= sonmf.stop-ratio = {tol:g}"
        change, patience = self.options.stop_change, self.options.stop_patience
        objectives = [r["objective"] for r in self.recorder.data["rounds"] if "objective" in r]
        if "objective" in record and plateau(objectives, change, patience):
            return (
                f"objective's relative change <= sonmf.stop-change = {change:g} "
                f"for {patience} rounds (sonmf.stop-patience)"
            )
        tol, patience = self.options.stop_label_change, self.options.stop_label_patience
        changes = [r.get("label_change") for r in self.recorder.data["rounds"]]
        if "label_change" in record and settled(changes, tol, patience):
            return (
                f"labels changed for <= {tol:g} of the samples for {patience} rounds "
                "(sonmf.stop-label-change, sonmf.stop-label-patience)"
            )
        return None

    def summary(self) -> dict[str, Any]:
        """The rank used, final residuals and rounds to 1e-2 under each normalisation."""
        rounds = self.recorder.data["rounds"]
        last = rounds[-1]
        if not self.options.diagnostics:
            return {
                "rank": self.rank,
                "cluster_columns": self.cluster_read,
                "start_s": self.start_s,
                "final_gradient_mapping": last.get("gradient_mapping"),
            }
        eps = RESIDUAL_EPS
        min_norm = [r["residual_min"] for r in rounds]
        return {
            "rank": self.rank,
            "cluster_columns": self.cluster_read,
            "start_s": self.start_s,
            "final": {
                k: last[k]
                for k in (
                    "objective",
                    "residual",
                    "residual_v",
                    "residual_u",
                    "residual_ratio",
                    "normalized_residual",
                    "residual_min",
                )
            },
            "rounds_to_1e-2": {
                "ratio": rounds_to_target([r["residual_ratio"] for r in rounds]),
                "running-average": rounds_to_target([r["normalized_residual"] for r in rounds]),
                "min-norm ratio": rounds_to_target([x / max(min_norm[0], eps) for x in min_norm]),
            },
        }

    def final_labels(self) -> np.ndarray | None:
        """The clustering of the final :math:`V` (:meth:`_cluster`; the last round's, when the label
        stop rule made one).

        Returns
        -------
        ndarray, shape (n,)
        """
        return self._cluster() if self._labels is None else self._labels

    def round_labels(self) -> np.ndarray | None:
        """This round's clustering when the label stop rule made one (``None`` otherwise)."""
        return self._labels

    def _cluster(self) -> np.ndarray:
        """k-means on the columns of :math:`V` (``k`` = :attr:`num_clusters` or the rank), as they
        are, scaled to unit norm or read as proportions (:attr:`cluster_read`, from
        ``sonmf.cluster-columns``).

        Returns
        -------
        ndarray, shape (n,)
        """
        k = self.num_clusters or self.rank
        n = self.v.shape[1]
        if k > n:
            raise FederationError(f"cannot form {k} clusters from {n} samples (run config 'num-clusters')")
        return cluster_columns(
            self.v, k, self.cluster_read, rng_for(self.shared.seed, Stream.FINAL_CLUSTERING)
        )

    def write_plots(self) -> list[str]:
        """``residuals.png``: residual curves and objective against rounds."""
        from fedmf_app.methods.sonmf.plots import plot_residuals  # see later_imports

        shared = self.shared
        title = (
            f"{shared.algorithm}: h={shared.heterogeneity}, tau={self.params.local_steps}, "
            f"m={shared.num_clients}, seed={shared.seed}"
        )
        path = plot_residuals(self.recorder.data, self.recorder.run_dir / "residuals.png", title)
        return [path.name]


class FedSONMFStrategy(SparseONMFStrategy):
    """Federated sparse ONMF with variable splitting and drift correction (server).

    Built from ``cfg`` and ``recorder`` as
    :class:`~fedmf_app.federated.strategy.ViewFederationStrategy` is.

    Attributes
    ----------
    v_bar, v, v_prev : ndarray, shape (r, n)
        :math:`\\bar V^{s}`, :math:`V^{s}`, :math:`V^{s-1}` (``v_prev`` is ``None`` before round 2).
    global_correction : ndarray, shape (r, n) or None
        :math:`(V^{s-1} - \\bar V^{s})/\\tilde\\eta` after the latest round (local copies only).
    """

    checkpoint_attrs = (*SparseONMFStrategy.checkpoint_attrs, "v_bar", "v_prev", "global_correction")

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.effective_lr = self.params.effective_lr
        self.v_bar: np.ndarray | None = None
        self.v_prev: np.ndarray | None = None
        self.global_correction: np.ndarray | None = None

    @property
    def initial_prox_step(self) -> float:
        """:math:`\\tilde\\eta` (the server-only variant: its ``server-step``)."""
        return self.params.server_lr

    def initial_broadcast(self, v_bar: np.ndarray) -> list[np.ndarray]:
        """:math:`\\bar V^1`; clients compute :math:`V^1` themselves."""
        self.v_bar = v_bar
        return [v_bar]

    def server_update(self, server_round: int, mean_upload: np.ndarray) -> ServerUpdate:
        """Local copies: :func:`~fedmf_app.methods.sonmf.updates.server_step` on the mean
        :math:`\\hat V_p`; server-only variant: :func:`~fedmf_app.methods.sonmf.updates.prox_gradient_step`
        on the mean :math:`G_p`."""
        lr = self.params.server_lr
        if self.params.v_update == "server":
            v_bar_next, v_next = prox_gradient_step(self.v, mean_upload, lr, self.params.mu)
        else:
            v_bar_next, v_next = server_step(self.v, [mean_upload], self.params)
            self.global_correction = (self.v - v_bar_next) / self.effective_lr
        self.v_prev, self.v_bar = self.v, v_bar_next
        return ServerUpdate(v_next=v_next, broadcast=[v_bar_next], prox_input=v_bar_next, prox_step=lr)


class FedMAvgStrategy(SparseONMFStrategy):
    """Adapted FedMAvg: the server averages the clients' post-proximal copies."""

    @property
    def initial_prox_step(self) -> float:
        """:math:`\\alpha`, the clients' prox step."""
        return self.params.local_lr

    def server_update(self, server_round: int, mean_upload: np.ndarray) -> ServerUpdate:
        """:math:`V^{s+1} = \\frac1m\\sum_p V_p`: not a prox step, so no prox subgradient."""
        v_next = fedmavg_server_step([mean_upload])
        return ServerUpdate(v_next=v_next, broadcast=[v_next])


class FedMGSStrategy(FedSONMFStrategy):
    """Adapted FedMGS: the proposed method's server-only ``V`` update with step ``fedmgs-step``.

    Clients upload :math:`G_p` at fixed :math:`V^s`; the server broadcasts
    :math:`\\bar V^{s+1} = V^s - \\eta\\,\\frac1m\\sum_p G_p` and keeps
    :math:`V^{s+1} = P_{\\eta\\mu}(\\bar V^{s+1})` (clients apply the same prox).
    """

    def make_params(self) -> SONMFParams:
        """The server-only ``V`` update with step ``fedmgs-step``."""
        return self.options.fedmgs


class FedVRAUStrategy(SparseONMFStrategy):
    """Adapted FedVRA-U: prox of the mean of :math:`V_p + \\Lambda_p/\\rho`, relaxed by ``d``."""

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.vra = self.options.fedvra

    @property
    def initial_prox_step(self) -> float:
        """:math:`1/\\rho`."""
        return 1.0 / self.vra.rho

    def server_update(self, server_round: int, mean_upload: np.ndarray) -> ServerUpdate:
        """With ``d = 1`` :math:`V^{s+1} = P_{\\mu/\\rho}(\\bar Z)` is a prox step (subgradient
        :math:`\\rho(\\bar Z - V^{s+1})`); with ``d < 1`` it is not."""
        z_mean, _, v_next = fedvra_server_step(self.v, [mean_upload], self.params.mu, self.vra)
        if self.vra.aggregation_step == 1.0:
            return ServerUpdate(
                v_next=v_next, broadcast=[v_next], prox_input=z_mean, prox_step=1.0 / self.vra.rho
            )
        return ServerUpdate(v_next=v_next, broadcast=[v_next])


#: The family's Strategy per run-config ``algorithm`` (read by :func:`fedmf_app.registry.strategy_class`).
STRATEGIES: dict[str, type[SparseONMFStrategy]] = {
    "fedsonmf": FedSONMFStrategy,
    "fedmavg": FedMAvgStrategy,
    "fedmgs": FedMGSStrategy,
    "fedvra-u": FedVRAUStrategy,
}
