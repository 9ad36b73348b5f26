"""The federated start of paper A's model: ``V^1`` from a sketch of the stacked views' sample Gram
matrix, each ``U_p`` fitted to it.

The stacked views :math:`X = [X_1; \\dots; X_m]` (``D x n``) have the sample Gram matrix
:math:`G = X^\\top X = \\sum_p X_p^\\top X_p` (``n x n``). With a test matrix :math:`\\Omega`
(``n x l``, drawn from the run seed by every party), client ``p`` sends
:math:`Y_p = X_p^\\top (X_p\\Omega)` (:func:`gram_sketch`); the server needs only the sum
:math:`Y = G\\Omega` and forms the single-pass Nystrom approximation :math:`G \\approx
Y(\\Omega^\\top Y)^{+}Y^\\top` (Halko, Martinsson & Tropp 2011, Sect. 5.4; the stabilised form of
Tropp et al. 2017), whose top ``r`` eigenpairs :math:`(\\sigma_j^2, w_j)` are the leading singular
values and right singular vectors of :math:`X` (exact when :math:`\\operatorname{rank} G \\le l`).

:math:`V^1` (:func:`coefficients_from_sketch`) is read from the leading right singular vectors
``W`` (``n x r``) in one of two ways (``SONMFOptions.sketch_reading``):

* ``"clusters"`` ([A], the default): k-means into ``r`` groups on the rows of ``W`` scaled to unit
  norm (the samples' directions in the stacked views' leading subspace, as in spectral
  clustering), and row ``j`` of :math:`V^1` the indicator of group ``j`` times
  :math:`c = (\\sum_j \\sigma_j^2 / (m n))^{1/2}`, so that :math:`\\|V^1\\|_F^2 = \\sum_j \\sigma_j^2/m`.
  Every component starts as one group of samples, the same in every view.
* ``"nndsvd"``: the NNDSVD reading of the ``V`` factor, row ``j`` :math:`(\\sigma_j/\\sqrt m)\\,[s_j
  w_j]_+` with the sign :math:`s_j` whose positive part is the larger (Boutsidis & Gallopoulos 2008
  choose it with the left vectors too, which stay with the clients). With orthonormal
  :math:`U_p`, :math:`V \\approx U_p^\\top X_p` and a view holding a ``1/sqrt(m)`` share of the
  stacked left vector gives :math:`\\sigma_j/\\sqrt m`. On data whose leading singular vector is
  close to the mean sample, the first component then holds most of the mass and keeps it.

Client ``p`` then fits :math:`U_p` to :math:`V^1` (:func:`basis_from_coefficients`): the ``U``
subproblem with :math:`\\rho_1 = 0` on the supports obtained by giving each feature to the
component it correlates with most.
"""

from __future__ import annotations

import numpy as np

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.common.scaling import normalise_rows
from fedmf_app.methods.sonmf.nonneg_orth import polish_on_supports

__all__ = [
    "OVERSAMPLING",
    "SKETCH_READINGS",
    "basis_from_coefficients",
    "coefficients_from_sketch",
    "gram_sketch",
    "sketch_test_matrix",
]

#: [A] Columns of the test matrix beyond the rank, l = r + OVERSAMPLING (capped at n).
OVERSAMPLING = 10

#: How ``V^1`` is read from the sketch's leading singular vectors (module docstring).
SKETCH_READINGS = ("clusters", "nndsvd")


def sketch_test_matrix(n: int, rank: int, rng: np.random.Generator) -> np.ndarray:
    """Gaussian test matrix :math:`\\Omega` of the sketch.

    Parameters
    ----------
    n, rank : int
        Samples and the run's rank.
    rng : numpy.random.Generator
        The same stream on every party (the run seed's).

    Returns
    -------
    ndarray, shape (n, l)
        ``l = min(rank + OVERSAMPLING, n)``.
    """
    return rng.standard_normal((n, min(rank + OVERSAMPLING, n)))


