"""Client side shared by every method on paper A's sparse ONMF model (no math here).

A client holds :math:`X_p` (``d_p x n``, the view transposed) and its private basis :math:`U_p`,
initialised in round 1 and kept in ``context.state`` afterwards: fitted to the round-1 broadcast
(``sonmf.start = "sketch"``, after answering the start's sketch request before round 1:
:meth:`SparseONMFClient.get_properties`), or from ``(seed, partition id)`` (``"random"``: run config
``basis-init``, random or k-means on its own features).
Each round :class:`SparseONMFClient` loads its state, runs the method's :meth:`local_work` with one
BLAS thread and times it (``kernel_s``), appends the diagnostics at :math:`(U_p^{s,0}, V^s)` when
``diagnostics = true`` (:func:`~fedmf_app.methods.sonmf.updates.client_diagnostics`: the gradient
as the last array, the loss and the ``U`` residual as metrics) and saves its state.

**The proposed method** (:class:`FedSONMFClient`) keeps in ``context.state`` (never sent): the
basis :math:`U_p`, the average local gradient :math:`G_p^{s-1}` and the previous post-proximal
global variable :math:`V^{s-1}` (both for the drift correction); the math is in
:mod:`fedmf_app.methods.sonmf.updates`. With ``v-update = "server"`` (ablation) the client runs
``tau`` ``U`` steps at fixed :math:`V^s` and uploads :math:`G_p^s`.

**The compared methods** (math in :mod:`fedmf_app.methods.sonmf.adapted_updates`) keep
:math:`U_p`; FedVRA-U also keeps its dual :math:`\\Lambda_p` (``r x n``).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from flwr.common import NDArrays, Scalar

from fedmf_app.common.clustering import kmeans_basis
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.common.threads import one_blas_thread
from fedmf_app.federated.client import ViewClient
from fedmf_app.federated.protocol import Stage
from fedmf_app.federated.saved_state import load_state, save_state
from fedmf_app.methods.sonmf.adapted_updates import (
    fedmavg_local_round,
    fedmavg_local_steps,
    fedvra_local_round,
)
from fedmf_app.methods.sonmf.nonneg_orth import random_feasible_basis
from fedmf_app.methods.sonmf.options import FAMILY
from fedmf_app.methods.sonmf.params import SONMFOptions, sonmf_options
from fedmf_app.methods.sonmf.protocol import PROTOCOL
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.start import basis_from_coefficients, gram_sketch, sketch_test_matrix
from fedmf_app.methods.sonmf.updates import SONMFParams, client_diagnostics, fixed_v_round, local_round
from fedmf_app.methods.sonmf.upload_bounds import round_bounds, sketch_bound

__all__ = [
    "CLIENTS",
    "FedMAvgClient",
    "FedMGSClient",
    "FedSONMFClient",
    "FedVRAUClient",
    "LocalWork",
    "SparseONMFClient",
]


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
    xvt : ndarray, shape (d, r), optional
        :math:`XV^\\top` at ``v`` when the round computed it (the diagnostics reuse it).
    """

    upload: np.ndarray
    u: np.ndarray
    v: np.ndarray
    state: dict[str, np.ndarray] = field(default_factory=dict)
    xvt: np.ndarray | None = None


