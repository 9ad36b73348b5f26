"""FMVC-IAI in one process, no Flower: the clients' and the server's kernels called in the order, and
with the seeds, that the NumPyClient and the Strategy use. Tests check the adapters against it;
``simulations/iai/bench.py`` times it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.methods.iai.client_updates import ClientUpload, client_round, client_seed, client_setup
from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.methods.iai.server_updates import ServerState, server_round, server_setup

__all__ = ["IAIReference"]


class IAIReference:
    """An in-process FMVC-IAI federation.

    Parameters
    ----------
    views : list of ndarray, each (n, d_m)
        The clients' views as loaded (unobserved rows are never read).
    observed : ndarray of bool, shape (n, m)
        The run's missing-view mask.
    params : IAIParams
    seed : int
        Run config ``seed``.

    Attributes
    ----------
    state : ServerState or None
        The latest broadcast (A_g, Y, P, anchors); ``None`` before :meth:`setup`.
    round : int
        Rounds done (round 1 is the set-up round).
    weights : ndarray of shape (m,) or None
        The last fusion weights.
    info : dict
        The server's note on the last training round (``assignment`` with ``rank-spectral``).
    uploads : list of ClientUpload
        The clients' uploads of the last training round (losses, EMD), empty before one.
    """

    def __init__(self, views: list[np.ndarray], observed: np.ndarray, params: IAIParams, seed: int) -> None:
        self.views, self.observed, self.params, self.seed = views, observed, params, seed
        self.seeds = [client_seed(seed, p) for p in range(len(views))]
        self.ae_states: list[dict[str, np.ndarray]] = []
        self.gae_states: list[dict[str, np.ndarray] | None] = [None] * len(views)
        self.setup_lists: list[np.ndarray | None] = []
        self.state: ServerState | None = None
        self.weights: np.ndarray | None = None
        self.info: dict[str, str] = {}
        self.uploads: list[ClientUpload] = []
        self.round = 0

    def client_setup(self, p: int) -> np.ndarray:
        """Round 1 of client ``p``: its kNN graph (its autoencoder is kept here).

        Returns
        -------
        ndarray of int, shape (n, k)
        """
        neighbours, ae_state = client_setup(self.views[p], self.observed[:, p], self.params, self.seeds[p])
        self.ae_states.append(ae_state)
        self.setup_lists.append(neighbours if self.params.keeps_setup_lists else None)
        return neighbours

    def client_round(self, p: int) -> ClientUpload:
        """Training round ``self.round + 1`` of client ``p`` on the current broadcast.

        Returns
        -------
        ClientUpload
        """
        assert self.state is not None, "call setup() first"
        s = self.round + 1
        st = self.state
        upload = client_round(
            self.views[p],
            self.observed[:, p],
            self.ae_states[p],
            self.gae_states[p],
            st.neighbours,
            st.labels,
            st.target,
            st.anchors,
            self.params,
            self.seeds[p] + s,
            self.setup_lists[p],
        )
        return upload

    def setup(self, timed: Callable[[Callable[[], object]], object] = lambda f: f()) -> ServerState:
        """Round 1: every client's set-up, then the server's.

        Parameters
        ----------
        timed : callable, optional
            Wraps each client's work (a benchmark passes a timer).

        Returns
        -------
        ServerState
        """
        graphs = [timed(lambda p=p: self.client_setup(p)) for p in range(len(self.views))]
        self.state = server_setup(graphs, self.params, rng_for(self.seed, Stream.IAI_SERVER), self.seed)
        self.round = 1
        return self.state

    def train_round(self, timed: Callable[[Callable[[], object]], object] = lambda f: f()) -> ServerState:
        """One training round: every client, then the server's aggregation.

        Parameters
        ----------
        timed : callable, optional
            Wraps each client's work.

        Returns
        -------
        ServerState
        """
        assert self.state is not None, "call setup() first"
        uploads = [timed(lambda p=p: self.client_round(p)) for p in range(len(self.views))]
        self.gae_states = [u.gae_state for u in uploads]
        self.uploads = uploads
        emd = None if self.state.target is None else [u.emd for u in uploads]
        self.round += 1
        anchor_graphs = [(u.anchor_indices, u.anchor_values) for u in uploads]
        self.state, self.weights, self.info = server_round(
            self.state,
            [u.distances for u in uploads],
            anchor_graphs if self.params.uses_anchor_graphs else None,
            [u.code_neighbours for u in uploads] if self.params.graph_update == "rank" else None,
            emd,
            self.params,
            self.seed + self.round,
        )
        return self.state
