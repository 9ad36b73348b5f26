"""The server's global assignment of ``iai.pseudo-labels = "rank-spectral"`` ([A]),
``"anchor-kmeans"`` ([A]) and ``"anchor-spectral"`` ([A]), numpy / scipy / scikit-learn only.

Every client uploads the squared distances from its (balanced) sample embeddings to the embeddings
of the shared anchor samples, ``D^(m)_ij = ||h_i^(m) - h_{a_j}^(m)||²`` (``n x r``). Their sum
``D = Σ_m D^(m)`` is the squared distance in the concatenated embedding space
``[h^(1), ..., h^(M)]``, so it can travel as a masked sum: the server never sees one client's
distances. The server

1. places the anchors by classical MDS of the ``r x r`` block ``D[a, :]`` (double centring,
   the eigenvectors of the positive eigenvalues),
2. places every sample by the landmark (Nyström) extension of de Silva & Tenenbaum (2004),
   ``x_i = ½ Λ^{-1/2} Vᵀ (δ̄ - δ_i)`` with ``δ_i = D[i, :]`` and ``δ̄`` the column means of the anchor
   block, which is exact for points in the affine span of the anchors,
3. clusters the coordinates by k-means with restarts (:func:`fedmf_app.common.clustering.kmeans_labels`,
   seeded by a numpy Generator), and
4. builds the target P from the Student's-t assignment of the coordinates to the k-means centres,
   sharpened as DEC does (:func:`~fedmf_app.methods.iai.deep_clustering.target_distribution`).

With ``anchor-spectral`` the labels are instead the spectral clustering of the fused anchor graph
``G = Σ_m w^(m) G^(m)``, a bipartite sample-anchor graph (:func:`anchor_spectral_labels`), and P
is sharpened from the same MDS coordinates' distances to the means of those labels
(:func:`coordinate_target`).

With ``rank-spectral`` (:func:`rank_spectral_labels`) the labels are the spectral clustering of the
rank-fused global graph A_g, or of the same fusion with one more voter, the kNN list of the MDS
coordinates (the clients' trained embeddings, concatenated), or the previous labels: whichever
partition has the highest modularity on A_g. P is again sharpened from the coordinates.

Also here: the per-view balance of the embeddings (:func:`balance_embedding`) and the adaptive
graph sizes (:func:`adaptive_knn`, :func:`adaptive_anchor_neighbours`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.graphs import adjacency, knn_indices, modularity
from fedmf_app.methods.iai.deep_clustering import (
    prototype_distances,
    prototypes,
    spectral_labels,
    student_t,
    target_distribution,
)
from fedmf_app.methods.iai.rank_fusion import rank_fusion

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "RANK_SPECTRAL_CANDIDATES",
    "VIEW_BALANCES",
    "adaptive_anchor_neighbours",
    "adaptive_knn",
    "anchor_distances",
    "anchor_kmeans",
    "anchor_spectral_embedding",
    "anchor_spectral_labels",
    "balance_embedding",
    "between_share",
    "coordinate_target",
    "landmark_mds",
    "rank_spectral_labels",
]

#: The candidates of :func:`rank_spectral_labels`, in the order that breaks ties.
RANK_SPECTRAL_CANDIDATES = ("previous", "views", "views+embedding")
#: Modularities closer than this are a tie (the same partition, summed in another order).
_MODULARITY_TIE = 1e-9

#: How a client scales its embedding before its distances are summed (:func:`balance_embedding`).
VIEW_BALANCES = ("unit-variance", "consensus", "none")

#: Relative size below which an MDS eigenvalue counts as zero.
_EIG_RTOL = 1e-10


def adaptive_knn(num_samples: int, num_clusters: int) -> int:
    """Neighbours k of the kNN graphs for ``iai.knn = 0`` ([A]).

    ``k = clamp(round(n / (2K)), 5, 20)``: half the mean cluster size, at most paper C's best k = 20
    (reached from 40 samples per cluster, e.g. HW's 200, NoisyMNIST's 1,000), at least 5 (ORL's and
    Yale's 10-11 samples per cluster give 5-6, inside a cluster).

    Parameters
    ----------
    num_samples, num_clusters : int

    Returns
    -------
    int
    """
    return int(np.clip(round(num_samples / (2 * max(num_clusters, 1))), 5, 20))


def adaptive_anchor_neighbours(num_anchors: int, num_clusters: int) -> int:
    """Anchors per sample s of the anchor graph for ``iai.anchor-neighbours = 0`` ([A]).

    ``s = clamp(round(r / (2K)), 3, 10)``: half the anchors a cluster holds on average, at most 10
    (HW's 20 anchors per cluster give 10), at least 3; always ``<= r - 1``.

    Parameters
    ----------
    num_anchors, num_clusters : int

    Returns
    -------
    int
    """
    s = int(np.clip(round(num_anchors / (2 * max(num_clusters, 1))), 3, 10))
    return max(1, min(s, num_anchors - 1))


def balance_embedding(h: np.ndarray, rule: str, labels: np.ndarray | None = None) -> np.ndarray:
    """Scale one view's embedding so that no view dominates the summed distances ([A]).

    Parameters
    ----------
    h : ndarray, shape (n, d)
    rule : {"unit-variance", "consensus", "none"}
        ``unit-variance``: divide by the root of the total variance, so that
        ``mean_i ||h_i - mean(h)||² = 1`` (every view contributes a mean squared distance of 2
        between two samples); ``consensus``: then multiply by ``sqrt(R²)``, with ``R²`` the share
        of that variance between the clusters of ``labels`` (the server's Y), so a view whose
        embedding agrees with the consensus partition weighs more in the summed distances;
        ``none``: unchanged.
    labels : ndarray of int, shape (n,), optional
        The server's pseudo-labels Y (needed by ``consensus``).

    Returns
    -------
    ndarray, shape (n, d)
    """
    if rule == "none":
        return h
    if rule not in VIEW_BALANCES:
        raise ValueError(f"unknown view balance {rule!r}; use one of {VIEW_BALANCES}")
    centred = h - h.mean(axis=0)
    spread = float((centred**2).sum(axis=1).mean())
    if spread <= 0:
        return h
    out = h / np.sqrt(spread)
    if rule == "consensus":
        if labels is None:
            raise ValueError("view balance 'consensus' needs the pseudo-labels")
        out = out * np.sqrt(between_share(out, labels))
    return out


def between_share(h: np.ndarray, labels: np.ndarray) -> float:
    """Share of an embedding's total variance that lies between the clusters of ``labels`` (R²).

    Parameters
    ----------
    h : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)

    Returns
    -------
    float
        ``1 - Σ_i ||h_i - c_{y_i}||² / Σ_i ||h_i - mean(h)||²`` in [0, 1], ``c_k`` the mean of
        cluster ``k``; 0 when ``h`` has no spread.
    """
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    sums = np.zeros((counts.size, h.shape[1]))
    np.add.at(sums, inverse, h)
    within = float(((h - (sums / counts[:, None])[inverse]) ** 2).sum())
    total = float(((h - h.mean(axis=0)) ** 2).sum())
    return float(np.clip(1.0 - within / total, 0.0, 1.0)) if total > 0 else 0.0


def anchor_distances(h: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """Squared distances from every sample to the anchor samples, ``D_ij = ||h_i - h_{a_j}||²``.

    Parameters
    ----------
    h : ndarray, shape (n, d)
    anchors : ndarray of int, shape (r,)

    Returns
    -------
    ndarray, shape (n, r)
        Nonnegative; zero at ``(a_j, j)``.
    """
    return prototype_distances(h, h[anchors])


def landmark_mds(distances: np.ndarray, anchors: np.ndarray, dim: int = 0) -> np.ndarray:
    """Coordinates of every sample from its squared distances to the anchors (landmark MDS).

    Parameters
    ----------
    distances : ndarray, shape (n, r)
        Squared Euclidean distances to the anchor samples (the sum of the clients' uploads).
    anchors : ndarray of int, shape (r,)
        Which samples the anchors are (``distances[anchors]`` is the anchor block).
    dim : int
        Coordinates kept, the leading ones; ``0`` keeps every positive eigenvalue.

    Returns
    -------
    ndarray, shape (n, p)
        Coordinates whose pairwise distances equal the input's geometry when the samples lie in
        the affine span of the anchors (exact up to rounding); ``p <= r - 1``.
    """
    block = distances[anchors]
    block = 0.5 * (block + block.T)
    r = block.shape[0]
    centre = np.eye(r) - 1.0 / r
    gram = -0.5 * centre @ block @ centre
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    keep = values > _EIG_RTOL * max(values[0], 1e-300)
    if dim > 0:
        keep &= np.arange(r) < dim
    values, vectors = values[keep], vectors[:, keep]
    mean_row = block.mean(axis=0)
    return 0.5 * (mean_row[None, :] - distances) @ (vectors / np.sqrt(values)[None, :])


def anchor_kmeans(
    distances: np.ndarray, anchors: np.ndarray, num_clusters: int, rng: np.random.Generator, dim: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Global labels and target from the summed anchor distances.

    Parameters
    ----------
    distances : ndarray, shape (n, r)
        ``Σ_m D^(m)``.
    anchors : ndarray of int, shape (r,)
    num_clusters : int
        K.
    rng : numpy.random.Generator
        Seeds the k-means restarts.
    dim : int
        See :func:`landmark_mds`.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        k-means labels of the MDS coordinates (in k-means' own order).
    target : ndarray, shape (n, K)
        P: DEC's sharpened Student's-t assignment of the coordinates to the label means; column
        ``c`` belongs to label ``c``.
    """
    coords = landmark_mds(distances, anchors, dim)
    labels = kmeans_labels(coords, num_clusters, rng)
    return labels, coordinate_target(coords, labels, num_clusters)


def coordinate_target(coords: np.ndarray, labels: np.ndarray, num_clusters: int) -> np.ndarray:
    """P: DEC's sharpened Student's-t assignment of coordinates to the means of their labels.

    Parameters
    ----------
    coords : ndarray, shape (n, p)
    labels : ndarray of int, shape (n,)
    num_clusters : int

    Returns
    -------
    ndarray, shape (n, K)
        Column ``c`` belongs to label ``c``; rows sum to one.
    """
    q = student_t(prototype_distances(coords, prototypes(coords, labels, num_clusters)))
    return target_distribution(q)


def anchor_spectral_embedding(fused: sp.spmatrix, num_clusters: int) -> np.ndarray:
    """Leading eigenvectors of the affinity of a bipartite sample-anchor graph (Liu, He, Chang 2010).

    The fused anchor graph ``G`` defines the sample affinity ``W = G Λ^{-1} Gᵀ``,
    ``Λ = diag(1ᵀG)``, whose degrees are the row sums of ``G``. With ``S = D^{-1/2} G Λ^{-1/2}``
    (``D`` those degrees) the ``K`` leading eigenvectors of the normalised affinity
    ``D^{-1/2} W D^{-1/2} = S Sᵀ`` are ``S V Σ^{-1}``, from the eigenpairs ``(Σ², V)`` of the
    ``r x r`` matrix ``SᵀS``: ``O(n r²)`` time, no ``n x n`` matrix. Anchors no sample weighs are
    left out.

    Parameters
    ----------
    fused : sparse matrix, shape (n, r)
        Nonnegative; every row with a positive sum.
    num_clusters : int
        K.

    Returns
    -------
    ndarray, shape (n, min(K, r'))
        Orthonormal columns, ``r'`` the anchors with weight.
    """
    import scipy.sparse as sp

    g = sp.csr_matrix(fused, dtype=np.float64)
    anchor_degree = np.asarray(g.sum(axis=0)).ravel()
    g = g[:, anchor_degree > 0]
    anchor_degree = anchor_degree[anchor_degree > 0]
    sample_degree = np.asarray(g.sum(axis=1)).ravel()
    s = sp.diags(1.0 / np.sqrt(sample_degree)) @ g @ sp.diags(1.0 / np.sqrt(anchor_degree))
    values, vectors = np.linalg.eigh((s.T @ s).toarray())
    top = np.argsort(values)[::-1][: min(num_clusters, values.size)]
    return np.asarray(s @ (vectors[:, top] / np.sqrt(np.maximum(values[top], 1e-300))))


def anchor_spectral_labels(fused: sp.spmatrix, num_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """Spectral clustering of the fused anchor graph ([A] ``iai.pseudo-labels = "anchor-spectral"``).

    The rows of :func:`anchor_spectral_embedding`, scaled to unit length (Ng, Jordan, Weiss 2001),
    clustered by k-means with restarts.

    Parameters
    ----------
    fused : sparse matrix, shape (n, r)
        Nonnegative; every row with a positive sum.
    num_clusters : int
    rng : numpy.random.Generator
        Seeds the k-means restarts.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    embedding = anchor_spectral_embedding(fused, num_clusters)
    embedding /= np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-300)
    return kmeans_labels(embedding, num_clusters, rng)


def rank_spectral_labels(
    graph: sp.spmatrix,
    view_lists: list[np.ndarray],
    votes: np.ndarray,
    coords: np.ndarray,
    previous: np.ndarray,
    num_clusters: int,
    knn: int,
    seed: int,
    exact_rows: int | None = None,
) -> tuple[np.ndarray, str]:
    """Pseudo-labels of ``iai.pseudo-labels = "rank-spectral"`` ([A]).

    Three candidate partitions: the ``previous`` labels; the spectral clustering of A_g, the rank fusion
    of the views' neighbour lists (``views``); and that of the same fusion with one more voter of
    weight 1, the ``L``-nearest list of every sample in the coordinates (``views+embedding``: the
    clients' trained embeddings, concatenated). The one with the highest modularity on A_g is kept
    (ties, within 1e-9: the earlier in :data:`RANK_SPECTRAL_CANDIDATES`). A_g's lists come from the
    views' codes, which no training round moves towards the labels, so the embedding's vote is taken
    only where it makes the partition agree better with the views' own neighbourhoods, and the
    previous labels stay unless a new partition agrees better.

    Parameters
    ----------
    graph : sparse matrix, shape (n, n)
        A_g, the symmetric adjacency of :func:`~fedmf_app.methods.iai.rank_fusion.rank_fusion`
        of ``view_lists`` with ``votes``.
    view_lists : list of ndarray of int, each (n, L)
        The views' neighbour lists, nearest first (``-1`` padded).
    votes : ndarray, shape (m,)
        The views' vote weights (mean 1: the embedding's vote counts as one view's).
    coords : ndarray, shape (n, p)
        Coordinates of the concatenated embedding (landmark MDS of the summed anchor distances).
    previous : ndarray of int, shape (n,)
        The previous round's labels.
    num_clusters : int
        K.
    knn : int
        Degree k of A_g.
    seed : int
        Seeds the spectral clusterings.
    exact_rows : int, optional
        Largest search of the coordinates' neighbours done exactly (see
        :func:`~fedmf_app.common.graphs.knn_indices`; default: exact).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
    chosen : str
        Which candidate (:data:`RANK_SPECTRAL_CANDIDATES`).
    """
    n, k = coords.shape[0], num_clusters
    depth = max(v.shape[1] for v in view_lists)
    joint = rank_fusion([*view_lists, knn_indices(coords, depth, exact_rows)], knn, np.append(votes, 1.0))
    candidates = {
        "previous": np.asarray(previous, dtype=np.int64),
        "views": spectral_labels(graph, k, seed),
        "views+embedding": spectral_labels(adjacency(joint, n), k, seed),
    }
    scores = {name: modularity(graph, labels) for name, labels in candidates.items()}
    best = max(scores.values())
    chosen = next(name for name in RANK_SPECTRAL_CANDIDATES if scores[name] >= best - _MODULARITY_TIE)
    return candidates[chosen], chosen
