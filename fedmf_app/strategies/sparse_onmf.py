"""Server side shared by every method on paper A's sparse ONMF model (no math here).

The proposed method (``fedsonmf``, with its ablation variants) and the adapted FedMAvg, FedMGS and
FedVRA-U hold one global :math:`V` (``r x n``) and differ only in what the clients upload and how
the server turns the uploads into :math:`V^{s+1}`. :class:`SparseONMFStrategy` does the rest, the
same way for all of them, so that their records can be compared:

* before round 1: checks ``rank <= d_p`` for every view; draws :math:`\\bar V^1 = c\\,|N(0,1)|`
  (``v-init-scale`` = c, the server's seed stream) and sets :math:`V^1 = P_{t\\mu}(\\bar V^1)` with
  the method's server prox step ``t``;
* each round, with ``diagnostics = true`` (every client then appends
  :math:`\\nabla_V f_p(U_p^{s,0}, V^s)` to its upload and reports its loss and ``U`` residual):
  the objective at :math:`(U^{s,0}, V^s)`, :math:`R_U`, and :math:`R_V` in two forms
  (:mod:`fedmf_app.kernels.residuals`):

  - ``residual_v``: with the subgradient the server's own prox produces at :math:`V^{s+1}` when
    the update ends in one (``fedsonmf``, ``fedmgs``, ``fedvra-u`` with ``d = 1``), otherwise
    (``fedmavg``: averaging after the clients' proxes; ``fedvra-u`` with ``d < 1``) the min-norm
    subgradient;
  - ``residual_v_min``: the min-norm subgradient for every method,
    :math:`\\operatorname{dist}^2(0, \\bar g^s + \\partial h(V^{s+1})) \\le` ``residual_v``;

  ``residual = residual_v + residual_u`` and ``residual_min = residual_v_min + residual_u``, with
  the per-round ratio and the printed running average of ``residual``;
* after the last round: the summary (rounds to 1e-2 per normalisation), ``residuals.png``, and
  the final labels by k-means on :math:`V^T` (paper A's protocol, spec 1.11: 10 replicates x 300
  iterations, seeded; ``k`` = :attr:`num_clusters`, else the rank).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from flwr.common import Scalar

from fedmf_app.config import resolve_rank, sonmf_params
from fedmf_app.kernels.clustering import kmeans_labels
from fedmf_app.kernels.prox import prox_l21_nonneg
from fedmf_app.kernels.residuals import (
    gradient_mapping,
    normalised_residuals,
    residual_v,
    residual_v_min_norm,
    rounds_to_target,
)
from fedmf_app.kernels.sonmf import SONMFParams, regulariser
from fedmf_app.plots import plot_residuals
from fedmf_app.results import RunRecorder
from fedmf_app.seeding import Stream, rng_for
from fedmf_app.strategies.base import ClientReply, FederationError, ViewFederationStrategy

__all__ = ["ServerUpdate", "SparseONMFStrategy"]


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

    Parameters
    ----------
    cfg : dict
        Validated run config.
    recorder : RunRecorder

    Attributes
    ----------
    params : SONMFParams
        Kernel parameters (:meth:`make_params`).
    v : ndarray, shape (r, n)
        :math:`V^s`, the current post-proximal global variable (set before round 1).
    rank : int
        ``r`` of this run (:func:`~fedmf_app.config.resolve_rank`, set before round 1).

    Notes
    -----
    Subclasses implement :meth:`server_update` and :attr:`initial_prox_step`, and may override
    :meth:`make_params` and :meth:`initial_broadcast`. Client uploads: ``arrays[0]`` is the
    method's upload; with diagnostics the last array is :math:`\\nabla_V f_p(U_p^{s,0}, V^s)`.
    """

    progress_keys = ("residual", "residual_ratio", "normalized_residual", "objective")

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.params = self.make_params(cfg)
        self.v: np.ndarray | None = None
        self.rank: int = 0
        self._residuals: list[float] = []

    # ----------------------------------------------------------------- hooks for the methods
    def make_params(self, cfg: dict[str, Any]) -> SONMFParams:
        """Kernel parameters from the run config (default: the proposed method's)."""
        return sonmf_params(cfg)

    @property
    @abstractmethod
    def initial_prox_step(self) -> float:
        """Step ``t`` of :math:`V^1 = P_{t\\mu}(\\bar V^1)` (the method's server prox step)."""

    def initial_broadcast(self, v_bar: np.ndarray) -> list[np.ndarray]:
        """Round-1 broadcast (default: :math:`V^1` itself)."""
        return [self.v]

    @abstractmethod
    def server_update(self, server_round: int, uploads: list[np.ndarray]) -> ServerUpdate:
        """Turn the clients' uploads (partition order) into :math:`V^{s+1}`; ``self.v`` is :math:`V^s`."""

    # ---------------------------------------------------------------------------- base hooks
    def check_clients(self, info: list[dict[str, Scalar]]) -> None:
        """Equal sample counts; sets :attr:`rank` (option ``rank``, 0 = auto) and checks
        ``rank <= d_p`` for every view."""
        super().check_clients(info)
        self.rank = resolve_rank(self.cfg, self.num_clusters, [int(i["num-features"]) for i in info])
        rank = self.rank
        small = [i for i in info if int(i["num-features"]) < rank]
        if small:
            detail = ", ".join(
                f"partition {i['partition-id']} ({i['source']}) has {i['num-features']}"
                for i in small
            )
            raise FederationError(
                f"run config 'rank' = {rank} is invalid: every view needs at least {rank} features "
                f"for a nonnegative orthonormal basis, but {detail}"
            )

    def initial_arrays(self) -> list[np.ndarray]:
        """:math:`\\bar V^1 = c\\,|N(0,1)|^{r \\times n}` ([A] ``v-init-scale``), :math:`V^1 = P_{t\\mu}(\\bar V^1)`."""
        n = int(self.client_info[0]["num-samples"])
        rng = rng_for(self.cfg["seed"], Stream.SERVER_INIT)
        v_bar = self.cfg["v-init-scale"] * np.abs(rng.standard_normal((self.rank, n)))
        self.v = prox_l21_nonneg(v_bar, self.initial_prox_step * self.params.mu)
        return self.initial_broadcast(v_bar)

    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Server update; with diagnostics, the objective and the residuals of round ``s``."""
        update = self.server_update(server_round, [r.arrays[0] for r in replies])
        record: dict[str, Any] = {}
        if update.prox_step is not None:
            record["gradient_mapping"] = gradient_mapping(self.v, update.v_next, update.prox_step)
        if self.cfg["diagnostics"]:
            mean_grad = np.mean([r.arrays[-1] for r in replies], axis=0)
            r_v_min = residual_v_min_norm(update.v_next, mean_grad, self.params.mu)
            if update.prox_input is None:
                r_v = r_v_min
            else:
                r_v = residual_v(update.prox_input, update.v_next, mean_grad, update.prox_step)
            r_u = float(np.mean([float(r.metrics["basis_residual"]) for r in replies]))
            self._residuals.append(r_v + r_u)
            ratio, running = normalised_residuals(self._residuals, self.cfg["residual-eps"])
            loss = float(np.mean([float(r.metrics["loss"]) for r in replies]))
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
        return update.broadcast, record

    def summary(self) -> dict[str, Any]:
        """The rank used, final residuals and rounds to 1e-2 under each normalisation."""
        rounds = self.recorder.data["rounds"]
        last = rounds[-1]
        if not self.cfg["diagnostics"]:
            return {"rank": self.rank, "final_gradient_mapping": last.get("gradient_mapping")}
        eps = self.cfg["residual-eps"]
        min_norm = [r["residual_min"] for r in rounds]
        return {
            "rank": self.rank,
            "final": {k: last[k] for k in ("objective", "residual", "residual_v", "residual_u",
                                           "residual_ratio", "normalized_residual",
                                           "residual_min")},
            "rounds_to_1e-2": {
                "ratio": rounds_to_target([r["residual_ratio"] for r in rounds]),
                "running-average": rounds_to_target([r["normalized_residual"] for r in rounds]),
                "min-norm ratio": rounds_to_target([x / max(min_norm[0], eps) for x in min_norm]),
            },
            "headline_normalisation": self.cfg["residual-normalisation"],
        }

    def final_labels(self) -> np.ndarray | None:
        """k-means on the columns of the final :math:`V` (``k`` = :attr:`num_clusters` or the rank).

        Returns
        -------
        ndarray, shape (n,)
        """
        k = self.num_clusters or self.rank
        n = self.v.shape[1]
        if k > n:
            raise FederationError(f"cannot form {k} clusters from {n} samples (run config "
                                  "'num-clusters')")
        return kmeans_labels(self.v.T, k, rng_for(self.cfg["seed"], Stream.FINAL_CLUSTERING))

    def write_plots(self) -> list[str]:
        """``residuals.png``: residual curves and objective against rounds."""
        path = plot_residuals(self.recorder.data, self.recorder.run_dir / "residuals.png")
        return [path.name]
