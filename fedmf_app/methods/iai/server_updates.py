"""The FMVC-IAI server's work: arrays in, arrays out, no Flower, no torch.

After round 1 (:func:`server_setup`) the server merges the clients' kNN graphs into A_g⁰, draws
the shared anchor indices and computes Y⁰ by spectral clustering of A_g⁰; there is no P yet.
After every training round (:func:`server_round`) it computes the global assignment: with
``pseudo_labels = "anchor-kmeans"`` ([A], the default) k-means on the landmark-MDS coordinates of
D = Σ_m D^(m), the summed squared distances to the shared anchors
(:mod:`~fedmf_app.methods.iai.global_assignment`), and P from the k-means centres; with
``"anchor-spectral"`` ([A]) Y by spectral clustering of the fused anchor graph and P from the same
coordinates; otherwise
E = Σ_m E^(m), the Student's-t assignment Q̄ and the target P and the pseudo-labels Y
(argmin of E or spectral clustering of A_g). Y is aligned to the previous round; then the fused
anchor graph G = Σ_m w^(m) G^(m) with weights decreasing in EMD_m, and A_g = kNN(G)
searched within anchor lists (:func:`~fedmf_app.methods.iai.sample_graphs.anchor_knn`), with
``graph_update = "fused-start"`` ([A]) joined with the start graph A_g⁰.
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
from fedmf_app.methods.iai.global_assignment import (
    anchor_kmeans,
    anchor_spectral_labels,
    coordinate_target,
    landmark_mds,
)
from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.methods.iai.sample_graphs import anchor_knn, anchor_matrix, start_graph

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
    start_neighbours : ndarray of int32, shape (n, k), or None
        A_g⁰, kept for ``graph_update = "fused-start"``.
    """

    neighbours: np.ndarray
    labels: np.ndarray
    target: np.ndarray | None
    anchors: np.ndarray
    components: int
    start_neighbours: np.ndarray | None = None


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
    labels = spectral_labels(graph, params.num_clusters, seed)
    anchors = np.sort(rng.choice(n, size=params.anchors, replace=False)).astype(np.int64)
    return ServerState(
        neighbours, labels, start_target(labels, params), anchors, num_components(graph), neighbours
    )


#: Weight of Y⁰'s one-hot rows in ``start_target = "start-labels"`` (the rest spread uniformly).
START_CONFIDENCE = 0.9


def start_target(labels: np.ndarray, params: IAIParams) -> np.ndarray | None:
    """P⁰, the target of the first training round ([A] ``iai.start-target``).

    Parameters
    ----------
    labels : ndarray of int, shape (n,)
        Y⁰.
    params : IAIParams

    Returns
    -------
    ndarray, shape (n, K), or None
        ``None`` for ``start_target = "none"`` (round 1 trains with alpha = 0); for
        ``"start-labels"``, ``0.9 one-hot(Y⁰) + 0.1 / K`` (rows sum to one).
    """
    if params.start_target == "none":
        return None
    k = params.num_clusters
    target = np.full((labels.size, k), (1.0 - START_CONFIDENCE) / k)
    target[np.arange(labels.size), labels] += START_CONFIDENCE
    return target


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
    distances : list of ndarray, each (n, K), or (n, r) for ``anchor-kmeans`` / ``anchor-spectral``
        E^(m), or D^(m) (only their sum is used: a list of one sum gives the same result).
    anchor_graphs : list of (indices (n, s), values (n, s))
        G^(m), row-sparse.
    emd : list of float or None
        EMD_m; ``None`` (no P yet) gives uniform weights.
    params : IAIParams
    seed : int
        Seed of the spectral pseudo-labels or of the k-means restarts.

    Returns
    -------
    new_state : ServerState
    weights : ndarray, shape (m,)
        Fusion weights w^(m).
    """
    n, k = distances[0].shape[0], params.num_clusters
    total = np.sum(distances, axis=0)
    rule = params.fusion if emd is not None else "uniform"
    weights = fusion_weights(
        np.asarray(emd if emd is not None else [0.0] * len(anchor_graphs)), rule, params.fusion_temperature
    )
    fused = fuse([anchor_matrix(i, v, params.anchors) for i, v in anchor_graphs], weights)
    if params.pseudo_labels == "anchor-kmeans":
        labels, target = anchor_kmeans(total, state.anchors, k, np.random.default_rng(seed), params.mds_dim)
    elif params.pseudo_labels == "anchor-spectral":
        labels = anchor_spectral_labels(fused, k, np.random.default_rng(seed))
        target = coordinate_target(landmark_mds(total, state.anchors, params.mds_dim), labels, k)
    else:
        q = student_t(total)
        target = target_distribution(q)
    neighbours = anchor_knn(fused, params.knn, params.knn_probes).astype(np.int32)
    if params.graph_update == "fused-start" and state.start_neighbours is not None:
        neighbours = np.hstack([neighbours, state.start_neighbours]).astype(np.int32)
    graph = adjacency(neighbours, n)
    if params.pseudo_labels == "spectral":
        labels = spectral_labels(graph, k, seed)
    elif params.pseudo_labels == "prototype-argmin":  # one k-means assignment step
        labels = q.argmax(axis=1).astype(np.int64)
    mapping = label_alignment(labels, state.labels, k)
    if params.pseudo_labels != "spectral":
        # P's columns are Y's clusters: rename them with Y
        renamed = np.empty_like(target)
        renamed[:, mapping] = target
        target = renamed
    labels = mapping[labels]
    components = num_components(graph)
    new = ServerState(neighbours, labels, target, state.anchors, components, state.start_neighbours)
    return new, weights
