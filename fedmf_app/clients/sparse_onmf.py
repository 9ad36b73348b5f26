"""Client side shared by every method on paper A's sparse ONMF model (no math here).

A client holds :math:`X_p` (``d_p x n``, the view transposed) and its private basis :math:`U_p`,
initialised from ``(seed, partition id)`` in round 1 (run config ``basis-init``: random, or k-means
on its own features) and kept in ``context.state`` afterwards.
Each round :class:`SparseONMFClient` loads its state, runs the method's :meth:`local_work`, times
it (``kernel_s``), appends the diagnostics at :math:`(U_p^{s,0}, V^s)` when ``diagnostics = true``
(:func:`~fedmf_app.kernels.sonmf.client_diagnostics`: the gradient as the last array, the loss
and the ``U`` residual as metrics) and saves its state.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass, field

import numpy as np
from flwr.common import NDArrays, Scalar

from fedmf_app.clients.base import ViewClient, load_state, save_state
from fedmf_app.config import basis_init, sonmf_params
from fedmf_app.kernels.clustering import kmeans_basis
from fedmf_app.kernels.nonneg_orth import random_feasible_basis
from fedmf_app.kernels.sonmf import SONMFParams, client_diagnostics
from fedmf_app.seeding import Stream, rng_for

__all__ = ["LocalWork", "SparseONMFClient"]


@dataclass(frozen=True)
class LocalWork:
    """What one client's round produced.

    Attributes
    ----------
    upload : ndarray, shape (r, n)
        Sent to the server.
    u : ndarray, shape (d, r)
        :math:`U_p` after the round (kept).
    v : ndarray, shape (r, n)
        :math:`V^s` as this client used it (for the diagnostics).
    state : dict of ndarray
        Further private arrays to keep until the next round.
    """

    upload: np.ndarray
    u: np.ndarray
    v: np.ndarray
    state: dict[str, np.ndarray] = field(default_factory=dict)


class SparseONMFClient(ViewClient):
    """Base client of paper A's model; subclasses implement :meth:`local_work`."""

    #: Namespace of this method's arrays in ``context.state``.
    state_name: str = ""

    def make_params(self) -> SONMFParams:
        """Kernel parameters from the run config (default: the proposed method's)."""
        return sonmf_params(self.cfg)

    @abstractmethod
    def local_work(
        self,
        x: np.ndarray,
        u: np.ndarray,
        received: NDArrays,
        state: dict[str, np.ndarray],
        server_round: int,
    ) -> LocalWork:
        """One round of the method's client update.

        Parameters
        ----------
        x : ndarray, shape (d, n)
        u : ndarray, shape (d, r)
            :math:`U_p^{s,0}` (feasible).
        received : list of ndarray
            The server's broadcast.
        state : dict of ndarray
            What the previous round kept (empty in round 1).
        server_round : int
        """

    def fit(
        self, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Scalar]]:
        """Run this round's local work from the broadcast.

        Parameters
        ----------
        parameters : list of ndarray
            The server's broadcast.
        config : dict
            ``server-round``.

        Returns
        -------
        arrays : list of ndarray (r, n)
            The method's upload and, with diagnostics, :math:`\\nabla_V f_p(U_p^{s,0}, V^s)`.
        num_examples : int
            Samples n.
        metrics : dict
            ``partition-id``, ``kernel_s``; with diagnostics ``loss`` and ``basis_residual``.
        """
        server_round = int(config["server-round"])
        state = load_state(self.context, self.state_name, server_round)
        x = self.view.features.T
        u_start = state.pop("u", None)
        if u_start is None:
            rng = rng_for(self.cfg["seed"], Stream.CLIENT_INIT, self.partition_id)
            rank = parameters[0].shape[0]  # the run's rank: the broadcast V is r x n
            if basis_init(self.cfg) == "kmeans":
                u_start = kmeans_basis(x, rank, rng)
            else:
                u_start = random_feasible_basis(x.shape[0], rank, rng)
        started = time.perf_counter()
        work = self.local_work(x, u_start, parameters, state, server_round)
        arrays: NDArrays = [work.upload]
        metrics: dict[str, Scalar] = {"partition-id": self.partition_id}
        if self.cfg["diagnostics"]:
            diag = client_diagnostics(x, u_start, work.u, work.v)
            arrays.append(diag.grad)
            metrics.update(loss=diag.loss, basis_residual=diag.basis_residual)
        metrics["kernel_s"] = time.perf_counter() - started
        save_state(self.context, self.state_name, server_round, {"u": work.u, **work.state})
        return arrays, x.shape[1], metrics
