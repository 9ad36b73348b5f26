"""Client side of paper A's method (``algorithm = "fedsonmf"``): a Flower NumPyClient.

Private state in ``context.state`` (never sent): the basis :math:`U_p`, the average local gradient
:math:`G_p^{s-1}` and the previous post-proximal global variable :math:`V^{s-1}` (both for the
drift correction). See :mod:`fedmf_app.kernels.sonmf` for the math. With ``v-update = "server"``
(ablation) the client runs ``tau`` ``U`` steps at fixed :math:`V^s` and uploads :math:`G_p^s`.
"""

from __future__ import annotations

import numpy as np
from flwr.common import NDArrays

from fedmf_app.clients.sparse_onmf import LocalWork, SparseONMFClient
from fedmf_app.kernels.prox import prox_l21_nonneg
from fedmf_app.kernels.sonmf import fixed_v_round, local_round

__all__ = ["FedSONMFClient"]


class FedSONMFClient(SparseONMFClient):
    """Local loop of paper A with pre-/post-proximal copies and drift correction."""

    state_name = "fedsonmf"

    def local_work(
        self,
        x: np.ndarray,
        u: np.ndarray,
        received: NDArrays,
        state: dict[str, np.ndarray],
        server_round: int,
    ) -> LocalWork:
        """From :math:`\\bar V^s`: ``tau`` local steps and upload :math:`\\hat V_p^{s,\\tau}`, or
        (server-only variant) ``tau`` ``U`` steps at :math:`V^s` and upload :math:`G_p^s`."""
        params = self.make_params()
        if params.v_update == "server":
            v = prox_l21_nonneg(received[0], params.server_lr * params.mu)
            u_end, grad_avg = fixed_v_round(x, u, v, params)
            return LocalWork(upload=grad_avg, u=u_end, v=v)
        result = local_round(x, u, received[0], params, state.get("v_prev"), state.get("grad_prev"))
        return LocalWork(upload=result.v_hat, u=result.u, v=result.v,
                         state={"grad_prev": result.grad_avg, "v_prev": result.v})
