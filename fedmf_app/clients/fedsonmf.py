"""Client side of paper A's method (``algorithm = "fedsonmf"``): a Flower NumPyClient.

Private state in ``context.state`` (never sent): the basis :math:`U_p`, the average local gradient
:math:`G_p^{s-1}` and the previous post-proximal global variable :math:`V^{s-1}` (both for the
drift correction). See :mod:`fedmf_app.kernels.sonmf` for the math.
"""

from __future__ import annotations

import time

import numpy as np
from flwr.common import NDArrays, Scalar

from fedmf_app.clients.base import ViewClient, load_state, save_state
from fedmf_app.config import sonmf_params
from fedmf_app.kernels.nonneg_orth import random_feasible_basis
from fedmf_app.kernels.sonmf import client_diagnostics, local_round
from fedmf_app.seeding import Stream, rng_for

__all__ = ["FedSONMFClient"]

_STATE = "fedsonmf"


class FedSONMFClient(ViewClient):
    """Local loop of paper A with pre-/post-proximal copies and drift correction."""

    def fit(
        self, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Scalar]]:
        """Run ``tau`` local steps from the broadcast :math:`\\bar V^s`.

        Parameters
        ----------
        parameters : [ndarray (r, n)]
            :math:`\\bar V^s`.
        config : dict
            ``server-round``.

        Returns
        -------
        arrays : [ndarray (r, n)] or [ndarray (r, n), ndarray (r, n)]
            :math:`\\hat V_p^{s,\\tau}`, and with diagnostics :math:`\\nabla_V f_p(U_p^{s,0}, V^s)`.
        num_examples : int
            Samples n.
        metrics : dict
            ``partition-id``, ``kernel_s``; with diagnostics ``loss`` and ``basis_residual``.
        """
        server_round = int(config["server-round"])
        state = load_state(self.context, _STATE, server_round)
        x = self.view.features.T
        params = sonmf_params(self.cfg)
        u_start = state.get("u")
        if u_start is None:
            rng = rng_for(self.cfg["seed"], Stream.CLIENT_INIT, self.partition_id)
            u_start = random_feasible_basis(x.shape[0], self.cfg["rank"], rng)
        started = time.perf_counter()
        result = local_round(
            x, u_start, parameters[0], params, state.get("v_prev"), state.get("grad_prev")
        )
        arrays: NDArrays = [result.v_hat]
        metrics: dict[str, Scalar] = {"partition-id": self.partition_id}
        if self.cfg["diagnostics"]:
            diag = client_diagnostics(x, u_start, result.u, result.v)
            arrays.append(diag.grad)
            metrics.update(loss=diag.loss, basis_residual=diag.basis_residual)
        metrics["kernel_s"] = time.perf_counter() - started
        save_state(
            self.context,
            _STATE,
            server_round,
            {"u": result.u, "grad_prev": result.grad_avg, "v_prev": result.v},
        )
        return arrays, x.shape[1], metrics
