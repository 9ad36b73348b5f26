"""FMVC-IMK (paper B): the server's updates (numpy/scipy only); the model is in
:mod:`fedmf_app.methods.imk.client_updates`.

Server (20): :math:`H = (2\\lambda\\tilde L + M\\rho I)^{-1}\\sum_m(\\Phi^{(m)} + \\rho H^{(m)})`;
never an ``N x N`` dense matrix.

* ``imk.graph = "knn"``: :math:`\\tilde L` is the sparse sum of the clients' kNN Laplacians, solved
  column by column with conjugate gradients warm-started at the previous :math:`H` (or a sparse LU
  factorisation made once), :class:`ServerSolver`.
* ``imk.graph = "anchor"``: :math:`\\tilde L = D - \\bar Z\\Lambda^{-1}\\bar Z^\\top`
  (:class:`AnchorLaplacian`) from the consensus anchor graph :math:`\\bar Z = \\sum_m Z^{(m)}/M`
  (``N x a``), :math:`\\Lambda = \\mathrm{diag}(\\bar Z^\\top 1)`, :math:`D = \\mathrm{diag}(S1)`
  (:math:`= I` for row-stochastic :math:`\\bar Z`; with it :math:`\\tilde L` stays an exact Laplacian
  after the fixed-point rounding of the secure sum), solved exactly by the Woodbury identity in
  :math:`O(Na^2)` once and :math:`O(Nak)` per round, :class:`WoodburySolver`. With
  ``imk.missing-graph = "observed"`` a view's missing rows and the columns of the anchors it does
  not observe are zero, so row ``i`` of :math:`\\bar Z` sums to :math:`c_i/M` (``c_i`` views
  observe sample ``i``) and, up to the rounding, :math:`D_{ii} = c_i/M`; nothing is divided by a
  row sum, a zero column of :math:`\\bar Z` is dropped, and the solve's diagonal
  :math:`2\\lambda D + M\\rho I` stays positive.

[A] ``ortho_placement = "global"`` moves the orthogonality penalty to the global :math:`H`: the
clients drop it and the server subtracts :math:`4\\mu H_{prev}(H_{prev}^\\top H_{prev} - I)`
(linearised at the previous :math:`H`) from the right-hand side of (20).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from fedmf_app.common.clustering import kmeans_labels
from fedmf_app.methods.imk.model import normalised_indicator, ortho_penalty
from fedmf_app.methods.imk.params import LABEL_RULES, SERVER_INITS, SERVER_SOLVERS, IMKParams

__all__ = [
    "AnchorLaplacian",
    "ServerSolver",
    "WoodburySolver",
    "extract_labels",
    "graph_term",
    "initial_global_h",
    "make_solver",
    "consensus_gap",
    "normalised_laplacian_sum",
    "objective",
    "server_rhs",
]


def initial_global_h(h_inits: list[np.ndarray], mode: str, rng: np.random.Generator) -> np.ndarray:
    """[A] The server's first :math:`H` from the clients' initial :math:`H^{(m)}`.

    ``kmeans-concat`` (a correction of the paper's literal reading): k-means on the concatenated
    :math:`[H^{(1)}, \\dots, H^{(M)}]`, as a normalised indicator (per-view cluster numbers are
    permuted, so averaging would mix clusters); ``mean``: :math:`\\frac1M\\sum_m H^{(m)}`.

    Parameters
    ----------
    h_inits : list of ndarray, each shape (N, k)
    mode : {"kmeans-concat", "mean"}
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (N, k)
    """
    if mode == "mean":
        return np.mean(np.stack(h_inits), axis=0)
    if mode != "kmeans-concat":
        raise ValueError(f"server init {mode!r} is not one of {SERVER_INITS}")
    k = h_inits[0].shape[1]
    return normalised_indicator(kmeans_labels(np.hstack(h_inits), k, rng), k)


# -------------------------------------------------------------------------------------- server
def normalised_laplacian_sum(laplacian_sum: sp.spmatrix, num_clients: int, neighbours: int) -> sp.csr_matrix:
    """:math:`\\tilde L = \\sum_m L^{(m)}/(Mp)` (corrects the paper's literal reading, see docs/imk.md)."""
    return (laplacian_sum / float(num_clients * neighbours)).tocsr()


def graph_term(laplacian: sp.spmatrix | AnchorLaplacian, h: np.ndarray) -> float:
    """:math:`\\mathrm{Tr}(H^\\top L H)` (``L`` sparse or an :class:`AnchorLaplacian`)."""
    return float(np.sum(h * (laplacian @ h)))


class AnchorLaplacian:
    """:math:`L = D - S`, :math:`S = \\bar Z\\Lambda^{-1}\\bar Z^\\top = BB^\\top`, kept as ``N x a`` factors.

    Parameters
    ----------
    z : sparse matrix, shape (N, a)
        Nonnegative consensus anchor graph :math:`\\bar Z` (rows on the simplex up to rounding,
        or below it for a sample some views do not observe, ``imk.missing-graph = "observed"``).
        Anchors no sample links to (zero columns) are dropped (:math:`\\Lambda^{+}`); a zero row
        gets degree 0.

    Attributes
    ----------
    factor : scipy.sparse.csr_matrix, shape (N, a')
        :math:`B = \\bar Z\\Lambda^{-1/2}` over the ``a'`` anchors with a nonzero column.
    degree : ndarray, shape (N,)
        :math:`D_{ii} = (S1)_i`.
    """

    def __init__(self, z: sp.spmatrix) -> None:
        z = sp.csr_matrix(z, dtype=np.float64)
        if z.nnz and z.data.min() < 0:
            raise ValueError("an anchor graph must be nonnegative")
        columns = np.asarray(z.sum(axis=0)).ravel()
        keep = np.flatnonzero(columns > 0)
        self.factor = (z[:, keep] @ sp.diags(1.0 / np.sqrt(columns[keep]))).tocsr()
        self.degree = self.factor @ (self.factor.T @ np.ones(z.shape[0]))

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, N)``."""
        n = self.factor.shape[0]
        return n, n

    def __matmul__(self, h: np.ndarray) -> np.ndarray:
        """:math:`LH = DH - B(B^\\top H)`, :math:`O(\\mathrm{nnz}(B)\\,k)`.

        Parameters
        ----------
        h : ndarray, shape (N,) or (N, k)

        Returns
        -------
        ndarray, same shape as ``h``
        """
        d = self.degree if h.ndim == 1 else self.degree[:, None]
        return d * h - self.factor @ (self.factor.T @ h)


def server_rhs(phi_sum: np.ndarray, h_sum: np.ndarray, rho: float) -> np.ndarray:
    """Right-hand side of (20): :math:`\\sum_m(\\Phi^{(m)} + \\rho H^{(m)})`, from the two sums.

    Parameters
    ----------
    phi_sum, h_sum : ndarray, shape (N, k)
        :math:`\\sum_m\\Phi^{(m)}` and :math:`\\sum_m H^{(m)}`.
    rho : float

    Returns
    -------
    ndarray, shape (N, k)
    """
    return phi_sum + rho * h_sum


def _check_finite(rhs: np.ndarray) -> None:
    if not np.all(np.isfinite(rhs)):
        raise FloatingPointError(
            "the clients' H^(m) are not finite: the local H step diverged (keep the orthogonality "
            "curvature on, or lower mu)"
        )


class _Update:
    """(20) from the uploads' sums: the right-hand side, then the subclass's ``solve(rhs, start)``."""

    def update(self, phi_sum: np.ndarray, h_sum: np.ndarray, h_prev: np.ndarray) -> np.ndarray:
        """(20), with the global orthogonality gradient subtracted when it sits on :math:`H`.

        Parameters
        ----------
        phi_sum : ndarray, shape (N, k)
            The sum of the multipliers the clients used this round.
        h_sum : ndarray, shape (N, k)
            The sum of the uploaded :math:`H^{(m)}`.
        h_prev : ndarray, shape (N, k)
            The previous global :math:`H` (CG warm start; linearisation point).

        Returns
        -------
        ndarray, shape (N, k)
        """
        rhs = server_rhs(phi_sum, h_sum, self.params.rho)
        if self.params.ortho_placement == "global" and self.params.mu > 0:
            k = h_prev.shape[1]
            rhs = rhs - 4.0 * self.params.mu * h_prev @ (h_prev.T @ h_prev - np.eye(k))
        return self.solve(rhs, h_prev)


@dataclass
class ServerSolver(_Update):
    """Solves (20), :math:`(2\\lambda\\tilde L + M\\rho I)H = \\text{rhs}`, keeping everything sparse.

    Parameters
    ----------
    laplacian : sparse matrix, shape (N, N)
        :math:`\\tilde L`.
    num_clients : int
    params : IMKParams
    method : {"cg", "splu"}
        Conjugate gradients per column, warm-started and Jacobi-preconditioned (default; the matrix
        is symmetric positive definite), or a sparse LU factorisation made once (fill-in makes it
        slow beyond a few thousand samples).
    tol : float
        Relative residual of CG.
    """

    laplacian: sp.spmatrix
    num_clients: int
    params: IMKParams
    method: str = "cg"
    tol: float = 1e-10
    _matrix: sp.csr_matrix = field(init=False, repr=False)
    _lu: object = field(init=False, default=None, repr=False)
    _precond: spla.LinearOperator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method not in SERVER_SOLVERS:
            raise ValueError(f"server solver {self.method!r} is not one of {SERVER_SOLVERS}")
        n = self.laplacian.shape[0]
        shift = self.num_clients * self.params.rho
        self._matrix = (2.0 * self.params.lam * self.laplacian + shift * sp.identity(n)).tocsr()
        if self.method == "splu":
            self._lu = spla.splu(self._matrix.tocsc())
        inv_diag = 1.0 / self._matrix.diagonal()
        self._precond = spla.LinearOperator((n, n), matvec=lambda v: inv_diag * v)

    @property
    def matrix(self) -> sp.csr_matrix:
        """:math:`2\\lambda\\tilde L + M\\rho I` (sparse)."""
        return self._matrix

    def solve(self, rhs: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """Solve for ``H``.

        Parameters
        ----------
        rhs : ndarray, shape (N, k)
        start : ndarray, shape (N, k), optional
            Warm start for CG (the previous ``H``).

        Returns
        -------
        ndarray, shape (N, k)

        Raises
        ------
        FloatingPointError
            When ``rhs`` is not finite or CG fails (a diverged client step).
        """
        _check_finite(rhs)
        if self._lu is not None:
            return self._lu.solve(rhs)
        out = np.empty_like(rhs)
        for j in range(rhs.shape[1]):
            x0 = None if start is None else start[:, j]
            out[:, j], info = spla.cg(
                self._matrix,
                rhs[:, j],
                x0=x0,
                rtol=self.tol,
                atol=0.0,
                M=self._precond,
                maxiter=10 * rhs.shape[0],
            )
            if info != 0:
                # the system is well conditioned (eigenvalues in [M rho, M rho + 2 lam ||L||]):
                # only overflowing uploads stop CG
                raise FloatingPointError(
                    f"CG did not converge on column {j} of the server H system (|H^(m)| up to "
                    f"{np.abs(rhs).max():.1e}: the local H step diverged)"
                )
        return out


class WoodburySolver(_Update):
    """Solves (20) exactly for an anchor-graph Laplacian, :math:`O(Na^2)` once and :math:`O(Nak)` per solve.

    With :math:`L = D - BB^\\top` the matrix is :math:`A - 2\\lambda BB^\\top`,
    :math:`A = 2\\lambda D + M\\rho I` diagonal, and by the Woodbury identity

    .. math::

        (A - 2\\lambda BB^\\top)^{-1} = A^{-1} + A^{-1}B\\,K^{-1}B^\\top A^{-1},
        \\qquad K = \\tfrac{1}{2\\lambda}I_a - B^\\top A^{-1}B,

    where :math:`K` (``a x a``) is positive definite because :math:`2\\lambda L + M\\rho I` is;
    it is factorised once (Cholesky).

    Parameters
    ----------
    laplacian : AnchorLaplacian
    num_clients : int
    params : IMKParams
    """

    def __init__(self, laplacian: AnchorLaplacian, num_clients: int, params: IMKParams) -> None:
        self.laplacian = laplacian
        self.params = params
        self._diag = 2.0 * params.lam * laplacian.degree + num_clients * params.rho
        self._cho = None
        if params.lam > 0:
            b = laplacian.factor
            inner = (b.T @ sp.diags(1.0 / self._diag) @ b).toarray()
            self._cho = sla.cho_factor(np.eye(b.shape[1]) / (2.0 * params.lam) - inner)

    def solve(self, rhs: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
        """Solve for ``H`` (exactly; no warm start needed).

        Parameters
        ----------
        rhs : ndarray, shape (N, k)
        start : ndarray, optional
            Unused (the signature of :meth:`ServerSolver.solve`).

        Returns
        -------
        ndarray, shape (N, k)

        Raises
        ------
        FloatingPointError
            When ``rhs`` is not finite (a diverged client step).
        """
        _check_finite(rhs)
        y = rhs / self._diag[:, None]
        if self._cho is None:
            return y
        b = self.laplacian.factor
        return y + (b @ sla.cho_solve(self._cho, b.T @ y)) / self._diag[:, None]


def make_solver(
    laplacian: sp.spmatrix | AnchorLaplacian, num_clients: int, params: IMKParams, method: str
) -> ServerSolver | WoodburySolver:
    """The solver of (20) for the graph at hand.

    Parameters
    ----------
    laplacian : sparse matrix or AnchorLaplacian, shape (N, N)
        :math:`\\tilde L`.
    num_clients : int
    params : IMKParams
    method : {"cg", "splu"}
        For a sparse (kNN) Laplacian; an anchor Laplacian is always solved by Woodbury.

    Returns
    -------
    ServerSolver or WoodburySolver
    """
    if isinstance(laplacian, AnchorLaplacian):
        return WoodburySolver(laplacian, num_clients, params)
    return ServerSolver(laplacian, num_clients, params, method)


def objective(
    residual_sum: float,
    ortho_sum: float,
    h_global: np.ndarray,
    laplacian: sp.spmatrix | AnchorLaplacian,
    params: IMKParams,
) -> dict[str, float]:
    """Objective (11) form: :math:`\\sum_m\\|R^{(m)}\\|_F + \\mu\\cdot\\text{orth} +
    \\lambda\\mathrm{Tr}(H^\\top\\tilde LH)`.

    Parameters
    ----------
    residual_sum : float
        :math:`\\sum_m\\|X^{(m)} - H^{(m)}W^{(m)}F^{(m)}\\|_F`.
    ortho_sum : float
        :math:`\\sum_m\\|H^{(m)\\top}H^{(m)} - I\\|_F^2` (used with local placement).
    h_global : ndarray, shape (N, k)
    laplacian : sparse matrix or AnchorLaplacian, shape (N, N)
        :math:`\\tilde L`.
    params : IMKParams

    Returns
    -------
    dict
        ``objective``, ``data_term``, ``ortho_term``, ``graph_term``.
    """
    data = float(residual_sum)
    if params.ortho_placement == "local":
        ortho = params.mu * float(ortho_sum)
    else:
        ortho = params.mu * ortho_penalty(h_global)
    graph = params.lam * graph_term(laplacian, h_global)
    return {"objective": data + ortho + graph, "data_term": data, "ortho_term": ortho, "graph_term": graph}


def consensus_gap(h_squared_norm_sum: float, h_sum: np.ndarray, h_global: np.ndarray, m: int) -> float:
    """:math:`\\sqrt{\\sum_m\\|H^{(m)} - H\\|_F^2}` from sums only:
    :math:`\\sum_m\\|H^{(m)}\\|^2 - 2\\langle\\sum_m H^{(m)}, H\\rangle + M\\|H\\|^2`.

    Parameters
    ----------
    h_squared_norm_sum : float
        :math:`\\sum_m\\|H^{(m)}\\|_F^2`.
    h_sum : ndarray, shape (N, k)
        :math:`\\sum_m H^{(m)}`.
    h_global : ndarray, shape (N, k)
        :math:`H`.
    m : int
        Clients.

    Returns
    -------
    float
        The gap; the expansion cancels, so a gap below about :math:`10^{-7}\\sqrt{M\\|H\\|^2}`
        carries rounding (a negative rounding is read as 0).
    """
    gap = h_squared_norm_sum - 2.0 * float(np.sum(h_sum * h_global)) + m * float(np.sum(h_global**2))
    return float(np.sqrt(max(gap, 0.0)))


def extract_labels(h: np.ndarray, rule: str, rng: np.random.Generator) -> np.ndarray:
    """[A] Cluster labels from the global :math:`H`.

    Parameters
    ----------
    h : ndarray, shape (N, k)
    rule : {"argmax", "kmeans"}
        :math:`\\arg\\max_j H_{ij}`, or k-means on the row-normalised :math:`H` (FedMVL).
    rng : numpy.random.Generator
        Used by ``kmeans``.

    Returns
    -------
    ndarray of int64, shape (N,)
    """
    if rule == "argmax":
        return np.argmax(h, axis=1).astype(np.int64)
    if rule != "kmeans":
        raise ValueError(f"label rule {rule!r} is not one of {LABEL_RULES}")
    norms = np.linalg.norm(h, axis=1, keepdims=True)
    return kmeans_labels(h / np.where(norms > 0, norms, 1.0), h.shape[1], rng)
