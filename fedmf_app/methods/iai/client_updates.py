"""One FMVC-IAI client's work per round: arrays in, arrays out, no Flower.

Round 1 (:func:`client_setup`): scale the view, pre-train the autoencoder on the observed rows,
and rank the nearest observed rows of every observed row by their codes (uploaded as ``n x L``
indices, nearest first). Rounds >= 2 (:func:`client_round`): codes Z (zero rows where missing) ->
imputation on the global graph -> the neighbour list of every sample by its imputed code (with
``graph_update = "rank"``) -> train the GAT autoencoder with the clustering loss -> anchor or
prototype distances, the anchor graph G^(m) (when the server fuses them) and EMD(P, Q^(m)) to
upload.

The networks' weights are returned as ``{name: ndarray}`` so the Flower client can keep them in
``context.state`` between rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from fedmf_app.common.graphs import adjacency
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.methods.iai.deep_clustering import prototype_distances, prototypes, total_variation_emd
from fedmf_app.methods.iai.feature_propagation import feature_propagation
from fedmf_app.methods.iai.global_assignment import anchor_distances, balance_embedding
from fedmf_app.methods.iai.graph_autoencoder import (
    GAELosses,
    GraphAutoencoder,
    autoencoder,
    encode,
    pretrain_autoencoder,
    seeded,
    soft_assignment,
    train_gae,
)
from fedmf_app.methods.iai.params import ANCHOR_DISTANCE_RULES, IAIParams
from fedmf_app.methods.iai.sample_graphs import anchor_graph, imputed_lists, observed_knn
from fedmf_app.methods.iai.view_scaling import scale_features

__all__ = ["ClientUpload", "client_round", "client_seed", "client_setup", "scale_features"]


@dataclass(frozen=True)
class ClientUpload:
    """What one client sends after a training round.

    Attributes
    ----------
    distances : ndarray, shape (n, K) or (n, r)
        E^(m), the squared distances to the Y-prototypes, or with the anchor-distance rules
        (``rank-spectral``, ``anchor-kmeans``, ``anchor-spectral``) D^(m), the squared distances
        to the anchor samples (both in the embedding balanced by ``params.view_balance``).
    anchor_indices : ndarray of int32, shape (n, s), or None
        Column of each nonzero of the row-sparse anchor graph G^(m) (``None`` unless
        ``params.uses_anchor_graphs``).
    anchor_values : ndarray, shape (n, s), or None
        Its values (rows sum to one).
    code_neighbours : ndarray of int32, shape (n, L), or None
        Every sample's ``L`` nearest samples, nearest first (``graph_update = "rank"``; else
        ``None``): an observed row's among the observed rows, a missing row's among all rows by
        its imputed code (:func:`~fedmf_app.methods.iai.sample_graphs.imputed_lists`).
    emd : float or None
        EMD(P, Q^(m)); ``None`` when there is no P yet.
    losses : GAELosses
        Last-epoch losses (reported as metrics).
    gae_state : dict of ndarray
        Updated network weights (stay on the client).
    """

    distances: np.ndarray
    anchor_indices: np.ndarray | None
    anchor_values: np.ndarray | None
    code_neighbours: np.ndarray | None
    emd: float | None
    losses: GAELosses
    gae_state: dict[str, np.ndarray]


def _to_numpy(state: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy() for k, v in state.items()}


def _to_torch(state: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in state.items()}


def client_seed(seed: int, partition_id: int) -> int:
    """The torch seed of client ``partition_id`` (its round ``s`` uses this + s).

    Parameters
    ----------
    seed : int
        Run config ``seed``.
    partition_id : int

    Returns
    -------
    int
    """
    return int(rng_for(seed, Stream.IAI_CLIENT, partition_id).integers(2**31 - 1))


def client_setup(
    x: np.ndarray | sp.spmatrix, observed: np.ndarray, params: IAIParams, seed: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Round 1: pre-train the autoencoder and rank every observed row's nearest observed rows.

    Parameters
    ----------
    x : ndarray or scipy.sparse matrix, shape (n, d)
        The client's view; only rows with ``observed`` are read. A sparse view is never
        densified as a whole (:mod:`~fedmf_app.methods.iai.view_scaling`).
    observed : ndarray of bool, shape (n,)
    params : IAIParams
    seed : int
        This client's seed.

    Returns
    -------
    neighbours : ndarray of int32, shape (n, L)
        The ``L = params.list_depth`` nearest observed rows of every observed row, nearest first,
        in global indices; ``-1`` on unobserved rows.
    ae_state : dict of ndarray
        Autoencoder weights.
    """
    scaled = scale_features(x, observed, params.feature_scaling)
    rows = np.flatnonzero(observed)
    ae = pretrain_autoencoder(
        scaled[observed] if isinstance(scaled, np.ndarray) else scaled.take(rows),
        params.ae_hidden,
        params.embed_dim,
        params.ae_epochs,
        params.ae_steps,
        params.ae_lr,
        params.ae_batch_size,
        seed,
    )
    z = encode(ae, scaled)
    lists = observed_knn(z, observed, params.list_depth, params.exact_search_rows)
    return lists.astype(np.int32), _to_numpy(ae.state_dict())


