"""Cluster assignments of paper C: prototypes, Student's-t Q, target P, EMD,
weighted anchor-graph fusion and pseudo-labels. numpy / scipy / scikit-learn only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "FUSION_WEIGHTS",
    "fuse",
    "fusion_weights",
    "label_alignment",
    "prototype_distances",
    "prototypes",
    "spectral_labels",
    "student_t",
    "target_distribution",
    "total_variation_emd",
]

#: How the server weighs the clients' anchor graphs (``uniform`` is ablation M2).
FUSION_WEIGHTS = ("inverse-emd", "softmax", "uniform")


def prototypes(embedding: np.ndarray, labels: np.ndarray, num_clusters: int) -> np.ndarray:
    """Cluster means F_k = mean{h_i : y_i = k}.

    Parameters
    ----------
    embedding : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
        Values in ``0..K-1``.
    num_clusters : int
        K.

    Returns
    -------
    ndarray, shape (K, d)
        [A] An empty cluster's prototype is the mean of all rows.
    """
    counts = np.bincount(labels, minlength=num_clusters).astype(np.float64)
    sums = np.zeros((num_clusters, embedding.shape[1]))
    np.add.at(sums, labels, embedding)
    empty = counts == 0
    sums[empty] = embedding.mean(axis=0)
    counts[empty] = 1.0
    return sums / counts[:, None]


def prototype_distances(embedding: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances e_ik = ||h_i - F_k||² ([A] squared).

    Parameters
    ----------
    embedding : ndarray, shape (n, d)
    centres : ndarray, shape (K, d)

    Returns
    -------
    ndarray, shape (n, K)
    """
    sq = (embedding**2).sum(1)[:, None] - 2.0 * embedding @ centres.T + (centres**2).sum(1)[None, :]
    return np.maximum(sq, 0.0)


def student_t(distances: np.ndarray) -> np.ndarray:
    """Student's-t soft assignment: q_ik = (1 + e_ik)⁻¹ / Σ_l (1 + e_il)⁻¹.

    Parameters
    ----------
    distances : ndarray, shape (n, K)
        Squared distances e_ik >= 0.

    Returns
    -------
    ndarray, shape (n, K)
        Rows sum to one.
    """
    kernel = 1.0 / (1.0 + distances)
    return kernel / kernel.sum(axis=1, keepdims=True)


def target_distribution(q: np.ndarray) -> np.ndarray:
    """DEC target: p_ik = (q_ik² / f_k) / Σ_l (q_il² / f_l), f_k = Σ_i q_ik.

    Parameters
    ----------
    q : ndarray, shape (n, K)
        Soft assignment, rows summing to one.

    Returns
    -------
    ndarray, shape (n, K)
        Rows sum to one; sharper than ``q`` (a row's largest entry grows when the cluster sizes
        are balanced).
    """
    weight = q**2 / q.sum(axis=0, keepdims=True)
    return weight / weight.sum(axis=1, keepdims=True)


def total_variation_emd(p: np.ndarray, q: np.ndarray) -> float:
    """EMD between P and Q with the 0/1 ground metric on clusters ([A] form).

    With the 0/1 metric the row-wise earth mover's distance equals the total variation distance,
    so EMD = (1/n) Σ_i ½ ||p_i - q_i||₁ (in [0, 1]).

    Parameters
    ----------
    p, q : ndarray, shape (n, K)
        Row-stochastic.

    Returns
    -------
    float
    """
    return float(0.5 * np.abs(p - q).sum(axis=1).mean())


def fusion_weights(
    emd: np.ndarray, rule: str = "inverse-emd", temperature: float = 0.1, floor: float = 1e-12
) -> np.ndarray:
    """Client weights w^(m) from EMD_m; they decrease with the EMD.

    Parameters
    ----------
    emd : ndarray, shape (m,)
        Nonnegative distances.
    rule : {"inverse-emd", "softmax", "uniform"}
        ``inverse-emd`` [A]: w ∝ 1 / max(EMD, floor). ``softmax``: w ∝ exp(-EMD / temperature).
        ``uniform``: 1/m (ablation M2).
    temperature : float
        Of ``softmax``.
    floor : float
        Smallest EMD used by ``inverse-emd``.

    Returns
    -------
    ndarray, shape (m,)
        Nonnegative, summing to one.

    Raises
    ------
    ValueError
        On an unknown rule.
    """
    emd = np.asarray(emd, dtype=np.float64)
    if rule == "inverse-emd":
        raw = 1.0 / np.maximum(emd, floor)
    elif rule == "softmax":
        raw = np.exp(-(emd - emd.min()) / temperature)
    elif rule == "uniform":
        raw = np.ones_like(emd)
    else:
        raise ValueError(f"unknown fusion rule {rule!r}; use one of {FUSION_WEIGHTS}")
    return raw / raw.sum()


