"""Feature propagation (Rossi et al. 2022): impute missing rows by diffusion on a graph.

With the symmetric normalised adjacency ``Ã = D^{-1/2} A D^{-1/2}`` (zero degree -> 0) and the
observed-row mask ``b``, the iteration

    Z̃_0 = Z,    Z̃_{t+1} = B Z + (I - B) Ã Z̃_t,    B = diag(b),

diffuses the features and resets the observed rows after every step. Its fixed point minimises the
Dirichlet energy ``tr(Z̃ᵀ (I - Ã) Z̃)`` with the observed rows fixed (the harmonic extension):
``(I - Ã)_uu Z̃_u = Ã_uo Z_o`` on the missing rows ``u``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["feature_propagation", "normalised_adjacency"]


def normalised_adjacency(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """``D^{-1/2} A D^{-1/2}`` with ``D = diag(A 1)``; isolated nodes get zero rows.

    Parameters
    ----------
    adjacency : sparse matrix, shape (n, n)
        Symmetric, nonnegative.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n)
    """
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    degree = np.asarray(a.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(degree)
    positive = degree > 0
    inv_sqrt[positive] = degree[positive] ** -0.5
    scale = sp.diags(inv_sqrt)
    return sp.csr_matrix(scale @ a @ scale)


def feature_propagation(
    features: np.ndarray, observed: np.ndarray, adjacency: sp.spmatrix, iterations: int = 40
) -> np.ndarray:
    """Impute the unobserved rows of ``features`` by ``iterations`` propagation steps.

    Parameters
    ----------
    features : ndarray, shape (n, d)
        Rows where ``observed`` is false are ignored (the iteration starts them at zero).
    observed : ndarray of bool, shape (n,)
    adjacency : sparse matrix, shape (n, n)
        Symmetric graph over all n samples (the server's global graph A_g).
    iterations : int
        Steps T (Rossi et al.'s default 40).

    Returns
    -------
    ndarray, shape (n, d)
        Observed rows equal to ``features``; the others propagated.
    """
    known = np.where(observed[:, None], features, 0.0)
    diffusion = normalised_adjacency(adjacency)
    z = known.copy()
    missing = ~observed
    for _ in range(iterations):
        z = np.where(missing[:, None], diffusion @ z, known)
    return z
