"""Client side of the methods paper A compares against (spec 1.10); math in
:mod:`fedmf_app.kernels.adapted`.

Private state: :math:`U_p` for all; FedVRA-U also keeps its dual :math:`\\Lambda_p` (``r x n``).
"""

from __future__ import annotations

import numpy as np
from flwr.common import NDArrays

from fedmf_app.clients.fedsonmf import FedSONMFClient
from fedmf_app.clients.sparse_onmf import LocalWork, SparseONMFClient
from fedmf_app.config import fedmgs_params, fedvra_params
from fedmf_app.kernels.adapted import fedmavg_local_round, fedmavg_local_steps, fedvra_local_round
from fedmf_app.kernels.sonmf import SONMFParams

__all__ = ["FedMAvgClient", "FedMGSClient", "FedVRAUClient"]


class FedMAvgClient(SparseONMFClient):
    """Adapted FedMAvg: :math:`\\tau_s` alternating ``U`` and proximal gradient steps on a copy of
    :math:`V^s`; uploads the copy."""

    state_name = "fedmavg"

    def local_work(self, x: np.ndarray, u: np.ndarray, received: NDArrays,
                   state: dict[str, np.ndarray], server_round: int) -> LocalWork:
        """Upload :math:`V_p` after :math:`\\tau_s` steps (``fedmavg-schedule``)."""
        params = self.make_params()
        steps = fedmavg_local_steps(params.local_steps, server_round, self.cfg["fedmavg-schedule"])
        v_local, u_end = fedmavg_local_round(x, u, received[0], steps, params)
        return LocalWork(upload=v_local, u=u_end, v=received[0])


class FedMGSClient(FedSONMFClient):
    """Adapted FedMGS: the proposed method's server-only variant with step ``fedmgs-step``."""

    state_name = "fedmgs"

    def make_params(self) -> SONMFParams:
        """The server-only ``V`` update with step ``fedmgs-step``."""
        return fedmgs_params(self.cfg)


class FedVRAUClient(SparseONMFClient):
    """Adapted FedVRA-U: primal steps on the augmented Lagrangian, a dual step; uploads
    :math:`V_p + \\Lambda_p/\\rho`."""

    state_name = "fedvra-u"

    def local_work(self, x: np.ndarray, u: np.ndarray, received: NDArrays,
                   state: dict[str, np.ndarray], server_round: int) -> LocalWork:
        """``tau`` primal steps from :math:`V^s`, then :math:`\\Lambda_p \\mathrel{+}= a\\rho(V_p - V^s)`."""
        v = received[0]
        dual = state.get("dual", np.zeros_like(v))
        upload, dual, u_end = fedvra_local_round(x, u, v, dual, self.make_params(),
                                                 fedvra_params(self.cfg))
        return LocalWork(upload=upload, u=u_end, v=v, state={"dual": dual})
