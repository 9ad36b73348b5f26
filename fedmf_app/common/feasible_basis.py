"""Nonnegative orthonormal bases, the generic pieces (numpy only): the feasible set
:math:`\\{U \\ge 0,\\ U^\top U = I\\}` of paper A's basis (each row has at most one nonzero), the
projection onto the nonnegative oblique manifold, the rounding onto the feasible set, and a random
feasible basis. Paper A's basis solver (:mod:`fedmf_app.methods.sonmf.nonneg_orth`) and the
synthetic data generator (:mod:`fedmf_app.data.synthetic`) both use them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_oblique_nonneg", "random_feasible_basis", "round_to_feasible"]


def project_oblique_nonneg(u: np.ndarray) -> np.ndarray:
    """Project onto ``{U >= 0, ||U_{.j}||_2 = 1}``: clip negatives, normalise columns.

    A column with no positive entry becomes the unit vector at its largest entry (``proj_ob.m``).

    Parameters
    ----------
    u : ndarray, shape (d, r)

    Returns
    -------
    ndarray, shape (d, r)
    """
    p = np.maximum(u, 0.0)
    norms = np.sqrt(np.einsum("ij,ij->j", p, p))
    dead = norms <= 0.0
    if dead.any():
        cols = np.flatnonzero(dead)
        p[:, cols] = 0.0
        p[np.argmax(u[:, cols], axis=0), cols] = 1.0
        norms[cols] = 1.0
    return p / norms


def round_to_feasible(u: np.ndarray) -> np.ndarray | None:
    """Rounding of ``round_st.m``: keep the largest entry of every row, renormalise the columns.

    Parameters
    ----------
    u : ndarray, shape (d, r)
        Nonnegative matrix.

    Returns
    -------
    ndarray, shape (d, r), or None
        A feasible basis (``U >= 0``, ``U^T U = I``) or ``None`` when some column would receive no
        row (the rounding is then not applicable).
    """
    d, r = u.shape
    winner = np.argmax(u, axis=1)
    keep = u[np.arange(d), winner]
    out = np.zeros_like(u)
    out[np.arange(d), winner] = keep
    norms = np.linalg.norm(out, axis=0)
    if np.any(norms <= 0.0):
        return None
    return out / norms


def random_feasible_basis(d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """Random feasible basis: ``round(project(|randn|))`` with every column given a row.

    Each row keeps only its largest ``|N(0, 1)|`` draw, in that draw's column; ``r`` random rows move
    their largest draw to columns ``0..r-1`` (one each) so that every column owns a row and the
    rounding is always applicable ([A]).

    Parameters
    ----------
    d, r : int
        Number of features and rank; ``d >= r``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (d, r)
        Nonnegative with orthonormal columns.
    """
    if d < r:
        raise ValueError(f"a nonnegative orthonormal basis needs d >= r, got d={d}, r={r}")
    g = np.abs(rng.standard_normal((d, r)))
    owners = rng.permutation(d)[:r]
    largest = g[owners].max(axis=1)
    g[owners, :] = 0.0
    g[owners, np.arange(r)] = largest
    u = round_to_feasible(project_oblique_nonneg(g))
    assert u is not None  # every column owns one of the first r rows
    return u
