"""Server side of paper A's method (``algorithm = "fedsonmf"``): a Flower Strategy.

The strategy owns the global state:

* :math:`\\bar V^s` (pre-proximal, broadcast), :math:`V^s` (post-proximal), :math:`V^{s-1}`;
* :math:`\\tilde\\eta = \\eta_g\\tau\\alpha`;
* the global part of the drift correction, :math:`(V^{s} - \\bar V^{s+1})/\\tilde\\eta`, which equals
  the clients' mean average gradient :math:`\\frac1m\\sum_p G_p^s` (clients recover it from the
  broadcast and their stored :math:`V^s`, so it never travels).

Messages per round (spec 1.6): down :math:`\\bar V^s` (``r x n``); up :math:`\\hat V_p^{s,\\tau}`
(``r x n``), plus, with ``diagnostics = true``, :math:`\\nabla_V f_p(U_p^{s,0}, V^s)` (``r x n``)
and two scalars, from which the server computes the objective and the stationarity residual
(:mod:`fedmf_app.strategies.sparse_onmf`).

Ablation variants are run configs of this strategy: ``drift-correction = false`` (uncorrected
local copies), ``local-steps = 1``, and ``v-update = "server"`` (clients upload their average
gradient at fixed :math:`V^s`; the server takes one prox-gradient step of size ``server-step``
and broadcasts its pre-proximal :math:`\\bar V^{s+1}`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedmf_app.kernels.sonmf import prox_gradient_step, server_step
from fedmf_app.results import RunRecorder
from fedmf_app.strategies.sparse_onmf import ServerUpdate, SparseONMFStrategy

__all__ = ["FedSONMFStrategy"]


class FedSONMFStrategy(SparseONMFStrategy):
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
        :math:`(V^{s-1} - \\bar V^{s})/\\tilde\\eta` after the latest round (local copies only).
    """

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

    def server_update(self, server_round: int, uploads: list[np.ndarray]) -> ServerUpdate:
        """Local copies: :func:`~fedmf_app.kernels.sonmf.server_step` on the :math:`\\hat V_p`;
        server-only variant: :func:`~fedmf_app.kernels.sonmf.prox_gradient_step` on the mean
        :math:`G_p`."""
        lr = self.params.server_lr
        if self.params.v_update == "server":
            mean_grad = np.mean(np.stack(uploads), axis=0)
            v_bar_next, v_next = prox_gradient_step(self.v, mean_grad, lr, self.params.mu)
        else:
            v_bar_next, v_next = server_step(self.v, uploads, self.params)
            self.global_correction = (self.v - v_bar_next) / self.effective_lr
        self.v_prev, self.v_bar = self.v, v_bar_next
        return ServerUpdate(v_next=v_next, broadcast=[v_bar_next], prox_input=v_bar_next,
                            prox_step=lr)
