"""The FMVC-IAI server's work: arrays in, arrays out, no Flower, no torch.

After round 1 (:func:`server_setup`) the server merges the clients' kNN graphs into A_g⁰, draws
the shared anchor indices and computes Y⁰ by spectral clustering of A_g⁰; there is no P yet.
After every training round (:func:`server_round`) it computes E = Σ_m E^(m), the Student's-t
assignment Q̄ and the target P, the pseudo-labels Y (aligned to the previous round), the fused
anchor graph G = Σ_m w^(m) G^(m) with weights decreasing in EMD_m, and A_g = kNN(G)
(:func:`~fedmf_app.methods.iai.sample_graphs.global_knn`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmf_app.common.graphs import adjacency, num_components
from fedmf_app.methods.iai.deep_clustering import (
    fuse,
    fusion_weights,
    label_alignment,
    spectral_labels,
    student_t,
    target_distribution,
)
from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.methods.iai.sample_graphs import anchor_matrix, global_knn, start_graph

__all__ = ["ServerState", "server_round", "server_setup"]


@dataclass(frozen=True)
class ServerState:
    """What the server broadcasts and keeps.

    Attributes
    ----------
    neighbours : ndarray of int32, shape (n, k)
        Global graph A_g as neighbour indices (``-1`` padded).
    labels : ndarray of int64, shape (n,)
        Pseudo-labels Y.
    target : ndarray, shape (n, K), or None
        P (``None`` before the first training round).
    anchors : ndarray of int64, shape (r,)
        Shared anchor indices.
    components : int
        Connected components of A_g (a guard: many more than K signals a broken graph).
    """

    neighbours: np.ndarray
    labels: np.ndarray
    target: np.ndarray | None
    anchors: np.ndarray
    components: int


def server_setup(
    client_graphs: list[np.ndarray], params: IAIParams, rng: np.random.Generator, seed: int
) -> ServerState:
    """A_g⁰ from the clients' kNN graphs, Y⁰ by spectral clustering, shared anchors.

    Parameters
    ----------
    client_graphs : list of ndarray of int, each (n, k)
    params : IAIParams
    rng : numpy.random.Generator
        Draws the anchor indices.
    seed : int
        Seed of the spectral clustering.

    Returns
    -------
    ServerState

    Raises
    ------
    ValueError
        When the data have fewer samples than anchors + 1.
    """
    n = client_graphs[0].shape[0]
    if params.anchors > n or params.anchors < params.anchor_neighbours + 1:
        raise ValueError(
            f"iai-anchors = {params.anchors} is invalid for n = {n} samples and iai-anchor-"
            f"neighbours = {params.anchor_neighbours}: need s + 1 <= r <= n"
        )
    neighbours = start_graph(client_graphs, params.knn, params.start_graph).astype(np.int32)
    graph = adjacency(neighbours, n)
    labels = spectral_labels(graph, params.num_clusters, seed, params.spectral_solver)
    anchors = np.sort(rng.choice(n, size=params.anchors, replace=False)).astype(np.int64)
    return ServerState(neighbours, labels, None, anchors, num_components(graph))


def server_round(
    state: ServerState,
    distances: list[np.ndarray],
    anchor_graphs: list[tuple[np.ndarray, np.ndarray]],
    emd: list[float] | None,
    params: IAIParams,
    seed: int,
) -> tuple[ServerState, np.ndarray]:
    """Aggregate one training round (paper C's (10)-(13)).

    Parameters
    ----------
    state : ServerState
        State broadcast this round (its labels are the previous Y).
    distances : list of ndarray, each (n, K)
        E^(m) (only their sum is used: a list of one sum gives the same result).
    anchor_graphs : list of (indices (n, s), values (n, s))
        G^(m), row-sparse.
    emd : list of float or None
        EMD_m; ``None`` (no P yet) gives uniform weights.
    params : IAIParams
    seed : int
        Seed of spectral pseudo-labels.

    Returns
    -------
    new_state : ServerState
    weights : ndarray, shape (m,)
        Fusion weights w^(m).
    """
    n, k = distances[0].shape
    q = student_t(np.sum(distances, axis=0))
    target = target_distribution(q)
    rule = params.fusion if emd is not None else "uniform"
    weights = fusion_weights(
        np.asarray(emd if emd is not None else [0.0] * len(anchor_graphs)), rule, params.fusion_temperature
    )
    fused = fuse([anchor_matrix(i, v, params.anchors) for i, v in anchor_graphs], weights)
    neighbours = global_knn(fused, params.knn, params.global_knn, params.knn_probes).astype(np.int32)
    graph = adjacency(neighbours, n)
    if params.pseudo_labels == "spectral":
        labels = spectral_labels(graph, k, seed, params.spectral_solver)
    else:  # the k-means assignment step on the federated prototype distances
        labels = q.argmax(axis=1).astype(np.int64)
    mapping = label_alignment(labels, state.labels, k)
    if params.pseudo_labels == "prototype-argmin":
        # P's columns are Y's clusters: rename them with Y
        renamed = np.empty_like(target)
        renamed[:, mapping] = target
        target = renamed
    labels = mapping[labels]
    return ServerState(neighbours, labels, target, state.anchors, num_components(graph)), weights
