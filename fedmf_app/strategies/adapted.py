"""Server side of the methods paper A compares against, adapted to its model (spec 1.10).

FedMAvg and FedVRA-U broadcast :math:`V^s` itself; FedMGS, which is the proposed method's
server-only ``V`` update with its own step, broadcasts :math:`\\bar V^{s}` like it. All record the
same diagnostics as the proposed method (:mod:`fedmf_app.strategies.sparse_onmf`). The math is in
:mod:`fedmf_app.kernels.adapted` and :mod:`fedmf_app.kernels.sonmf`.

============  ===================================  =====================================  ===========================
algorithm     upload                               server update                          ``residual_v`` subgradient
============  ===================================  =====================================  ===========================
``fedmavg``   :math:`V_p` after its local steps    :math:`V^{s+1} = \\mathrm{mean}_p V_p`  min-norm (no server prox)
``fedmgs``    :math:`G_p` at fixed :math:`V^s`      :math:`P_{\\eta\\mu}(V^s - \\eta\\bar G)`  server prox, step ``eta``
``fedvra-u``  :math:`Z_p = V_p + \\Lambda_p/\\rho`     :math:`V^s + d(P_{\\mu/\\rho}(\\bar Z) - V^s)`  server prox (``d = 1``), else min-norm
============  ===================================  =====================================  ===========================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedmf_app.config import fedmgs_params, fedvra_params
from fedmf_app.kernels.adapted import fedmavg_server_step, fedvra_server_step
from fedmf_app.kernels.sonmf import SONMFParams
from fedmf_app.results import RunRecorder
from fedmf_app.strategies.fedsonmf import FedSONMFStrategy
from fedmf_app.strategies.sparse_onmf import ServerUpdate, SparseONMFStrategy

__all__ = ["FedMAvgStrategy", "FedMGSStrategy", "FedVRAUStrategy"]


class FedMAvgStrategy(SparseONMFStrategy):
    """Adapted FedMAvg: the server averages the clients' post-proximal copies."""

    @property
    def initial_prox_step(self) -> float:
        """:math:`\\alpha`, the clients' prox step."""
        return self.params.local_lr

    def server_update(self, server_round: int, uploads: list[np.ndarray]) -> ServerUpdate:
        """:math:`V^{s+1} = \\frac1m\\sum_p V_p`: not a prox step, so no prox subgradient."""
        v_next = fedmavg_server_step(uploads)
        return ServerUpdate(v_next=v_next, broadcast=[v_next])


class FedMGSStrategy(FedSONMFStrategy):
    """Adapted FedMGS: the proposed method's server-only ``V`` update with step ``fedmgs-step``.

    Clients upload :math:`G_p` at fixed :math:`V^s`; the server broadcasts
    :math:`\\bar V^{s+1} = V^s - \\eta\\,\\frac1m\\sum_p G_p` and keeps
    :math:`V^{s+1} = P_{\\eta\\mu}(\\bar V^{s+1})` (clients apply the same prox).
    """

    def make_params(self, cfg: dict[str, Any]) -> SONMFParams:
        """The server-only ``V`` update with step ``fedmgs-step``."""
        return fedmgs_params(cfg)


class FedVRAUStrategy(SparseONMFStrategy):
    """Adapted FedVRA-U: prox of the mean of :math:`V_p + \\Lambda_p/\\rho`, relaxed by ``d``."""

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.vra = fedvra_params(cfg)

    @property
    def initial_prox_step(self) -> float:
        """:math:`1/\\rho`."""
        return 1.0 / self.vra.rho

    def server_update(self, server_round: int, uploads: list[np.ndarray]) -> ServerUpdate:
        """With ``d = 1`` :math:`V^{s+1} = P_{\\mu/\\rho}(\\bar Z)` is a prox step (subgradient
        :math:`\\rho(\\bar Z - V^{s+1})`); with ``d < 1`` it is not."""
        z_mean, _, v_next = fedvra_server_step(self.v, uploads, self.params.mu, self.vra)
        if self.vra.aggregation_step == 1.0:
            return ServerUpdate(v_next=v_next, broadcast=[v_next], prox_input=z_mean,
                                prox_step=1.0 / self.vra.rho)
        return ServerUpdate(v_next=v_next, broadcast=[v_next])