def client_codes(
    x: np.ndarray | sp.spmatrix, observed: np.ndarray, ae_state: dict[str, np.ndarray], params: IAIParams
) -> np.ndarray:
    """Codes Z^(m) of the frozen autoencoder, zero rows where the view is missing.

    Parameters
    ----------
    x : ndarray or scipy.sparse matrix, shape (n, d)
    observed : ndarray of bool, shape (n,)
    ae_state : dict of ndarray
    params : IAIParams

    Returns
    -------
    ndarray, shape (n, d_z)
    """
    ae = autoencoder(x.shape[1], params.ae_hidden, params.embed_dim)
    ae.load_state_dict(_to_torch(ae_state))
    z = encode(ae.eval(), scale_features(x, observed, params.feature_scaling))
    z[~observed] = 0.0
    return z


def client_round(
    x: np.ndarray | sp.spmatrix,
    observed: np.ndarray,
    ae_state: dict[str, np.ndarray],
    gae_state: dict[str, np.ndarray] | None,
    neighbours: np.ndarray,
    labels: np.ndarray,
    target: np.ndarray | None,
    anchors: np.ndarray,
    params: IAIParams,
    seed: int,
    setup_lists: np.ndarray | None = None,
) -> ClientUpload:
    """One training round of a client (its steps 1-8, see docs/iai.md).

    Parameters
    ----------
    x : ndarray or scipy.sparse matrix, shape (n, d)
        The client's view (unobserved rows are not read).
    observed : ndarray of bool, shape (n,)
    ae_state : dict of ndarray
        Frozen autoencoder from :func:`client_setup`.
    gae_state : dict of ndarray or None
        Graph autoencoder after the previous round (``None``: a fresh, seeded network).
    neighbours : ndarray of int, shape (n, k)
        Global graph A_g as neighbour indices (symmetrised here).
    labels : ndarray of int, shape (n,)
        Server pseudo-labels Y; the centroids U^(m) are re-initialised to the Y-prototypes of the
        current embedding every round, which keeps Q^(m)'s columns aligned with P.
    target : ndarray, shape (n, K), or None
        Server target P; ``None`` trains without the clustering loss.
    anchors : ndarray of int, shape (r,)
        Shared anchor sample indices.
    params : IAIParams
    seed : int
        Seed of this client and round.
    setup_lists : ndarray of int, shape (n, L), optional
        The client's set-up lists (:func:`client_setup`), kept when ``params.keeps_setup_lists``:
        the observed rows' lists of ``graph_update = "rank"``, not searched again.

    Returns
    -------
    ClientUpload
    """
    device = params.device
    n, k = x.shape[0], params.num_clusters
    z = client_codes(x, observed, ae_state, params)
    graph = adjacency(neighbours, n)
    code_neighbours = None
    if params.imputation == "propagation":
        z = feature_propagation(z, observed, graph, params.fp_iterations)
        if params.graph_update == "rank":
            code_neighbours = imputed_lists(
                z, observed, params.rank_depth, setup_lists, params.exact_search_rows
            ).astype(np.int32)
    elif params.graph_update == "rank":  # no imputation: a missing row casts no vote
        if setup_lists is None:
            setup_lists = observed_knn(z, observed, params.rank_depth, params.exact_search_rows)
        code_neighbours = setup_lists.astype(np.int32)
    coo = graph.tocoo()
    edge_index = np.vstack([coo.row, coo.col]).astype(np.int64)
    with seeded(seed):
        model = GraphAutoencoder(z.shape[1], k, params.gae)
    if gae_state is not None:
        model.load_state_dict(_to_torch(gae_state))
    model = model.to(device)
    xz = torch.as_tensor(z, dtype=torch.float32, device=device)
    graph_arg = model.graph(torch.as_tensor(edge_index, device=device), n)

    def embed() -> torch.Tensor:
        with torch.no_grad():
            return model(xz, graph_arg)

    with torch.no_grad():
        start = embed().double().cpu().numpy()
        model.centroids.copy_(torch.as_tensor(prototypes(start, labels, k), dtype=torch.float32))
    losses = train_gae(model, z, edge_index, target, params.gae, seed, device)
    h_t = embed()
    q = soft_assignment(h_t, model.centroids.detach()).double().cpu().numpy()
    h = balance_embedding(h_t.double().cpu().numpy(), params.view_balance, labels)
    idx = val = None
    if params.uses_anchor_graphs:
        idx, val = anchor_graph(h, h[anchors], params.anchor_neighbours)
        idx = idx.astype(np.int32)
    if params.pseudo_labels in ANCHOR_DISTANCE_RULES:
        distances = anchor_distances(h, anchors)
    else:
        distances = prototype_distances(h, prototypes(h, labels, k))
    return ClientUpload(
        distances=distances,
        anchor_indices=idx,
        anchor_values=val,
        code_neighbours=code_neighbours,
        emd=None if target is None else total_variation_emd(target, q),
        losses=losses,
        gae_state=_to_numpy(model.cpu().state_dict()),
    )
