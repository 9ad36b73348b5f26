"""Clustering quality against ground truth: ACC (Hungarian matching), NMI, purity and ARI; and
how far one clustering moved from another (:func:`label_change`).

These are the metrics of paper A's Table 1 (ACC, NMI, Pur) plus the adjusted Rand index. All are
in ``[0, 1]`` (ARI can be negative) and invariant to how the clusters are numbered.

scikit-learn and ``scipy.optimize`` are imported when a clustering is first scored (about 1.2 s of
CPU): the server imports this module before it contacts the clients, and loads them on a thread
while it waits for their first replies (a strategy's ``later_imports``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["clustering_scores", "label_change"]


def clustering_scores(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Score a clustering against the ground truth.

    Parameters
    ----------
    y_true : ndarray, shape (n,)
        Ground-truth classes (any coding).
    y_pred : ndarray, shape (n,)
        Predicted clusters (any coding; their number may differ from the number of classes).

    Returns
    -------
    dict
        ``acc``: fraction of samples correctly labelled under the best one-to-one matching of
        clusters to classes (Hungarian, :func:`scipy.optimize.linear_sum_assignment`);
        ``nmi``: normalised mutual information (arithmetic mean normalisation, scikit-learn's
        default); ``purity``: fraction of samples in their cluster's majority class;
        ``ari``: adjusted Rand index.

    Raises
    ------
    ValueError
        When the label vectors are not 1-D of the same nonzero length.
    """
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    from sklearn.metrics.cluster import contingency_matrix

    y_true = np.asarray(y_true).reshape(-1)
    y_pred = np.asarray(y_pred).reshape(-1)
    if y_true.size == 0 or y_true.shape != y_pred.shape:
        raise ValueError(
            f"label vectors must be nonempty and of one length, got {y_true.shape} and {y_pred.shape}"
        )
    table = contingency_matrix(y_true, y_pred)  # classes x clusters
    n = y_true.size
    return {
        "acc": _matched(table) / n,
        "nmi": float(normalized_mutual_info_score(y_true, y_pred)),
        "purity": float(table.max(axis=0).sum() / n),
        "ari": float(adjusted_rand_score(y_true, y_pred)),
    }


def label_change(previous: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of the samples whose cluster differs between two clusterings of them, under the
    one-to-one renaming of clusters that agrees best (Hungarian): ``1 - ACC`` of ``labels`` scored
    against ``previous``.

    Parameters
    ----------
    previous, labels : ndarray of int, shape (n,)
        Two clusterings of the same ``n > 0`` samples (any coding).

    Returns
    -------
    float
        In ``[0, 1)``; 0 when the partitions are the same, whatever the numbering.
    """
    from sklearn.metrics.cluster import contingency_matrix

    table = contingency_matrix(np.asarray(previous).reshape(-1), np.asarray(labels).reshape(-1))
    return 1.0 - _matched(table) / int(table.sum())


def _matched(table: np.ndarray) -> float:
    """Samples on the best one-to-one matching of the rows of a contingency table to its columns.

    Parameters
    ----------
    table : ndarray of int, shape (a, b)

    Returns
    -------
    float
    """
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum())
