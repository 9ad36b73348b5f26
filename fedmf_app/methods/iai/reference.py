"""FMVC-IAI in one process, no Flower: the clients' and the server's kernels called in the order, and
with the seeds, that the NumPyClient and the Strategy use. Tests check the adapters against it;
``simulations/iai/bench.py`` times it. :data:`REFERENCE` keeps the interface of
:class:`~fedmf_app.common.federation_reference.FederationReference`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.common.summation import add_up
from fedmf_app.methods.iai.client_updates import ClientUpload, client_round, client_seed, client_setup
from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.methods.iai.server_updates import ServerState, server_round, server_setup

__all__ = ["REFERENCE", "IAIReference"]


class IAIReference:
    """An in-process FMVC-IAI federation.

    Parameters
    ----------
    views : list of ndarray, each (n, d_m)
        The clients' views as loaded (unobserved rows are never read).
    params : IAIParams
    num_clusters : int
        K: the one ``params`` were built for (:func:`~fedmf_app.methods.iai.params.iai_params`).
    seed : int
        Run config ``seed``.
    observed : ndarray of bool, shape (n, m), optional
        The run's missing-view mask (``None``: every view observes every row).

    Attributes
    ----------
    state : ServerState or None
        The latest broadcast (A_g, Y, P, anchors); ``None`` before the first :meth:`round`.
    history : list of dict
        Per round (round 1 is the set-up round): ``phase`` and ``components`` (of A_g).
    weights : ndarray of shape (m,) or None
        The last fusion weights.
    info : dict
        The server's note on the last training round (``assignment`` with ``rank-spectral``).
    uploads : list of ClientUpload
        The clients' uploads of the last training round (losses, EMD), empty before one.
    """

    def __init__(
        self,
        views: list[np.ndarray],
        params: IAIParams,
        num_clusters: int,
        seed: int = 0,
        observed: np.ndarray | None = None,
    ) -> None:
        if observed is None:
            observed = np.ones((views[0].shape[0], len(views)), dtype=bool)
        if params.num_clusters != num_clusters:
            raise ValueError(
                f"num_clusters = {num_clusters}, but params were built for {params.num_clusters} "
                "(iai_params sizes the graphs from K)"
            )
        self.views, self.observed, self.params, self.seed = views, observed, params, seed
        self.seeds = [client_seed(seed, p) for p in range(len(views))]
        self.ae_states: list[dict[str, np.ndarray]] = []
        self.gae_states: list[dict[str, np.ndarray] | None] = [None] * len(views)
        self.setup_lists: list[np.ndarray | None] = []
        self.state: ServerState | None = None
        self.weights: np.ndarray | None = None
        self.info: dict[str, str] = {}
        self.uploads: list[ClientUpload] = []
        self.history: list[dict[str, Any]] = []

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
        """The next training round of client ``p`` on the current broadcast.

        Returns
        -------
        ClientUpload
        """
        assert self.state is not None, "run the set-up round first"
        s = len(self.history) + 1
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

    def round(self, timed: Callable[[Callable[[], object]], object] = lambda f: f()) -> dict[str, Any]:
        """The next round: the set-up round first, then training rounds; every client, then the server.

        Parameters
        ----------
        timed : callable, optional
            Wraps each client's work (a benchmark passes a timer).

        Returns
        -------
        dict
            ``phase`` (``"setup"`` or ``"train"``) and ``components`` (of the new A_g).
        """
        if self.state is None:
            graphs = [timed(lambda p=p: self.client_setup(p)) for p in range(len(self.views))]
            self.state = server_setup(graphs, self.params, rng_for(self.seed, Stream.IAI_SERVER), self.seed)
            phase = "setup"
        else:
            self._train(timed)
            phase = "train"
        record = {"phase": phase, "components": self.state.components}
        self.history.append(record)
        return record

    def _train(self, timed: Callable[[Callable[[], object]], object]) -> None:
        """A training round: every client, then the server's aggregation."""
        assert self.state is not None
        uploads = [timed(lambda p=p: self.client_round(p)) for p in range(len(self.views))]
        self.gae_states = [u.gae_state for u in uploads]
        self.uploads = uploads
        emd = None if self.state.target is None else [u.emd for u in uploads]
        anchor_graphs = [(u.anchor_indices, u.anchor_values) for u in uploads]
        self.state, self.weights, self.info = server_round(
            self.state,
            add_up([u.distances for u in uploads]),
            anchor_graphs if self.params.uses_anchor_graphs else None,
            [u.code_neighbours for u in uploads] if self.params.graph_update == "rank" else None,
            emd,
            self.params,
            self.seed + len(self.history) + 1,
        )

    def labels(self) -> np.ndarray:
        """The last pseudo-labels Y (Y⁰ after the set-up round): the method's output.

        Returns
        -------
        ndarray of int, shape (n,)
        """
        assert self.state is not None, "run a round first"
        return self.state.labels


#: The family's reference federation (the interface of every family's ``REFERENCE``).
REFERENCE = IAIReference