def gram_sketch(x: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """One view's share of the sketch, :math:`Y_p = X_p^\\top (X_p \\Omega)`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
        The view, features x samples.
    omega : ndarray, shape (n, l)

    Returns
    -------
    ndarray, shape (n, l)
    """
    return np.asarray(x.T @ np.asarray(x @ omega))


def coefficients_from_sketch(
    y: np.ndarray,
    omega: np.ndarray,
    rank: int,
    num_views: int,
    reading: str = "clusters",
    rng: np.random.Generator | None = None,
    entry_error: float = 0.0,
) -> np.ndarray:
    """:math:`V^1` from the summed sketch :math:`Y = G\\Omega` (module docstring).

    Parameters
    ----------
    y : ndarray, shape (n, l)
        :math:`\\sum_p Y_p`.
    omega : ndarray, shape (n, l)
    rank : int
        ``r <= l``.
    num_views : int
        ``m``.
    reading : {"clusters", "nndsvd"}
        How ``V^1`` is read from the leading singular vectors.
    rng : numpy.random.Generator, optional
        Seeds the k-means of ``"clusters"`` (required there).
    entry_error : float
        Bound on the error of every entry of ``y`` (a sum decoded from fixed point: ``m 2^-f``).

    Returns
    -------
    ndarray, shape (r, n)
        Nonnegative.

    Notes
    -----
    The Nystrom core :math:`\\Omega^\\top Y` is positive semidefinite, singular when the stacked
    views have fewer than ``l`` features. The shift :math:`\\nu` of Tropp et al. (2017) covers the
    rounding of floating point, :math:`\\sqrt n\\,\\epsilon\\,\\|Y\\|_2`; an error ``e`` per entry of
    ``y`` moves the core by at most :math:`\\|\\Omega\\|_2 e\\sqrt{nl}`, which the shift's
    :math:`\\nu\\,\\sigma_{min}(\\Omega)^2` must exceed: :math:`\\nu` is the larger of the two.
    """
    # only the server reads the sketch: a deployed ClientApp (a new process per message) imports
    # this module for its share of the sketch and skips scipy.linalg's import
    from scipy.linalg import cholesky, solve_triangular, svd

    if reading not in SKETCH_READINGS:
        raise ValueError(f"reading must be one of {SKETCH_READINGS}, got {reading!r}")
    n = y.shape[0]
    nu = np.sqrt(n) * np.finfo(float).eps * np.linalg.norm(y, 2)
    if entry_error > 0:
        singular = svd(omega, compute_uv=False)
        nu = max(nu, 2.0 * singular[0] * entry_error * np.sqrt(y.size) / singular[-1] ** 2)
    y_nu = y + nu * omega
    core = omega.T @ y_nu
    r_factor = cholesky(0.5 * (core + core.T), lower=False)
    b = solve_triangular(r_factor, y_nu.T, trans="T").T  # Y_nu R^{-1}: G_nu ~ B B^T
    w, s, _ = svd(b, full_matrices=False)
    sigma = np.sqrt(np.maximum(s[:rank] ** 2 - nu, 0.0))
    w = w[:, :rank]
    if reading == "clusters":
        if rng is None:
            raise ValueError("the 'clusters' reading needs an rng for its k-means")
        groups = kmeans_labels(normalise_rows(w), rank, rng)
        v = np.zeros((rank, n))
        v[groups, np.arange(n)] = np.sqrt(float(np.sum(sigma**2)) / (num_views * n))
        return v
    positive, negative = np.maximum(w, 0.0), np.maximum(-w, 0.0)
    flip = np.linalg.norm(negative, axis=0) > np.linalg.norm(positive, axis=0)
    parts = np.where(flip, negative, positive)
    return (sigma / np.sqrt(num_views))[:, None] * parts.T


def basis_from_coefficients(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A feasible :math:`U_p` fitted to ``v``: every feature goes to the component of its largest
    :math:`(X_pV^\\top)_{ij}`, then the exact minimiser of :math:`\\|X_p - UV\\|_F^2` on those
    supports (:func:`~fedmf_app.methods.sonmf.nonneg_orth.polish_on_supports`).

    A component that wins no feature takes the feature that costs least to move to it (from a
    component with more than one). A view with fewer features than components (``d < r``) keeps
    the components its features choose, each only where it lowers the residual (``||[2 X_p
    V^T]_{+, S_j j}|| > ||V_{j.}||^2``); the others are zero columns.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    v : ndarray, shape (r, n)
        Nonnegative coefficients.

    Returns
    -------
    ndarray, shape (d, r)
        ``U >= 0`` with orthonormal columns (``d >= r``), or with ``U^T U`` diagonal with 0/1
        entries (``d < r``).
    """
    a = np.asarray(x @ v.T)
    d, r = a.shape
    owner = np.argmax(a, axis=1)
    if d < r:
        support = np.zeros((d, r))
        support[np.arange(d), owner] = 1.0
        return polish_on_supports(support, 2.0 * a, np.einsum("ij,ij->i", v, v))
    for j in range(r):
        if np.any(owner == j):
            continue
        counts = np.bincount(owner, minlength=r)
        movable = counts[owner] > 1
        loss = np.where(movable, a[np.arange(d), owner] - a[:, j], np.inf)
        owner[int(np.argmin(loss))] = j
    support = np.zeros((d, r))
    support[np.arange(d), owner] = 1.0
    return polish_on_supports(support, 2.0 * a)
