"""Server side of paper A's method (``algorithm = "fedsonmf"``): a Flower Strategy.

The strategy owns the global state:

* :math:`\\bar V^s` (pre-proximal, broadcast), :math:`V^s` (post-proximal), :math:`V^{s-1}`;
* :math:`\\tilde\\eta = \\eta_g\\tau\\alpha`;
* the global part of the drift correction, :math:`(V^{s} - \\bar V^{s+1})/\\tilde\\eta`, which equals
  the clients' mean average gradient :math:`\\frac1m\\sum_p G_p^s` (clients recover it from the
  broadcast and their stored :math:`V^s`, so it never travels).

Messages per round (spec 1.6): down :math:`\\bar V^s` (``r x n``); up :math:`\\hat V_p^{s,\\tau}`
(``r x n``), plus, with ``diagnostics = true``, :math:`\\nabla_V f_p(U_p^{s,0}, V^s)` (``r x n``)
and two scalars, from which the server computes the objective and the stationarity residual.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.common import Scalar

from fedmf_app.config import sonmf_params
from fedmf_app.kernels.prox import prox_l21_nonneg
from fedmf_app.kernels.residuals import (
    gradient_mapping,
    normalised_residuals,
    residual_v,
    rounds_to_target,
)
from fedmf_app.kernels.sonmf import regulariser, server_step
from fedmf_app.plots import plot_residuals
from fedmf_app.results import RunRecorder
from fedmf_app.seeding import Stream, rng_for
from fedmf_app.strategies.base import ClientReply, FederationError, ViewFederationStrategy

__all__ = ["FedSONMFStrategy"]


class FedSONMFStrategy(ViewFederationStrategy):
    """Federated sparse ONMF with variable splitting and drift correction (server).

    Parameters
    ----------
    cfg : dict
        Validated run config.
    recorder : RunRecorder

    Attributes
    ----------
    v_bar, v, v_prev : ndarray, shape (r, n)
        :math:`\\bar V^{s}`, :math:`V^{s}`, :math:`V^{s-1}` (``v_prev`` is ``None`` before round 2).
    global_correction : ndarray, shape (r, n) or None
        :math:`(V^{s-1} - \\bar V^{s})/\\tilde\\eta` after the latest round.
    """

    progress_keys = ("residual", "residual_ratio", "normalized_residual", "objective")

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.params = sonmf_params(cfg)
        self.effective_lr = self.params.effective_lr
        self.v_bar: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.v_prev: np.ndarray | None = None
        self.global_correction: np.ndarray | None = None
        self._residuals: list[float] = []

    def check_clients(self, info: list[dict[str, Scalar]]) -> None:
        """Equal sample counts, and ``rank <= d_p`` for every view."""
        super().check_clients(info)
        rank = self.cfg["rank"]
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
        """:math:`\\bar V^1 = s\\,|N(0,1)|^{r \\times n}` ([A] ``v-init-scale``)."""
        n = int(self.client_info[0]["num-samples"])
        rng = rng_for(self.cfg["seed"], Stream.SERVER_INIT)
        self.v_bar = self.cfg["v-init-scale"] * np.abs(rng.standard_normal((self.cfg["rank"], n)))
        self.v = prox_l21_nonneg(self.v_bar, self.effective_lr * self.params.mu)
        return [self.v_bar]

    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Server step; with diagnostics, the objective and the residuals of round ``s``."""
        v_bar_next, v_next = server_step(self.v, [r.arrays[0] for r in replies], self.params)
        record: dict[str, Any] = {
            "gradient_mapping": gradient_mapping(self.v, v_next, self.effective_lr)
        }
        if self.cfg["diagnostics"]:
            mean_grad = np.mean([r.arrays[1] for r in replies], axis=0)
            r_v = residual_v(v_bar_next, v_next, mean_grad, self.effective_lr)
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
            )
        self.global_correction = (self.v - v_bar_next) / self.effective_lr
        self.v_prev, self.v, self.v_bar = self.v, v_next, v_bar_next
        return [v_bar_next], record

    def summary(self) -> dict[str, Any]:
        """Final residuals and rounds to 1e-2 under each normalisation."""
        rounds = self.recorder.data["rounds"]
        if not self.cfg["diagnostics"]:
            return {"final_gradient_mapping": rounds[-1]["gradient_mapping"]}
        last = rounds[-1]
        return {
            "final": {k: last[k] for k in ("objective", "residual", "residual_v", "residual_u",
                                           "residual_ratio", "normalized_residual")},
            "rounds_to_1e-2": {
                "ratio": rounds_to_target([r["residual_ratio"] for r in rounds]),
                "running-average": rounds_to_target([r["normalized_residual"] for r in rounds]),
            },
            "headline_normalisation": self.cfg["residual-normalisation"],
        }

    def write_plots(self) -> list[str]:
        """``residuals.png``: residual curves and objective against rounds."""
        path = plot_residuals(self.recorder.data, self.recorder.run_dir / "residuals.png")
        return [path.name]