def fuse(graphs: list[sp.spmatrix], weights: np.ndarray) -> sp.csr_matrix:
    """Weighted anchor-graph fusion G = Σ_m w^(m) G^(m).

    Parameters
    ----------
    graphs : list of sparse matrix, each (n, r)
    weights : ndarray, shape (m,)

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, r)
    """
    import scipy.sparse as sp

    total = sp.csr_matrix(graphs[0].shape)
    for g, w in zip(graphs, weights):
        total = total + float(w) * sp.csr_matrix(g)
    return total.tocsr()


def label_alignment(labels: np.ndarray, reference: np.ndarray, num_clusters: int) -> np.ndarray:
    """Renaming of ``labels`` that agrees best with ``reference`` (Hungarian on the contingency).

    Parameters
    ----------
    labels, reference : ndarray of int, shape (n,)
        Values in ``0..K-1``.
    num_clusters : int

    Returns
    -------
    ndarray of int64, shape (K,)
        A permutation ``mapping``: ``mapping[labels]`` is the same partition, renamed; a matrix
        whose column ``c`` belongs to cluster ``c`` of ``labels`` is renamed by
        ``renamed[:, mapping] = matrix``.
    """
    from scipy.optimize import linear_sum_assignment  # 0.3 s to import: not on every ClientApp's path

    table = np.zeros((num_clusters, num_clusters), dtype=np.int64)
    np.add.at(table, (labels, reference), 1)
    rows, cols = linear_sum_assignment(-table)
    mapping = np.empty(num_clusters, dtype=np.int64)
    mapping[rows] = cols
    return mapping


def spectral_labels(affinity: sp.spmatrix, num_clusters: int, seed: int) -> np.ndarray:
    """Normalised spectral clustering of a precomputed sparse affinity ([A]).

    The embedding is ``D^{-1/2} U`` with ``U`` the ``K`` leading eigenvectors of
    ``D^{-1/2} A D^{-1/2}`` (the trailing ones of the normalised Laplacian), found by ARPACK's
    implicitly restarted Lanczos for the largest eigenvalues, only products with the sparse matrix
    (``O(nnz)`` memory and time per product); rows assigned by ``cluster_qr`` as in
    scikit-learn's ``spectral_clustering``.

    Parameters
    ----------
    affinity : sparse matrix, shape (n, n)
        Symmetric, nonnegative.
    num_clusters : int
    seed : int
        Seeds the Lanczos start vector.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    import scipy.sparse as sp
    from scipy.linalg import qr, svd
    from scipy.sparse.linalg import eigsh

    a = sp.csr_matrix(affinity, dtype=np.float64)
    n = a.shape[0]
    degree = np.asarray(a.sum(axis=1)).ravel()
    inv_sqrt = np.where(degree > 0, 1.0 / np.sqrt(np.where(degree > 0, degree, 1.0)), 0.0)
    scaled = sp.diags(inv_sqrt) @ a @ sp.diags(inv_sqrt)
    v0 = np.random.default_rng(seed).uniform(-1.0, 1.0, n)
    _, vectors = eigsh(scaled, k=num_clusters, which="LA", v0=v0, tol=0.0)
    maps = vectors * inv_sqrt[:, None]
    # cluster_qr (Damle, Minden, Ying 2019), as in scikit-learn
    _, _, pivots = qr(maps.T, pivoting=True, mode="economic")
    ut, _, v = svd(maps[pivots[:num_clusters]].T)
    return np.abs(maps @ (ut @ v.conj())).argmax(axis=1).astype(np.int64)
