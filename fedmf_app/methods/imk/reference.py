"""FMVC-IMK in one process: the same kernels in the same order as the Flower strategy and clients.

Used by the tests (the Flower run must give the same numbers) and by the N = 10,000 benchmark.
Every client's randomness comes from its own seeded stream, as in the Flower clients
(:func:`client_rng`), and the server's from :func:`server_rng`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fedmf_app.common.graphs import knn_similarity, laplacian
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.methods.imk.client_updates import (
    ClientState,
    IMKParams,
    client_round,
    init_client,
    multiplier_step,
)
from fedmf_app.methods.imk.server_updates import (
    ServerSolver,
    initial_global_h,
    normalised_laplacian_sum,
    objective,
)

__all__ = ["IMKSettings", "IMKReference", "client_rng", "label_rng", "server_rng"]


def client_rng(seed: int, partition_id: int) -> np.random.Generator:
    """Client ``partition_id``'s random stream (k-means and ``F`` initialisation)."""
    return rng_for(seed, Stream.CLIENT_INIT, partition_id)


def server_rng(seed: int) -> np.random.Generator:
    """The server's random stream for the initial ``H``."""
    return rng_for(seed, Stream.SERVER_INIT, 0)


def label_rng(seed: int, server_round: int) -> np.random.Generator:
    """The stream for extracting labels after ``server_round`` (the final labels: the last round)."""
    return rng_for(seed, Stream.SERVER_INIT, 1 + server_round)


@dataclass(frozen=True)
class IMKSettings:
    """Everything but the steps: sizes, graph and initialisation choices.

    Attributes
    ----------
    k : int
        Clusters.
    latent_dim : int
        ``c`` (0: ``k``).
    neighbours : int
        ``p`` of the kNN graph.
    similarity : {"binary", "heat"}
    client_init : str
        See :func:`~fedmf_app.methods.imk.client_updates.init_client`.
    server_init : str
        See :func:`~fedmf_app.methods.imk.client_updates.initial_global_h`.
    solver : {"cg", "splu"}
    seed : int
    """

    k: int
    latent_dim: int = 0
    neighbours: int = 5
    similarity: str = "binary"
    client_init: str = "normalised-indicator"
    server_init: str = "kmeans-concat"
    solver: str = "cg"
    seed: int = 0


class IMKReference:
    """All clients and the server in one process (the Laplacians are summed in the clear).

    Parameters
    ----------
    views : list of ndarray, each shape (N, d_m)
        Preprocessed views.
    params : IMKParams
    settings : IMKSettings

    Attributes
    ----------
    h : ndarray, shape (N, k)
        Global ``H``.
    states : list of ClientState
    history : list of dict
        Per round: the :func:`~fedmf_app.methods.imk.client_updates.objective` parts.
    """

    def __init__(self, views: list[np.ndarray], params: IMKParams, settings: IMKSettings) -> None:
        self.views = views
        self.params = params
        self.settings = settings
        m = len(views)
        latent = settings.latent_dim or settings.k
        self.states: list[ClientState] = [
            init_client(x, settings.k, latent, m, settings.client_init, params, client_rng(settings.seed, i))
            for i, x in enumerate(views)
        ]
        lsum = sum_laplacians([knn_similarity(x, settings.neighbours, settings.similarity) for x in views])
        self.laplacian = normalised_laplacian_sum(lsum, m, settings.neighbours)
        self.solver = ServerSolver(self.laplacian, m, params, settings.solver)
        self.rng = server_rng(settings.seed)
        self.h = initial_global_h([s.h for s in self.states], settings.server_init, self.rng)
        self.server_phis = [np.zeros_like(self.h) for _ in views]
        self.history: list[dict[str, float]] = []

    def round(self) -> dict[str, float]:
        """One round: every client, then the server (20); returns the round's objective parts."""
        first = not self.history
        h_prev_locals = [s.h for s in self.states]
        stats = []
        for i, x in enumerate(self.views):
            self.states[i], st = client_round(x, self.states[i], self.h, self.params, first)
            stats.append(st)
        if not first:
            self.server_phis = [
                multiplier_step(phi, hl, self.h, self.params.rho)
                for phi, hl in zip(self.server_phis, h_prev_locals)
            ]
        h_locals = [s.h for s in self.states]
        self.h = self.solver.update(self.server_phis, h_locals, self.h)
        record = objective(
            [s.residual for s in stats], [s.ortho for s in stats], self.h, self.laplacian, self.params
        )
        record["consensus"] = float(np.sqrt(sum(np.sum((hl - self.h) ** 2) for hl in h_locals)))
        self.history.append(record)
        return record


def sum_laplacians(similarities: list[sp.spmatrix]) -> sp.csr_matrix:
    """:math:`\\sum_m L^{(m)} = \\mathrm{laplacian}(\\sum_m S^{(m)})` in the clear (reference only)."""
    return laplacian(sum(similarities[1:], similarities[0]))
