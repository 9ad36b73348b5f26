"""FMVC-IMK (paper B): the model and the client's updates (numpy/scipy only; the parameters are
:mod:`fedmf_app.methods.imk.params`, the pieces client and server share
:mod:`fedmf_app.methods.imk.model`).

Model (``docs/imk.md``) for ``M`` clients, client ``m`` holding the
view :math:`X^{(m)}` (``N x d_m``, samples x features):

.. math::

    \\min \\sum_m \\alpha^{(m)}\\|X^{(m)} - H^{(m)}W^{(m)}F^{(m)}\\|_F^2
    + \\mu\\sum_m\\|H^{(m)\\top}H^{(m)} - I_k\\|_F^2 + \\lambda\\,\\mathrm{Tr}(H^\\top \\tilde L H)
    \\quad\\text{s.t. } F^{(m)}F^{(m)\\top} = I,\\; H^{(m)} = H,

with :math:`F^{(m)}` (``c_m x d_m``, :math:`c_m = \\min(c, d_m)`), :math:`W^{(m)}` (``k x c_m``),
:math:`H^{(m)}` and the global :math:`H` (``N x k``), and :math:`\\tilde L = \\sum_m L^{(m)}/(Mp)`
(a correction of the paper's literal reading, see docs/imk.md). With
:math:`\\alpha^{(m)} = 1/(2\\|R^{(m)}\\|_F)` (16) the data term
is the unsquared :math:`\\sum_m\\|R^{(m)}\\|_F` (Theorem 1), which is what :func:`objective` reports.

Client round (Algorithm 1, after the multiplier step :math:`\\Phi^{(m)} \\leftarrow \\Phi^{(m)} +
\\rho(H^{(m)} - H)` [A]):

* (24) :math:`F = \\tilde U\\tilde V^\\top`, thin SVD :math:`\\tilde U\\Sigma\\tilde V^\\top =
  W^\\top H^{(m)\\top}X` (orthogonal Procrustes), :func:`update_f`;
* (25) :math:`W = (H^{(m)\\top}H^{(m)} + \\epsilon I)^{-1}H^{(m)\\top}XF^\\top`, :func:`update_w`;
* (27) :math:`\\Delta = [2\\alpha RB^\\top - 4\\mu H^{(m)}(H^{(m)\\top}H^{(m)} - I) - \\Phi + \\rho(H -
  H^{(m)})](2\\alpha\\sigma' WW^\\top + (\\rho + \\ell)I)^{-1}`, :math:`B = WF`,
  :math:`\\ell = 4\\mu(3\\|H^{(m)}\\|_2^2 - 1)_+` (the majoriser of correction 3, optional),
  :math:`H^{(m)} \\leftarrow H^{(m)} + \\beta\\Delta`, :func:`h_step`; (24), (25) and (27) make
  one pass, and a round makes ``imk.local-iterations`` of them (1 in Algorithm 1);
* (16) :math:`\\alpha = 1/(2\\|X - H^{(m)}WF\\|_F)`, :func:`update_alpha`.

The server's side is in :mod:`fedmf_app.methods.imk.server_updates`.

A view may be a dense ndarray or a ``scipy.sparse`` matrix (kept as CSR): every product with it
is ``@`` and the residual is computed from ``k x d`` Gram terms (:func:`residual_norm`), so a
sparse view costs memory and time in its nonzeros; only ``zscore`` preprocessing (centring)
makes it dense (:func:`preprocess_view`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fedmf_app.common.clustering import kmeans_labels, spectral_labels
from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_similarity
from fedmf_app.common.scaling import normalise_rows
from fedmf_app.common.sparse import issparse
from fedmf_app.data.preprocess import SPARSE_ZERO_FRACTION, is_sparse_nonnegative
from fedmf_app.methods.imk.model import View, multiplier_step, normalised_indicator, ortho_penalty, relaxed
from fedmf_app.methods.imk.params import CLIENT_INITS, KNN_MAX_SAMPLES, STANDARDISATIONS, STARTS, IMKParams

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "ClientState",
    "ClientStats",
    "client_round",
    "h_step",
    "init_client",
    "preprocess_view",
    "residual_norm",
    "resolve_start",
    "start_labels",
    "update_alpha",
    "update_f",
    "update_w",
    "view_anchor_graph",
    "view_knn_graph",
]

_LOG = logging.getLogger(__name__)


@dataclass
class ClientState:
    """One client's private variables.

    Attributes
    ----------
    f : ndarray, shape (c_m, d_m)
        Orthonormal rows.
    w : ndarray, shape (k, c_m)
    h : ndarray, shape (N, k)
        :math:`H^{(m)}`.
    phi : ndarray, shape (N, k)
        :math:`\\Phi^{(m)}` (the server keeps an identical copy).
    alpha : float
    h_relaxed : ndarray, shape (N, k), or None
        What the next multiplier step reads for :math:`H^{(m)}`: its over-relaxation with the
        ``H`` of the round that produced it (:func:`~fedmf_app.methods.imk.model.relaxed`);
        ``None``: :math:`H^{(m)}` itself.
    """

    f: np.ndarray
    w: np.ndarray
    h: np.ndarray
    phi: np.ndarray
    alpha: float
    h_relaxed: np.ndarray | None = None


@dataclass(frozen=True)
class ClientStats:
    """Scalars a client reports after its round.

    Attributes
    ----------
    residual : float
        :math:`\\|X - H^{(m)}WF\\|_F` after the ``H`` step.
    ortho : float
        :math:`\\|H^{(m)\\top}H^{(m)} - I\\|_F^2`.
    alpha : float
        The new :math:`\\alpha^{(m)}`.
    """

    residual: float
    ortho: float
    alpha: float


# ------------------------------------------------------------------------------------------ data
def preprocess_view(x: View, standardise: str, unit_norm: bool) -> View:
    """Standardise a view and scale it to :math:`\\|X\\|_F = 1` (a correction of the paper's literal reading).

    Parameters
    ----------
    x : ndarray or sparse matrix, shape (N, d)
    standardise : {"auto", "zscore", "row-l2", "none"}
        Per-feature z-score (constant features become 0), per-sample l2 normalisation (for
        nonnegative text), nothing, or ``auto``: row-l2 on sparse nonnegative views
        (:func:`~fedmf_app.data.preprocess.is_sparse_nonnegative`, decided on the values, so a
        view gives the same choice dense or sparse), zscore on the others.
    unit_norm : bool
        Divide by the Frobenius norm afterwards.

    Returns
    -------
    ndarray or csr_matrix, shape (N, d), float64
        Sparse for a sparse ``x`` except under ``zscore``: centring fills every entry, so a
        sparse view is made dense first (logged; ``auto`` never picks zscore for a view with at
        least 90 % zeros that is nonnegative).
    """
    if issparse(x):
        import scipy.sparse as sp

        return _preprocess_sparse(sp.csr_matrix(x, dtype=np.float64), standardise, unit_norm)
    x = np.asarray(x, dtype=np.float64)
    if standardise == "auto":
        standardise = "row-l2" if is_sparse_nonnegative(x) else "zscore"
    if standardise == "zscore":
        std = x.std(axis=0)
        x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)
    elif standardise == "row-l2":
        x = normalise_rows(x)
    elif standardise != "none":
        raise ValueError(f"standardise {standardise!r} is not one of {STANDARDISATIONS}")
    if unit_norm:
        total = np.linalg.norm(x)
        if total > 0:
            x = x / total
    return x


def _preprocess_sparse(x: sp.csr_matrix, standardise: str, unit_norm: bool) -> View:
    """:func:`preprocess_view` of a CSR view, staying sparse except under ``zscore``."""
    import scipy.sparse as sp

    if standardise == "auto":
        size = x.shape[0] * x.shape[1]
        nonneg = x.nnz == 0 or x.data.min() >= 0
        zeros = size - np.count_nonzero(x.data)
        standardise = "row-l2" if size > 0 and nonneg and zeros >= SPARSE_ZERO_FRACTION * size else "zscore"
    if standardise == "zscore":
        _LOG.warning(
            "imk.standardise = zscore centres a sparse %d x %d view: it becomes dense (%.0f MB)",
            *x.shape,
            8e-6 * x.shape[0] * x.shape[1],
        )
        return preprocess_view(x.toarray(), standardise, unit_norm)
    if standardise == "row-l2":
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
        x = (sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ x).tocsr()
    elif standardise != "none":
        raise ValueError(f"standardise {standardise!r} is not one of {STANDARDISATIONS}")
    if unit_norm:
        total = float(np.sqrt(np.sum(x.data**2)))
        if total > 0:
            x = x / total
    return x


def view_anchor_graph(
    x: View, anchors: np.ndarray, neighbours: int, observed: np.ndarray | None = None
) -> sp.csr_matrix:
    """[A] This view's anchor graph :math:`Z^{(m)}` on the shared anchor samples.

    The anchors are the view's own rows at the shared sample indices, so anchor ``j`` is the same
    sample in every view and the :math:`Z^{(m)}` can be summed; the weights are SFMC's
    parameter-free ones (:func:`~fedmf_app.common.graphs.anchor_graph`) on the ``s`` nearest
    anchors, so every row lies on the simplex.

    With ``observed`` (run config ``imk.missing-graph = "observed"``) only the rows the view
    observes take part: an observed row is linked to its ``s`` nearest *observed* anchors, a
    missing row is all zero, and the column of an anchor the view does not observe is all zero.

    Parameters
    ----------
    x : ndarray or sparse matrix, shape (N, d)
        Preprocessed view.
    anchors : ndarray of int, shape (a,)
        Distinct sample indices, the same for every view.
    neighbours : int
        ``s``, anchors per sample; ``s + 1 <= a`` (with ``observed``: ``s + 1`` observed anchors).
    observed : ndarray of bool, shape (N,), optional
        The rows this view observes (its column of the run's missing-view mask); ``None``: every row.

    Returns
    -------
    csr_matrix, shape (N, a)
        Nonnegative, ``s`` nonzeros per (observed) row, which sums to one; missing rows are zero.

    Raises
    ------
    ValueError
        With ``observed``, when it is not a boolean mask of ``N`` rows or the view observes fewer
        than ``s + 1`` of the anchors.
    """
    import scipy.sparse as sp

    if observed is None:
        indices, values = anchor_graph(x, x[anchors], neighbours)
        return anchor_matrix(indices, values, anchors.size)
    rows = _observed_rows(observed, x.shape[0])
    kept = np.flatnonzero(observed[anchors])  # positions in ``anchors`` of the observed anchors
    if kept.size < neighbours + 1:
        raise ValueError(
            f"the view observes {kept.size} of the {anchors.size} anchor samples; an anchor graph "
            f"with imk.neighbours = {neighbours} over observed rows needs {neighbours + 1} "
            "(raise imk.anchors, or use imk.missing-graph = filled)"
        )
    indices, values = anchor_graph(x[rows], x[anchors[kept]], neighbours)
    return sp.csr_matrix(
        (values.ravel(), (np.repeat(rows, neighbours), kept[indices].ravel())),
        shape=(x.shape[0], anchors.size),
    )


def _observed_rows(observed: np.ndarray, num_rows: int) -> np.ndarray:
    """Indices of the observed rows, after checking that the mask column fits the view."""
    if observed.shape != (num_rows,) or observed.dtype != bool:
        raise ValueError(
            f"a boolean mask of shape ({num_rows},) is needed for a view of {num_rows} rows, got "
            f"{observed.dtype} of shape {observed.shape}"
        )
    return np.flatnonzero(observed)


def view_knn_graph(
    x: View, neighbours: int, similarity: str, observed: np.ndarray | None = None
) -> sp.csr_matrix:
    """This view's kNN similarity :math:`S^{(m)}`, on every row or on its observed rows only.

    With ``observed`` (run config ``imk.missing-graph = "observed"``) it is the kNN similarity of
    the observed rows alone (:func:`~fedmf_app.common.graphs.knn_similarity` of ``x[observed]``:
    neighbours among observed rows, the heat kernel's ``t`` from their edges) embedded in
    ``N x N``: a missing row has no edge.

    Parameters
    ----------
    x : ndarray or sparse matrix, shape (N, d)
        Preprocessed view.
    neighbours : int
        ``p``; below the number of (observed) rows.
    similarity : {"binary", "heat"}
    observed : ndarray of bool, shape (N,), optional
        The rows this view observes; ``None``: every row.

    Returns
    -------
    csr_matrix, shape (N, N)
        Symmetric, zero diagonal; zero rows and columns at the missing rows.

    Raises
    ------
    ValueError
        When the view has (observes) at most ``p`` rows, or ``observed`` is not a boolean mask
        of ``N`` rows.
    """
    import scipy.sparse as sp

    if observed is None:
        return knn_similarity(x, neighbours, similarity)
    rows = _observed_rows(observed, x.shape[0])
    if rows.size <= neighbours:
        raise ValueError(
            f"the view observes {rows.size} samples; a kNN graph with imk.neighbours = {neighbours} "
            f"over observed rows needs {neighbours + 1} (or use imk.missing-graph = filled)"
        )
    s = knn_similarity(x[rows], neighbours, similarity).tocoo()
    n = x.shape[0]
    return sp.csr_matrix((s.data, (rows[s.row], rows[s.col])), shape=(n, n))


# ------------------------------------------------------------------------------- client updates
def update_f(x: np.ndarray, h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(24): :math:`\\arg\\max_{FF^\\top = I}\\mathrm{Tr}(F X^\\top H W)`, orthogonal Procrustes.

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
    h : ndarray, shape (N, k)
    w : ndarray, shape (k, c)

    Returns
    -------
    ndarray, shape (c, d)
        :math:`\\tilde U\\tilde V^\\top` from the thin SVD of :math:`W^\\top H^\\top X`.
    """
    u, _, vt = np.linalg.svd(w.T @ (h.T @ x), full_matrices=False)
    return u @ vt


def update_w(x: np.ndarray, h: np.ndarray, f: np.ndarray, ridge: float) -> np.ndarray:
    """(25): :math:`W = (H^\\top H + \\epsilon I)^{-1}H^\\top X F^\\top`, least squares in ``W``.

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
    h : ndarray, shape (N, k)
    f : ndarray, shape (c, d)
    ridge : float

    Returns
    -------
    ndarray, shape (k, c)
    """
    k = h.shape[1]
    return np.linalg.solve(h.T @ h + ridge * np.eye(k), h.T @ (x @ f.T))


def residual_norm(x: View, h: np.ndarray, w: np.ndarray, f: np.ndarray) -> float:
    """:math:`\\|X - HWF\\|_F`.

    For a sparse ``x`` from :math:`\\|X\\|^2 - 2\\langle (HW)^\\top X, F\\rangle + \\langle
    (HW)^\\top HW, FF^\\top\\rangle` (never the dense ``N x d`` residual).
    """
    if issparse(x):
        hw = h @ w
        cross = float(np.sum((hw.T @ x) * f))
        square = float(np.sum(x.data**2)) - 2.0 * cross + float(np.sum((hw.T @ hw) * (f @ f.T)))
        return float(np.sqrt(max(square, 0.0)))
    return float(np.linalg.norm(x - h @ (w @ f)))


def update_alpha(x: np.ndarray, h: np.ndarray, w: np.ndarray, f: np.ndarray) -> float:
    """(16): :math:`\\alpha = 1/(2\\|X - HWF\\|_F)` (floored at a tiny residual)."""
    return _alpha(residual_norm(x, h, w, f))


def _alpha(residual: float) -> float:
    return 1.0 / (2.0 * max(residual, 1e-12))


def h_step(
    x: np.ndarray,
    state: ClientState,
    h_global: np.ndarray,
    params: IMKParams,
) -> np.ndarray:
    """(26)-(27): minimiser :math:`\\Delta` of the client's quadratic model (see module docstring).

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
    state : ClientState
        Current :math:`F, W, H^{(m)}, \\Phi^{(m)}, \\alpha`.
    h_global : ndarray, shape (N, k)
        Broadcast :math:`H`.
    params : IMKParams

    Returns
    -------
    ndarray, shape (N, k)
        :math:`\\Delta H^{(m)}`.
    """
    h, w, f, alpha = state.h, state.w, state.f, state.alpha
    k = h.shape[1]
    mu = params.local_mu
    b = w @ f
    rbt = x @ b.T - h @ (w @ w.T)  # R B^T with B B^T = W W^T
    gram = h.T @ h
    grad_orth = 4.0 * mu * h @ (gram - np.eye(k))
    numerator = 2.0 * alpha * rbt - grad_orth - state.phi + params.rho * (h_global - h)
    curvature = 0.0
    if mu > 0:  # the majoriser ell: without it the literal step diverges for mu >= 1
        curvature = max(4.0 * mu * (3.0 * np.linalg.norm(h, 2) ** 2 - 1.0), 0.0)
    denominator = 2.0 * alpha * params.sigma * (w @ w.T) + (params.rho + curvature) * np.eye(k)
    return np.linalg.solve(denominator, numerator.T).T  # denominator is symmetric


def client_round(
    x: np.ndarray,
    state: ClientState,
    h_global: np.ndarray,
    params: IMKParams,
    first: bool,
) -> tuple[ClientState, ClientStats]:
    """One client round of Algorithm 1: the multiplier step, then ``params.local_iterations``
    passes of (24), (25) and (27) against the same :math:`H` and :math:`\\Phi^{(m)}` (one pass is
    Algorithm 1), then (16) once.

    The multiplier step reads the previous round's over-relaxed copy (``state.h_relaxed``), and the
    round keeps this round's, :math:`aH^{(m)} + (1 - a)H` with :math:`a` = ``params.relaxation``,
    for the next one (the server's sum of them is what its ``H`` update reads).

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
        Preprocessed view.
    state : ClientState
        After the previous round (or :func:`init_client`).
    h_global : ndarray, shape (N, k)
        The broadcast :math:`H`.
    params : IMKParams
    first : bool
        True in round 1, where no multiplier step precedes the updates (:math:`\\Phi = 0`).

    Returns
    -------
    state : ClientState
    stats : ClientStats
    """
    previous = state.h if state.h_relaxed is None else state.h_relaxed
    phi = state.phi if first else multiplier_step(state.phi, previous, h_global, params.rho)
    f, w, h = state.f, state.w, state.h
    for _ in range(params.local_iterations):
        f = update_f(x, h, w)
        w = update_w(x, h, f, params.ridge)
        current = ClientState(f=f, w=w, h=h, phi=phi, alpha=state.alpha)
        h = h + params.beta * h_step(x, current, h_global, params)
    residual = residual_norm(x, h, w, f)  # once: (16) and the reported residual
    alpha = _alpha(residual)
    new = ClientState(f=f, w=w, h=h, phi=phi, alpha=alpha, h_relaxed=relaxed(h, h_global, params.relaxation))
    return new, ClientStats(residual=residual, ortho=ortho_penalty(h), alpha=alpha)


# ------------------------------------------------------------------------------- initialisation
def resolve_start(start: str, x: View) -> str:
    """[A] The start a view gets: ``start``, or for ``auto`` spectral on a dense view of at most
    :data:`~fedmf_app.methods.imk.params.KNN_MAX_SAMPLES` rows, k-means on a sparse nonnegative view
    (:func:`~fedmf_app.data.preprocess.is_sparse_nonnegative`, the rule of ``imk.standardise =
    auto``) and on a larger one.

    Parameters
    ----------
    start : {"auto", "kmeans", "spectral"}
        Run config ``imk.start``.
    x : ndarray or csr_matrix, shape (N, d)
        Preprocessed view.

    Returns
    -------
    {"kmeans", "spectral"}
    """
    if start not in STARTS:
        raise ValueError(f"start {start!r} is not one of {STARTS}")
    if start != "auto":
        return start
    large = x.shape[0] > KNN_MAX_SAMPLES
    return "kmeans" if large or is_sparse_nonnegative(x) else "spectral"


def start_labels(x: View, k: int, start: str, rng: np.random.Generator) -> np.ndarray:
    """[A] The clustering of a client's view that its initial :math:`H^{(m)}` indicates.

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
        Preprocessed view.
    k : int
        Clusters.
    start : {"auto", "kmeans", "spectral"}
        k-means on the rows (paper B), spectral clustering of their kNN graph
        (:func:`~fedmf_app.common.clustering.spectral_labels`), or ``auto``
        (:func:`resolve_start`).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (N,)
    """
    if resolve_start(start, x) == "spectral":
        return spectral_labels(x, k, rng)
    return kmeans_labels(x, k, rng)


def init_client(
    x: np.ndarray,
    k: int,
    latent_dim: int,
    num_clients: int,
    init: str,
    params: IMKParams,
    rng: np.random.Generator,
    start: str,
) -> ClientState:
    """[A] Initial private state of a client.

    :math:`H^{(m)}` indicates a clustering of the view (:func:`start_labels`; ``normalised-indicator``:
    entries :math:`1/\\sqrt{n_j}`; ``onehot-plus-0.2``: FedMVL's one-hot + 0.2); :math:`F` random
    orthonormal rows (QR); :math:`W` by (25); :math:`\\Phi = 0`; :math:`\\alpha = 1/M` [P].

    Parameters
    ----------
    x : ndarray or csr_matrix, shape (N, d)
        Preprocessed view.
    k : int
        Clusters.
    latent_dim : int
        ``c``; the client uses :math:`c_m = \\min(c, d_m)`.
    num_clients : int
    init : {"normalised-indicator", "onehot-plus-0.2"}
    params : IMKParams
    rng : numpy.random.Generator
    start : {"auto", "kmeans", "spectral"}
        Run config ``imk.start`` (:func:`start_labels`).

    Returns
    -------
    ClientState
    """
    labels = start_labels(x, k, start, rng)
    if init == "normalised-indicator":
        h = normalised_indicator(labels, k)
    elif init == "onehot-plus-0.2":
        h = np.eye(k)[labels] + 0.2
    else:
        raise ValueError(f"client init {init!r} is not one of {CLIENT_INITS}")
    c = min(latent_dim, x.shape[1])
    q, _ = np.linalg.qr(rng.standard_normal((x.shape[1], c)))
    f = q.T
    w = update_w(x, h, f, params.ridge)
    return ClientState(f=f, w=w, h=h, phi=np.zeros_like(h), alpha=1.0 / num_clients)
