"""Paper A's ``fedsonmf`` in one process, no Flower: the reference the adapters must match.

Every client's local round (:func:`~fedmf_app.methods.sonmf.updates.local_round`) and then the
server step, with the seeds of the NumPyClients and the Strategy, from the random start
(``sonmf.start = "random"``: :math:`\\bar V^1 = |N(0, 1)|`, each :math:`U_p` a random feasible
basis). :data:`REFERENCE` keeps the interface of
:class:`~fedmf_app.common.federation_reference.FederationReference`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data.preprocess import is_sparse_nonnegative
from fedmf_app.data.synthetic import SyntheticSpec, SyntheticView, make_synthetic_view
from fedmf_app.methods.sonmf.clustering import cluster_columns
from fedmf_app.methods.sonmf.nonneg_orth import random_feasible_basis
from fedmf_app.methods.sonmf.params import SONMFOptions, resolve_cluster_columns, resolve_rank
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.residuals import residual_v
from fedmf_app.methods.sonmf.updates import (
    LocalRoundResult,
    client_diagnostics,
    local_round,
    regulariser,
    server_step,
)

__all__ = ["REFERENCE", "SONMFReference", "synthetic_views"]


class SONMFReference:
    """An in-process ``fedsonmf`` federation.

    Parameters
    ----------
    views : list of ndarray or csr_matrix, each shape (n, d_p)
        The clients' views, samples by features; each client works on the transpose
        :math:`X_p` (``d_p x n``), as the NumPyClient does.
    params : SONMFOptions
        The run's ``sonmf.*`` parameters (the steps are ``params.steps``; the rank from
        ``params.rank``, :func:`~fedmf_app.methods.sonmf.params.resolve_rank`).
    num_clusters : int
        Clusters of the final clustering (and of the automatic rank).
    seed : int
        The run's seed.
    observed : ndarray of bool, shape (n, M), optional
        Not read: paper A's clients hold their views with the missing rows filled, as given.

    Attributes
    ----------
    rank : int
    us : list of ndarray, each shape (d_p, r)
        The clients' bases.
    v, v_bar : ndarray, shape (r, n)
        :math:`V^s` and the broadcast :math:`\\bar V^s`.
    outputs : list of LocalRoundResult
        The clients' local rounds of the last round.
    history : list of dict
        Per round: ``residual`` (:math:`R_V + R_U`) and ``objective``.
    """

    def __init__(
        self,
        views: list[Any],
        params: SONMFOptions,
        num_clusters: int,
        seed: int = 0,
        observed: np.ndarray | None = None,
    ) -> None:
        self.xs = [x.T for x in views]
        self.options = params
        self.params = params.steps
        self.num_clusters = num_clusters
        self.seed = seed
        self.rank = r = resolve_rank(params, num_clusters, [x.shape[1] for x in views])
        self.cluster_read = resolve_cluster_columns(params, [is_sparse_nonnegative(x) for x in views])
        self.us = [
            random_feasible_basis(x.shape[0], r, rng_for(seed, Stream.CLIENT_INIT, p))
            for p, x in enumerate(self.xs)
        ]
        self.v_prev: list[np.ndarray | None] = [None] * len(self.xs)
        self.grad_prev: list[np.ndarray | None] = [None] * len(self.xs)
        n = self.xs[0].shape[1]
        self.v_bar = np.abs(rng_for(seed, Stream.SERVER_INIT).standard_normal((r, n)))
        self.v = prox_l21_nonneg(self.v_bar, self.params.effective_lr * self.params.mu)
        self.outputs: list[LocalRoundResult] = []
        self.history: list[dict[str, Any]] = []

    def round(self) -> dict[str, Any]:
        """Every client's local round from :math:`\\bar V^s`, then the server step.

        Returns
        -------
        dict
            ``residual`` and ``objective`` of the round (at :math:`V^s`).
        """
        outs, diags = [], []
        for p, x in enumerate(self.xs):
            out = local_round(x, self.us[p], self.v_bar, self.params, self.v_prev[p], self.grad_prev[p])
            diags.append(client_diagnostics(x, self.us[p], out.u, out.v))
            self.us[p], self.v_prev[p], self.grad_prev[p] = out.u, out.v, out.grad_avg
            outs.append(out)
        v_bar_next, v_next = server_step(self.v, [o.v_hat for o in outs], self.params)
        r_v = residual_v(v_bar_next, v_next, np.mean([d.grad for d in diags], 0), self.params.effective_lr)
        r_u = float(np.mean([d.basis_residual for d in diags]))
        objective = float(np.mean([d.loss for d in diags])) + regulariser(self.v, self.params.mu)
        record = {"residual": r_v + r_u, "objective": objective}
        self.history.append(record)
        self.v, self.v_bar = v_next, v_bar_next
        self.outputs = outs
        return record

    def labels(self) -> np.ndarray:
        """k-means on the columns of :math:`V`, as the Strategy's final clustering.

        Returns
        -------
        ndarray of int, shape (n,)
        """
        rng = rng_for(self.seed, Stream.FINAL_CLUSTERING)
        return cluster_columns(self.v, self.num_clusters, self.cluster_read, rng)


#: The family's reference federation (the interface of every family's ``REFERENCE``).
REFERENCE = SONMFReference


def synthetic_views(m: int = 5, h: float = 0.0, seed: int = 0, **kw: Any) -> list[SyntheticView]:
    """Paper A's synthetic views ``p = 0..m-1`` with heterogeneity ``h`` (``kw``: the spec's other
    fields, :class:`~fedmf_app.data.synthetic.SyntheticSpec`)."""
    spec = SyntheticSpec(heterogeneity=h, seed=seed, **kw)
    return [make_synthetic_view(spec, p) for p in range(m)]
