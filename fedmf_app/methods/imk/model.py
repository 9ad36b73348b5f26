"""FMVC-IMK (paper B): what the client's and the server's maths share (numpy/scipy only).

The view type, the orthogonality penalty, the multiplier step and its over-relaxation that both
sides apply, the normalised indicator, and the run's seeded random streams (each client's, the
server's, the labels', the shared anchor samples). The client's updates are
:mod:`fedmf_app.methods.imk.client_updates`, the server's :mod:`fedmf_app.methods.imk.server_updates`;
neither imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "View",
    "anchor_indices",
    "client_rng",
    "label_rng",
    "multiplier_step",
    "normalised_indicator",
    "ortho_penalty",
    "relaxed",
    "server_rng",
]

#: A view as the client holds it: dense, or sparse (CSR) when its file stores it sparse.
View: TypeAlias = "np.ndarray | sp.csr_matrix"


def ortho_penalty(h: np.ndarray) -> float:
    """:math:`\\|H^\\top H - I\\|_F^2`."""
    g = h.T @ h
    return float(np.linalg.norm(g - np.eye(g.shape[0])) ** 2)


def multiplier_step(phi: np.ndarray, h_local: np.ndarray, h_global: np.ndarray, rho: float) -> np.ndarray:
    """[A] ADMM multiplier step :math:`\\Phi + \\rho(H^{(m)} - H)` (same on client and server)."""
    return phi + rho * (h_local - h_global)


def relaxed(h_local: np.ndarray, h_global: np.ndarray, relaxation: float) -> np.ndarray:
    """[A] Over-relaxed ADMM (Boyd et al. 2011, Sect. 3.4.3): :math:`aH^{(m)} + (1 - a)H`, what the
    server's ``H`` update and the next multiplier step read in place of :math:`H^{(m)}`.

    The server applies it to the sums, :math:`a\\sum_m H^{(m)} + (1 - a)MH`, which is the sum of the
    clients' relaxed copies. At consensus (:math:`H^{(m)} = H`) it changes nothing, so the fixed
    points are those of plain ADMM.

    Parameters
    ----------
    h_local : ndarray, shape (N, k)
        :math:`H^{(m)}` after the client's update (or their sum).
    h_global : ndarray, shape (N, k)
        The ``H`` the round started from (or ``M`` times it).
    relaxation : float
        :math:`a` in (0, 2); 1 is plain ADMM (Algorithm 1) and returns ``h_local`` itself.

    Returns
    -------
    ndarray, shape (N, k)
    """
    if relaxation == 1.0:
        return h_local
    return relaxation * h_local + (1.0 - relaxation) * h_global


def normalised_indicator(labels: np.ndarray, k: int) -> np.ndarray:
    """Column-normalised indicator, entries :math:`1/\\sqrt{n_j}` (corrects the paper's literal reading).

    Parameters
    ----------
    labels : ndarray of int, shape (N,)
        Values in ``0..k-1``.
    k : int

    Returns
    -------
    ndarray, shape (N, k)
        Orthonormal columns (empty clusters give zero columns).
    """
    h = np.zeros((labels.size, k))
    h[np.arange(labels.size), labels] = 1.0
    counts = h.sum(axis=0)
    return h / np.sqrt(np.where(counts > 0, counts, 1.0))


def client_rng(seed: int, partition_id: int) -> np.random.Generator:
    """Client ``partition_id``'s random stream (k-means and ``F`` initialisation)."""
    return rng_for(seed, Stream.CLIENT_INIT, partition_id)


def server_rng(seed: int) -> np.random.Generator:
    """The server's random stream for the initial ``H``."""
    return rng_for(seed, Stream.SERVER_INIT, 0)


def label_rng(seed: int, server_round: int) -> np.random.Generator:
    """The stream for extracting labels after ``server_round`` (the final labels: the last round)."""
    return rng_for(seed, Stream.SERVER_INIT, 1 + server_round)


def anchor_indices(seed: int, num_samples: int, num_anchors: int) -> np.ndarray:
    """[A] The shared anchor samples: ``min(a, N)`` distinct indices drawn from the run seed.

    Parameters
    ----------
    seed : int
    num_samples : int
        ``N``.
    num_anchors : int
        ``a`` (run config ``imk.anchors``); at most ``N`` are drawn.

    Returns
    -------
    ndarray of int64, shape (min(a, N),)
        Sorted.
    """
    rng = rng_for(seed, Stream.IMK_ANCHORS)
    drawn = rng.choice(num_samples, size=min(num_anchors, num_samples), replace=False)
    return np.sort(drawn).astype(np.int64)