class SparseONMFClient(ViewClient):
    """Base client of paper A's model; subclasses implement :meth:`local_work`."""

    family = FAMILY
    protocol = PROTOCOL

    #: Namespace of this method's arrays in ``context.state``.
    state_name: str = ""

    @cached_property
    def options(self) -> SONMFOptions:
        """The run's ``sonmf.*`` keys, typed (built once per message: Flower rebuilds the client)."""
        return sonmf_options(self.cfg)

    def make_params(self) -> SONMFParams:
        """Kernel parameters of the method (default: the proposed method's)."""
        return self.options.steps

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

    def answer_properties(self, stage: Stage, config: dict[str, Scalar]) -> dict[str, Scalar]:
        """The sketch start (stage ``sketch``, before round 1): this view's share of the sketch,
        :math:`X_p^\\top X_p \\Omega` (``n x l``, ``l = min(r + 10, n)`` for the run's rank ``r``),
        always masked (uint64 bytes under ``sketch``), so that the server sees only the sum."""
        x = self.view.features.T
        omega = sketch_test_matrix(
            x.shape[1], self.sizes().fact("rank"), rng_for(self.shared.seed, Stream.SONMF_SKETCH)
        )
        arrays, _ = self.reply(stage, {"sketch": gram_sketch(x, omega)}, [], 0, sketch_bound(omega))
        return {"sketch": arrays[0].tobytes()}

    def fit_stage(
        self, stage: Stage, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Scalar]]:
        """Run this round's local work from the broadcast.

        Parameters
        ----------
        stage : Stage
            The training round.
        parameters : list of ndarray
            The server's broadcast.
        config : dict
            ``server-round`` and the run's facts.

        Returns
        -------
        arrays : list of ndarray (r, n)
            The method's upload and, with diagnostics, :math:`\\nabla_V f_p(U_p^{s,0}, V^s)`; with
            ``secure-aggregation = true`` one masked uint64 vector holding both and the two
            diagnostic scalars (:meth:`~fedmf_app.federated.client.ViewClient.reply`), each first
            checked against its bound (:mod:`fedmf_app.methods.sonmf.upload_bounds`).
        num_examples : int
            Samples n.
        metrics : dict
            ``partition-id``, ``kernel_s``, ``peak_rss_mb`` and in round 1 ``labels``
            (:meth:`~fedmf_app.federated.client.ViewClient.round_record`); with diagnostics ``loss``
            and ``basis_residual`` (in the masked vector instead with secure aggregation, which adds
            ``secagg_s``).
        """
        server_round = int(config["server-round"])
        state = load_state(self.context, self.cfg, self.state_name, server_round)
        x = self.view.features.T
        previous = state.pop("bound", None)
        bounds = round_bounds(
            self.shared.algorithm,
            self.make_params(),
            self.options.fedmavg_schedule,
            parameters[0],
            server_round,
            None if previous is None else float(previous),
            state.get("v_prev"),
        )
        u_start = state.pop("u", None)
        if u_start is None:
            rng = rng_for(self.shared.seed, Stream.CLIENT_INIT, self.partition_id)
            rank = parameters[0].shape[0]  # the run's rank: the broadcast V is r x n
            if self.options.start == "sketch":
                u_start = basis_from_coefficients(x, parameters[0])
            elif self.options.basis_init == "kmeans":
                u_start = kmeans_basis(x, rank, rng)
            else:
                u_start = random_feasible_basis(x.shape[0], rank, rng)
        started = time.perf_counter()
        # The products with the view are thin (d x n times n x r): a second BLAS thread gains
        # little on them and, where clients share the cores (Ray sets OMP_NUM_THREADS to an actor's
        # CPUs), it can cost half their speed (docs/scale.md).
        with one_blas_thread():
            work = self.local_work(x, u_start, parameters, state, server_round)
            values: dict[str, Scalar | np.ndarray] = {
                "upload": work.upload,
                "partition-id": self.partition_id,
            }
            if self.options.diagnostics:
                diag = client_diagnostics(x, u_start, work.u, work.v, work.xvt)
                values.update(gradient=diag.grad, loss=diag.loss, basis_residual=diag.basis_residual)
        values["kernel_s"] = time.perf_counter() - started
        values.update(self.round_record(server_round))
        arrays, metrics = self.reply(stage, values, parameters, server_round, bounds)
        kept = {"u": work.u, **work.state}
        if bounds.upload is not None:
            kept["bound"] = np.array(bounds.upload)
        save_state(self.context, self.cfg, self.state_name, server_round, kept)
        return arrays, x.shape[1], metrics


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
        return LocalWork(
            upload=result.v_hat,
            u=result.u,
            v=result.v,
            state={"grad_prev": result.grad_avg, "v_prev": result.v},
            xvt=result.xvt,
        )


class FedMAvgClient(SparseONMFClient):
    """Adapted FedMAvg: :math:`\\tau_s` alternating ``U`` and proximal gradient steps on a copy of
    :math:`V^s`; uploads the copy."""

    state_name = "fedmavg"

    def local_work(
        self,
        x: np.ndarray,
        u: np.ndarray,
        received: NDArrays,
        state: dict[str, np.ndarray],
        server_round: int,
    ) -> LocalWork:
        """Upload :math:`V_p` after :math:`\\tau_s` steps (``fedmavg-schedule``)."""
        params = self.make_params()
        steps = fedmavg_local_steps(params.local_steps, server_round, self.options.fedmavg_schedule)
        v_local, u_end = fedmavg_local_round(x, u, received[0], steps, params)
        return LocalWork(upload=v_local, u=u_end, v=received[0])


class FedMGSClient(FedSONMFClient):
    """Adapted FedMGS: the proposed method's server-only variant with step ``fedmgs-step``."""

    state_name = "fedmgs"

    def make_params(self) -> SONMFParams:
        """The server-only ``V`` update with step ``fedmgs-step``."""
        return self.options.fedmgs


class FedVRAUClient(SparseONMFClient):
    """Adapted FedVRA-U: primal steps on the augmented Lagrangian, a dual step; uploads
    :math:`V_p + \\Lambda_p/\\rho`."""

    state_name = "fedvra-u"

    def local_work(
        self,
        x: np.ndarray,
        u: np.ndarray,
        received: NDArrays,
        state: dict[str, np.ndarray],
        server_round: int,
    ) -> LocalWork:
        """``tau`` primal steps from :math:`V^s`, then :math:`\\Lambda_p \\mathrel{+}= a\\rho(V_p - V^s)`."""
        v = received[0]
        dual = state.get("dual", np.zeros_like(v))
        upload, dual, u_end = fedvra_local_round(x, u, v, dual, self.make_params(), self.options.fedvra)
        return LocalWork(upload=upload, u=u_end, v=v, state={"dual": dual})


#: The family's NumPyClient per run-config ``algorithm`` (read by :func:`fedmf_app.registry.client_class`).
CLIENTS: dict[str, type[SparseONMFClient]] = {
    "fedsonmf": FedSONMFClient,
    "fedmavg": FedMAvgClient,
    "fedmgs": FedMGSClient,
    "fedvra-u": FedVRAUClient,
}
