"""FMVC-IMK in one process: the same kernels in the same order as the Flower strategy and clients.

Used by the tests (the Flower run must give the same numbers) and by the benchmark;
:data:`REFERENCE` keeps the interface of
:class:`~fedmf_app.common.federation_reference.FederationReference`. Every
client's randomness comes from its own seeded stream, as in the Flower clients
(:func:`~fedmf_app.methods.imk.model.client_rng`), the server's from
:func:`~fedmf_app.methods.imk.model.server_rng`, and the shared anchor samples from
:func:`~fedmf_app.methods.imk.model.anchor_indices`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fedmf_app.common.graphs import laplacian
from fedmf_app.common.summation import add_up, add_up_scalars
from fedmf_app.methods.imk.client_updates import (
    ClientState,
    client_round,
    init_client,
    resolve_start,
    view_anchor_graph,
    view_knn_graph,
)
from fedmf_app.methods.imk.model import (
    anchor_indices,
    client_rng,
    label_rng,
    multiplier_step,
    relaxed,
    server_rng,
)
from fedmf_app.methods.imk.params import IMKOptions, resolve_graph
from fedmf_app.methods.imk.server_updates import (
    AnchorLaplacian,
    consensus_gap,
    extract_labels,
    initial_global_h,
    make_solver,
    normalised_laplacian_sum,
    objective,
)

__all__ = ["REFERENCE", "IMKReference", "graph_laplacian", "sum_laplacians"]


class IMKReference:
    """All clients and the server in one process (the graphs are summed in the clear).

    Parameters
    ----------
    views : list of ndarray or csr_matrix, each shape (N, d_m)
        Preprocessed views.
    params : IMKOptions
        The run's ``imk.*`` parameters (:func:`~fedmf_app.methods.imk.params.imk_options`); the
        steps are ``params.steps``.
    num_clusters : int
        Clusters ``k``.
    seed : int
        The run's seed (initial ``H^{(m)}``, ``H``, the shared anchors).
    observed : ndarray of bool, shape (N, M), optional
        The rows each view's graph links (run config ``imk.missing-graph = "observed"``: the
        run's missing-view mask); ``None``: every row (``"filled"``). The views themselves are
        given complete (missing rows already filled).

    Attributes
    ----------
    h : ndarray, shape (N, k)
        Global ``H``.
    starts : list of {"kmeans", "spectral"}
        The start each client took (what its set-up reply names; the stop rule reads them).
    states : list of ClientState
    history : list of dict
        Per round: the :func:`~fedmf_app.methods.imk.client_updates.objective` parts.
    """

    def __init__(
        self,
        views: list[np.ndarray],
        params: IMKOptions,
        num_clusters: int,
        seed: int = 0,
        observed: np.ndarray | None = None,
    ) -> None:
        self.views = views
        self.options = params
        self.seed = seed
        self.params = steps = params.steps
        m, k = len(views), num_clusters
        self.starts = [resolve_start(params.start, x) for x in views]
        self.states: list[ClientState] = [
            init_client(x, k, k, m, params.client_init, steps, client_rng(seed, i), start)
            for i, (x, start) in enumerate(zip(views, self.starts))
        ]
        self.laplacian = graph_laplacian(views, params, seed, observed)
        self.solver = make_solver(self.laplacian, m, steps, params.server_solver)
        self.rng = server_rng(seed)
        self.h = initial_global_h([s.h for s in self.states], params.server_init, self.rng)
        self.phi_sum = np.zeros_like(self.h)
        self.h_sum: np.ndarray | None = None
        self.history: list[dict[str, float]] = []

    def round(self) -> dict[str, float]:
        """One round: every client, then the server (20) from the sums, as the strategy reads them
        (added up in client order); returns the round's objective parts."""
        first = not self.history
        m = len(self.views)
        stats = []
        for i, x in enumerate(self.views):
            self.states[i], st = client_round(x, self.states[i], self.h, self.params, first)
            stats.append(st)
        if not first:
            self.phi_sum = multiplier_step(self.phi_sum, self.h_sum, m * self.h, self.params.rho)
        h_sum = add_up([s.h for s in self.states])
        self.h_sum = relaxed(h_sum, m * self.h, self.params.relaxation)
        self.h = self.solver.update(self.phi_sum, self.h_sum, self.h)
        residual_sum = add_up_scalars([s.residual for s in stats])
        ortho_sum = add_up_scalars([s.ortho for s in stats])
        record = objective(residual_sum, ortho_sum, self.h, self.laplacian, self.params)
        h_squared_norm_sum = add_up_scalars([np.sum(s.h**2) for s in self.states])
        record["consensus"] = consensus_gap(h_squared_norm_sum, h_sum, self.h, m)
        self.history.append(record)
        return record

    def labels(self) -> np.ndarray:
        """Labels of the global ``H`` after the rounds done (the ``imk.labels`` rule, the Strategy's
        random stream of that round).

        Returns
        -------
        ndarray of int, shape (N,)
        """
        return extract_labels(self.h, self.options.labels, label_rng(self.seed, len(self.history)))


#: The family's reference federation (the interface of every family's ``REFERENCE``).
REFERENCE = IMKReference


def graph_laplacian(
    views: list, options: IMKOptions, seed: int, observed: np.ndarray | None = None
) -> sp.csr_matrix | AnchorLaplacian:
    """:math:`\\tilde L` of the graph term from the views, summed in the clear (reference only).

    Parameters
    ----------
    views : list of ndarray or csr_matrix, each shape (N, d_m)
    options : IMKOptions
        ``graph``, ``neighbours``, ``anchors``, ``similarity``.
    seed : int
        The run's seed (the shared anchors).
    observed : ndarray of bool, shape (N, M), optional
        Column ``m``: the rows view ``m``'s graph links (``None``: every row); see
        :func:`~fedmf_app.methods.imk.client_updates.view_knn_graph` and
        :func:`~fedmf_app.methods.imk.client_updates.view_anchor_graph`.

    Returns
    -------
    csr_matrix or AnchorLaplacian, shape (N, N)
        ``knn``: :math:`\\sum_m L^{(m)}/(Mp)`; ``anchor``: the Laplacian of :math:`\\sum_m Z^{(m)}/M`
        (the masked sum of the Flower run agrees within its fixed point, :math:`M 2^{-f}` per entry).
    """
    m = len(views)
    rows = [None if observed is None else observed[:, i] for i in range(m)]
    if resolve_graph(options.graph, views[0].shape[0]) == "knn":
        similarities = [
            view_knn_graph(x, options.neighbours, options.similarity, r) for x, r in zip(views, rows)
        ]
        return normalised_laplacian_sum(sum_laplacians(similarities), m, options.neighbours)
    anchors = anchor_indices(seed, views[0].shape[0], options.anchors)
    graphs = [view_anchor_graph(x, anchors, options.neighbours, r) for x, r in zip(views, rows)]
    return AnchorLaplacian(sum(graphs[1:], graphs[0]) / m)


def sum_laplacians(similarities: list[sp.spmatrix]) -> sp.csr_matrix:
    """:math:`\\sum_m L^{(m)} = \\mathrm{laplacian}(\\sum_m S^{(m)})` in the clear (reference only)."""
    return laplacian(sum(similarities[1:], similarities[0]))
