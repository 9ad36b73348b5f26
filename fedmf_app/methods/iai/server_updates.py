"""The FMVC-IAI server's work: arrays in, arrays out, no Flower, no torch.

After round 1 (:func:`server_setup`) the server merges the clients' neighbour lists into A_g⁰
(by default their rank fusion, :mod:`~fedmf_app.methods.iai.rank_fusion`), draws the shared anchor
indices and computes Y⁰ by spectral clustering of A_g⁰; there is no P yet.

After every training round (:func:`server_round`) it weighs the views by their EMD_m (fusion
weights w^(m)) and builds the new A_g: with ``graph_update = "rank"`` ([A], the default) the
weighted rank fusion of the views' neighbour lists of their imputed codes; with ``"fused"`` (paper
C) the kNN graph of the fused anchor graph G = Σ_m w^(m) G^(m), searched within anchor lists
(:func:`~fedmf_app.methods.iai.sample_graphs.anchor_knn`), with ``"fused-start"`` ([A]) joined
with A_g⁰. Then the global assignment (:mod:`~fedmf_app.methods.iai.global_assignment`), from
D = Σ_m D^(m), the summed squared distances to the shared anchors, placed by landmark MDS:
``pseudo_labels = "rank-spectral"`` ([A], the default) the most modular on A_g of the previous Y
and the spectral clusterings of A_g with and without the embedding's vote; ``"anchor-kmeans"``
([A]) k-means on the coordinates; ``"anchor-spectral"`` ([A]) spectral clustering of G; P from
the coordinates. Otherwise E = Σ_m E^(m), the Student's-t assignment Q̄, the target P and the
pseudo-labels Y (argmin of E or spectral clustering of A_g). Y is aligned to the previous round.
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
    rank_spectral_labels,
)
from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.methods.iai.rank_fusion import rank_fusion
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
    """P⁰, the target of the first training round ([A] ``IAIParams.start_target``).

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
    distance_sum: np.ndarray,
    anchor_graphs: list[tuple[np.ndarray, np.ndarray]] | None,
    code_lists: list[np.ndarray] | None,
    emd: list[float] | None,
    params: IAIParams,
    seed: int,
) -> tuple[ServerState, np.ndarray, dict[str, str]]:
    """Aggregate one training round (paper C's (10)-(13)).

    Parameters
    ----------
    state : ServerState
        State broadcast this round (its labels are the previous Y).
    distance_sum : ndarray, shape (n, K), or (n, r) for the anchor-distance rules
        The sum over the clients of E^(m), or of D^(m) (all the server needs of them).
    anchor_graphs : list of (indices (n, s), values (n, s)), or None
        G^(m), row-sparse (``None`` when ``params.uses_anchor_graphs`` is false).
    code_lists : list of ndarray of int, each (n, L), or None
        Each view's neighbour list of its imputed codes (``graph_update = "rank"``; else ``None``).
    emd : list of float or None
        EMD_m; ``None`` (no P yet) gives uniform weights.
    params : IAIParams
    seed : int
        Seed of the spectral pseudo-labels or of the k-means restarts.

    Returns
    -------
    new_state : ServerState
    weights : ndarray, shape (m,)
        Fusion weights w^(m) (of the anchor graphs, or of the views' votes).
    info : dict
        ``{"assignment": candidate}`` with ``rank-spectral``
        (:data:`~fedmf_app.methods.iai.global_assignment.RANK_SPECTRAL_CANDIDATES`), else empty.
    """
    n, k = distance_sum.shape[0], params.num_clusters
    rule = params.fusion if emd is not None else "uniform"
    views = code_lists if code_lists is not None else anchor_graphs
    assert views is not None, "a training round needs the views' neighbour lists or anchor graphs"
    emd_values = np.asarray(emd if emd is not None else [0.0] * len(views))
    weights = fusion_weights(emd_values, rule, params.fusion_temperature)
    fused = None
    if anchor_graphs is not None:
        fused = fuse([anchor_matrix(i, v, params.anchors) for i, v in anchor_graphs], weights)
    votes = weights * len(weights)  # mean 1
    info: dict[str, str] = {}
    if params.graph_update == "rank":
        assert code_lists is not None, "graph_update = 'rank' needs the views' neighbour lists"
        neighbours = rank_fusion(code_lists, params.knn, votes).astype(np.int32)
    else:
        assert fused is not None, f"graph_update = {params.graph_update!r} needs the anchor graphs"
        neighbours = anchor_knn(fused, params.knn, params.knn_probes).astype(np.int32)
        if params.graph_update == "fused-start" and state.start_neighbours is not None:
            neighbours = np.hstack([neighbours, state.start_neighbours]).astype(np.int32)
    graph = adjacency(neighbours, n)
    if params.pseudo_labels == "rank-spectral":
        assert code_lists is not None, "pseudo_labels = 'rank-spectral' needs the views' neighbour lists"
        coords = landmark_mds(distance_sum, state.anchors, params.mds_dim)
        labels, info["assignment"] = rank_spectral_labels(
            graph, code_lists, votes, coords, state.labels, k, params.knn, seed, params.exact_search_rows
        )
        target = coordinate_target(coords, labels, k)
    elif params.pseudo_labels == "anchor-kmeans":
        rng = np.random.default_rng(seed)
        labels, target = anchor_kmeans(distance_sum, state.anchors, k, rng, params.mds_dim)
    elif params.pseudo_labels == "anchor-spectral":
        labels = anchor_spectral_labels(fused, k, np.random.default_rng(seed))
        target = coordinate_target(landmark_mds(distance_sum, state.anchors, params.mds_dim), labels, k)
    else:
        q = student_t(distance_sum)
        target = target_distribution(q)
        if params.pseudo_labels == "spectral":
            labels = spectral_labels(graph, k, seed)
        else:  # prototype-argmin: one k-means assignment step
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
    return new, weights, info
