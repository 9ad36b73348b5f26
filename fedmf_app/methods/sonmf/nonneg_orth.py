"""Nonnegative-orthogonal basis subproblem of paper A (Section 3.1, problem (7)).

Solves, for one client,

.. math::
    \\min_{U \\ge 0,\\; U^\\top U = I_r} \\; \\varphi(U) = \\|X - U V\\|_F^2
        + \\frac{\\rho_1}{2}\\|U - U_0\\|_F^2 ,

by one of two methods (``BasisSolverOptions.method``).

``"penalty"``: the exact-penalty method of Jiang, Meng, Wen & Chen (2023) (``EP4Orth``), paper A's
solver, as reconstructed in ``docs/sonmf.md``:

* keep ``U`` on the nonnegative part of the oblique manifold (unit columns, ``U >= 0``) and penalise
  the loss of orthogonality with :math:`\\sigma(\\|Uw\\|_2^2 - 1)`, :math:`w = 1_r/\\sqrt r`
  (for nonnegative unit columns :math:`\\|Uw\\|^2 \\ge 1`, with equality iff the columns are
  orthogonal, i.e. have disjoint supports);
* minimise the penalised function by projected gradient with a Barzilai-Borwein step and the
  nonmonotone Zhang-Hager line search (``penalf_ob.m``), raising :math:`\\sigma` between outer
  iterations;
* round (``round_st.m``: keep the largest entry of each row, renormalise the columns), which makes
  ``U`` exactly feasible, and polish: on fixed disjoint supports ``S_j`` the problem has the closed
  form ``u_j = normalise(max(A, 0) restricted to S_j)`` with :math:`A = 2XV^\\top + \\rho_1 U_0`.

``"assignment"`` ([A]): on the feasible set :math:`U^\\top U = I`, so
:math:`\\varphi(U) = \\text{const} - \\langle U, A\\rangle` and the subproblem is the choice of the
disjoint supports (which column owns each feature) followed by the same closed form. Starting from
two assignments, the supports of ``U_0`` and each feature given to the column where its normalised
:math:`A^+` is largest, rows are moved one at a time while a move raises
:math:`\\sum_j \\|A^+_{S_j, j}\\|` (:func:`~fedmf_app.methods.sonmf.assignment_kernel.assignment_ascent`,
``O(d r)`` per pass), and the better end point is kept. Exactly feasible at every step, no penalty
parameter; on the development sets it reaches the penalty method's objective in a small fraction of
its time.

Either solver never returns a point worse than the (feasible) warm start ``U_0``: when its point
has a larger :math:`\\varphi`, ``U_0`` is returned and ``BasisSolveInfo.kept_start`` says so. This
keeps the outer alternating minimisation monotone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmf_app.common.feasible_basis import project_oblique_nonneg, random_feasible_basis, round_to_feasible
from fedmf_app.methods.sonmf.assignment_kernel import compiled_assignment_ascent, vectorised_assignment_ascent
from fedmf_app.methods.sonmf.penalty_kernel import compiled_penalty_loop, penalty_loop
from fedmf_app.methods.sonmf.residual_products import residual_times_vt, squared_norm, squared_residual
from fedmf_app.options.constraints import OneOf
from fedmf_app.options.schema import option

__all__ = [
    "BASIS_SOLVERS",
    "BasisSolverOptions",
    "BasisStep",
    "BasisSolveInfo",
    "basis_objective",
    "basis_residual",
    "is_feasible_basis",
    "project_oblique_nonneg",
    "random_feasible_basis",
    "round_to_feasible",
    "polish_on_supports",
    "solve_basis",
]

#: Methods of the basis subproblem (``BasisSolverOptions.method``).
BASIS_SOLVERS = ("assignment", "penalty")

#: How the solver's loop runs (``BasisSolverOptions.kernel``).
BASIS_KERNELS = ("compiled", "numpy")


@dataclass(frozen=True)
class BasisSolverOptions:
    """Options of :func:`solve_basis` (defaults from the EP4Orth code unless marked [A]).

    Parameters
    ----------
    sigma0 : float
        Initial penalty parameter, restarted at every solve (restarting, rather than carrying sigma
        across local steps, avoids frozen supports).
    sigma_growth : float
        Factor applied to sigma after each outer iteration.
    sigma_max : float
        Cap on sigma.
    max_outer : int
        Maximum number of outer (penalty) iterations.
    max_inner : int
        Maximum projected-gradient iterations per outer iteration.
    inner_tol0, inner_tol_decay, inner_tol_min : float
        Inner tolerance on ``||min(U, grad P_sigma(U))||_F``: starts at ``inner_tol0``, multiplied by
        ``inner_tol_decay`` per outer iteration, floored at ``inner_tol_min``. [A] ``inner_tol0`` is
        1e-2 rather than EP4Orth's 0.1: on the scaled subproblem 0.1 is met at the warm start, the
        inner solver never moves, and the alternating method stalls far from a planted
        factorisation.
    feasibility_tol : float
        Outer stop when ``| ||Uw||^2 - 1 | <= feasibility_tol``.
    scale : bool
        [A, on by default] Divide the subproblem by ``||2 X V^T + rho1 U0||_F`` so that ``sigma0``
        means the same at every data scale.
    method : {"assignment", "penalty"}
        [A, ``assignment``] The solver (module docstring): row-assignment ascent on the supports, or
        paper A's exact-penalty method. ``max_outer`` bounds the assignment's passes; the other
        fields belong to the penalty method.
    kernel : {"compiled", "numpy"}
        [A, ``compiled``] How the solver's loop (the assignment ascent or the penalty loop) runs:
        compiled by numba (compiled once per machine and app version, a few seconds; then about
        1 s per process to import numba and load it) or in numpy. The two take the same steps: the
        assignment ascent gives the same supports, and for the penalty loop rounding and polishing
        make their results agree.
    """

    sigma0: float = 1e-3
    sigma_growth: float = 1.05
    sigma_max: float = 1e5
    max_outer: int = 300
    max_inner: int = 20
    inner_tol0: float = 1e-2
    inner_tol_decay: float = 0.98
    inner_tol_min: float = 1e-7
    feasibility_tol: float = 1e-8
    scale: bool = True
    kernel: str = option(
        "sonmf.basis-kernel",
        "compiled",
        OneOf(BASIS_KERNELS),
        "U solver: its loop (the assignment ascent or the penalty loop) compiled by numba "
        "(`compiled`, [A]: about 30x faster per ascent than numpy's vectorised one on HW's "
        "views, 5-20x per penalty solve; compiled once per machine and app version, then about "
        "1 s per process to load) or in `numpy` (no numba: better where each message starts a "
        "new process, as on a deployed SuperNode; the federation command's default).",
    )
    method: str = "assignment"

    def __post_init__(self) -> None:
        if self.method not in BASIS_SOLVERS:
            raise ValueError(f"method must be one of {BASIS_SOLVERS}, got {self.method!r}")


@dataclass(frozen=True)
class BasisSolveInfo:
    """Diagnostics of one :func:`solve_basis` call.

    Attributes
    ----------
    outer_iterations, inner_iterations : int
        Work done: outer (penalty) and inner iterations of the penalty method; passes of the
        assignment ascent and 0.
    orthogonality_gap : float
        ``||Uw||^2 - 1`` before rounding (0 means the penalty method reached disjoint supports;
        always 0 for the assignment method, which stays feasible).
    rounded : bool
        Whether the rounding step could be applied (every column received a row).
    kept_start : bool
        Whether the warm start was returned because the new point was not better.
    objective : float
        :math:`\\varphi` at the returned point.
    """

    outer_iterations: int
    inner_iterations: int
    orthogonality_gap: float
    rounded: bool
    kept_start: bool
    objective: float


@dataclass(frozen=True)
class BasisStep:
    """The ``U`` step of a run, built once (:attr:`~fedmf_app.methods.sonmf.updates.SONMFParams.basis_step`):
    the solver with its options and the proximal weight's rule. Every ``U`` step of paper A's
    methods calls it; what the solver needs of ``V`` it says itself (:attr:`needs_gram`).

    Parameters
    ----------
    options : BasisSolverOptions
        The solver (assignment ascent or penalty method) and its loop (compiled or numpy).
    rho1 : float
        :math:`\\rho_1`, the proximal weight, relative to the data term (``rho1_scale = "data"``) or
        as it is (``"absolute"``).
    rho1_scale : {"data", "absolute"}
    """

    options: BasisSolverOptions
    rho1: float
    rho1_scale: str

    @property
    def needs_gram(self) -> bool:
        """Whether the solver reads all of :math:`VV^\\top` (the penalty method) rather than only its
        diagonal, the rows' squared norms (the assignment ascent)."""
        return self.options.method != "assignment"

    def weight(self, v_squared_norm: float, rank: int) -> float:
        """Proximal weight of a step at a ``V`` with :math:`\\|V\\|_F^2` = ``v_squared_norm``.

        With ``rho1_scale = "data"``, :math:`\\rho_1 \\cdot 2\\|V\\|_F^2 / r`: on the feasible set the
        subproblem is :math:`\\text{const} - \\langle U, 2XV^\\top + \\rho_1 U_0\\rangle`, and with
        :math:`V \\approx U^\\top X` the data part :math:`\\langle U, 2XV^\\top\\rangle \\approx 2\\|V\\|_F^2`
        while the proximal part :math:`\\rho_1\\langle U, U_0\\rangle \\le \\rho_1 r`; so ``rho1`` is
        the weight of the pull towards :math:`U_0` relative to the data's, at every data scale.

        Parameters
        ----------
        v_squared_norm : float
        rank : int

        Returns
        -------
        float
        """
        if self.rho1_scale == "absolute":
            return self.rho1
        return self.rho1 * 2.0 * v_squared_norm / rank

    def __call__(
        self,
        x: np.ndarray,
        u: np.ndarray,
        v: np.ndarray,
        *,
        xvt: np.ndarray | None = None,
        x_squared_norm: float | None = None,
    ) -> np.ndarray:
        """One ``U`` step at ``v`` from the feasible ``u`` (:func:`solve_basis`).

        Parameters
        ----------
        x : ndarray or scipy sparse matrix, shape (d, n)
        u : ndarray, shape (d, r)
            Warm start and proximal centre.
        v : ndarray, shape (r, n)
        xvt : ndarray, shape (d, r), optional
            :math:`XV^\\top` when the caller has it.
        x_squared_norm : float, optional
            :math:`\\|X\\|_F^2` when the caller has it.

        Returns
        -------
        ndarray, shape (d, r)
        """
        weight = self.weight(float(np.vdot(v, v)), v.shape[0])
        return solve_basis(x, v, u, weight, self.options, xvt=xvt, x_squared_norm=x_squared_norm)[0]

    def at_products(
        self,
        x: np.ndarray,
        u: np.ndarray,
        xvt: np.ndarray,
        row_squared_norms: np.ndarray,
        gram: np.ndarray | None,
        x_squared_norm: float,
    ) -> np.ndarray:
        """One ``U`` step at a ``V`` known only through its products with ``X`` and itself.

        Parameters
        ----------
        x : ndarray, shape (d, n)
        u : ndarray, shape (d, r)
        xvt : ndarray, shape (d, r)
            :math:`XV^\\top`.
        row_squared_norms : ndarray, shape (r,)
            :math:`\\|v_j\\|^2`, the diagonal of :math:`VV^\\top`.
        gram : ndarray, shape (r, r), or None
            :math:`VV^\\top`, needed only when :attr:`needs_gram`.
        x_squared_norm : float

        Returns
        -------
        ndarray, shape (d, r)
        """
        weight = self.weight(float(row_squared_norms.sum()), row_squared_norms.size)
        vvt = gram if self.needs_gram else np.diag(row_squared_norms)
        return solve_basis(x, None, u, weight, self.options, xvt=xvt, x_squared_norm=x_squared_norm, vvt=vvt)[
            0
        ]


def polish_on_supports(u: np.ndarray, a: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
    """Exact minimiser of ``-<U, A>`` over unit nonnegative columns supported on ``supp(U_{.j})``.

    For a feasible ``U`` with disjoint column supports :math:`S_j`, :math:`U^\\top U = I` and
    :math:`\\varphi(U) = \\text{const} - \\langle U, A\\rangle`; the minimiser on those supports is
    ``u_j = max(A_{S_j, j}, 0) / ||max(A_{S_j, j}, 0)||`` (the unit vector at the largest entry of
    ``A_{S_j, j}`` when none is positive). Where columns may be zero (``cost`` given, a view with
    fewer features than columns), :math:`\\varphi = \\text{const} - \\sum_j \\delta_j
    (\\langle u_j, a_j\\rangle - c_j)` and column ``j`` is kept only when
    ``||max(A_{S_j, j}, 0)|| > c_j``; an empty support gives a zero column.

    Parameters
    ----------
    u : ndarray, shape (d, r)
        Feasible basis whose supports are kept.
    a : ndarray, shape (d, r)
        Linear term ``2 X V^T + rho1 U0``.
    cost : ndarray, shape (r,), optional
        Cost :math:`c_j = \\|V_{j\\cdot}\\|^2 + \\rho_1/2` of an active column where columns may be
        zero; None: every column is a unit vector.

    Returns
    -------
    ndarray, shape (d, r)
    """
    support = u > 0.0
    masked = np.where(support, a, -np.inf)
    pos = np.where(support, np.maximum(a, 0.0), 0.0)
    norms = np.linalg.norm(pos, axis=0)
    out = np.zeros_like(u)
    ok = norms > 0.0 if cost is None else norms > cost
    out[:, ok] = pos[:, ok] / norms[ok]
    if cost is None:
        for j in np.flatnonzero(~ok):
            out[np.argmax(masked[:, j]), j] = 1.0
    return out


def is_feasible_basis(u: np.ndarray, tol: float = 1e-10) -> bool:
    """Whether ``U >= 0`` and ``||U^T U - I||_max <= tol``.

    Parameters
    ----------
    u : ndarray, shape (d, r)
    tol : float

    Returns
    -------
    bool
    """
    r = u.shape[1]
    return bool(np.all(u >= 0.0) and np.max(np.abs(u.T @ u - np.eye(r))) <= tol)


def basis_objective(x: np.ndarray, v: np.ndarray, u: np.ndarray, u0: np.ndarray, rho1: float) -> float:
    """:math:`\\varphi(U) = \\|X - UV\\|_F^2 + (\\rho_1/2)\\|U - U_0\\|_F^2`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    v : ndarray, shape (r, n)
    u, u0 : ndarray, shape (d, r)
    rho1 : float

    Returns
    -------
    float
    """
    return float(squared_residual(x, u, v) + 0.5 * rho1 * np.linalg.norm(u - u0) ** 2)


def basis_residual(x: np.ndarray, v: np.ndarray, u: np.ndarray, xvt: np.ndarray | None = None) -> float:
    """Weak stationarity of a feasible ``U`` on its supports ([A] proxy).

    .. math::
        r = \\sum_j \\bigl\\| \\bigl(g_{\\cdot j} - (u_j^\\top g_{\\cdot j})\\, u_j\\bigr)
            \\odot 1_{S_j} \\bigr\\|_2^2, \\qquad g = \\nabla_U f(U, V) = 2 (UV - X) V^\\top .

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    v : ndarray, shape (r, n)
    u : ndarray, shape (d, r)
        Feasible basis (disjoint column supports).
    xvt : ndarray, shape (d, r), optional
        :math:`XV^\\top` when the caller has it (then ``x`` is not read).

    Returns
    -------
    float
    """
    g = 2.0 * residual_times_vt(x, u, v, xvt)
    tangent = g - u * np.einsum("ij,ij->j", u, g)
    return float(np.sum(np.where(u > 0.0, tangent, 0.0) ** 2))


def solve_basis(
    x: np.ndarray,
    v: np.ndarray,
    u0: np.ndarray,
    rho1: float,
    options: BasisSolverOptions = BasisSolverOptions(),
    *,
    xvt: np.ndarray | None = None,
    x_squared_norm: float | None = None,
    vvt: np.ndarray | None = None,
) -> tuple[np.ndarray, BasisSolveInfo]:
    """Solve the basis subproblem (7) from the feasible warm start ``u0``.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
        Client data, features x samples.
    v : ndarray, shape (r, n), or None
        Current (post-proximal) coefficient matrix; ``None`` when ``xvt`` and ``vvt`` are given
        (the solver needs ``V`` only through them).
    u0 : ndarray, shape (d, r)
        Feasible warm start and proximal centre :math:`U_p^{s,k}`.
    rho1 : float
        Proximal weight :math:`\\rho_1 \\ge 0`.
    options : BasisSolverOptions
    xvt : ndarray, shape (d, r), optional
        :math:`XV^\\top` when the caller has it (the only product with ``X``).
    x_squared_norm : float, optional
        :math:`\\|X\\|_F^2` when the caller has it (the same at every step).
    vvt : ndarray, shape (r, r), optional
        :math:`VV^\\top` when the caller has it.

    Returns
    -------
    u : ndarray, shape (d, r)
        Feasible basis (``U >= 0``, ``U^T U = I``) with ``phi(u) <= phi(u0)``.
    info : BasisSolveInfo
    """
    d, r = u0.shape
    data_term = 2.0 * (np.asarray(x @ v.T) if xvt is None else xvt)
    a = data_term + rho1 * u0
    if d >= r:
        # Both points are feasible (U^T U = I), where ||X - UV||^2 = ||X||^2 - <U, 2XV^T> + ||V||^2.
        offset = (squared_norm(x) if x_squared_norm is None else x_squared_norm) + (
            float(np.trace(vvt)) if v is None else float(np.vdot(v, v))
        )
        cost = None

        def phi(u):
            return offset - float(np.vdot(u, data_term)) + 0.5 * rho1 * float(np.vdot(u - u0, u - u0))

    else:
        # U^T U = diag(delta): ||X - UV||^2 = ||X||^2 - <U, 2XV^T> + sum_j ||u_j||^2 ||v_j||^2.
        if options.method != "assignment":
            raise ValueError(
                f"a view with {d} features and rank {r} (some columns zero) needs the 'assignment' "
                f"U solver, not {options.method!r}"
            )
        offset = squared_norm(x) if x_squared_norm is None else x_squared_norm
        v_sq = np.diagonal(vvt).copy() if v is None else np.einsum("ij,ij->i", v, v)
        cost = v_sq + 0.5 * rho1

        def phi(u):
            return (
                offset
                - float(np.vdot(u, data_term))
                + float(np.einsum("ij,ij->j", u, u) @ v_sq)
                + 0.5 * rho1 * float(np.vdot(u - u0, u - u0))
            )

    phi0 = phi(u0)
    if options.method == "assignment":
        u, passes = _assignment(u0, a, options.max_outer, options.kernel, cost)
        value = phi(u)
        if value <= phi0:
            return u, BasisSolveInfo(passes, 0, 0.0, True, False, value)
        return u0.copy(), BasisSolveInfo(passes, 0, 0.0, True, True, phi0)
    if vvt is None:
        vvt = v @ v.T
    scale = float(np.linalg.norm(a)) if options.scale else 1.0
    if scale <= 0.0:
        scale = 1.0
    # Smooth part on the oblique manifold, up to a constant: psi(U) = <U^T U, VV^T> - <U, A>.
    q = vvt / scale
    b = a / scale
    u, outer, inner_total, gap = _exact_penalty(project_oblique_nonneg(u0), q, b, 1.0 / r, options)

    rounded = round_to_feasible(u)
    candidate = None
    if rounded is not None:
        candidate = polish_on_supports(rounded, a)
    if candidate is not None:
        value = phi(candidate)
        if value <= phi0:
            return candidate, BasisSolveInfo(outer, inner_total, gap, True, False, value)
    return u0.copy(), BasisSolveInfo(outer, inner_total, gap, rounded is not None, True, phi0)


def _assignment(u0, a, max_passes, kernel, cost=None):
    """Row-assignment ascent from two starts (module docstring); the better end point, polished.

    Parameters
    ----------
    u0 : ndarray, shape (d, r)
        Feasible warm start (its supports are the first start).
    a : ndarray, shape (d, r)
        Linear term ``2 X V^T + rho1 U0``.
    max_passes : int
        Maximum passes of each ascent.
    kernel : {"compiled", "numpy"}
        :func:`~fedmf_app.methods.sonmf.assignment_kernel.assignment_ascent` compiled by numba, or
        :func:`~fedmf_app.methods.sonmf.assignment_kernel.vectorised_assignment_ascent` (same
        moves, no numba import and no compilation).
    cost : ndarray, shape (r,), optional
        Cost of an active column where columns may be zero (``d < r``,
        :func:`polish_on_supports`); None: every column a unit vector.

    Returns
    -------
    u : ndarray, shape (d, r)
        Feasible basis on the best supports found.
    passes : int
        Passes of the ascent that gave it.
    """
    ascent = vectorised_assignment_ascent if kernel == "numpy" else compiled_assignment_ascent()

    d, r = u0.shape
    positive = np.maximum(a, 0.0)
    sq = positive * positive
    starts = [np.where(u0.max(axis=1) > 0.0, np.argmax(u0, axis=1), -1)]
    norms = np.sqrt(sq.sum(axis=0))
    greedy = np.argmax(positive / np.where(norms > 0.0, norms, 1.0), axis=1)
    greedy[positive.max(axis=1) <= 0.0] = -1
    if cost is not None or np.all(np.bincount(greedy[greedy >= 0], minlength=r) > 0):
        starts.append(greedy)
    column_cost = np.zeros(r) if cost is None else np.ascontiguousarray(cost, dtype=np.float64)
    best = None
    for start in starts:
        owner = np.ascontiguousarray(start, dtype=np.int64)
        value, passes = ascent(sq, owner, int(max_passes), column_cost, cost is None)
        if best is None or value > best[0]:
            best = (value, owner, int(passes))
    _, owner, passes = best
    support = np.zeros((d, r))
    owned = np.flatnonzero(owner >= 0)
    support[owned, owner[owned]] = 1.0
    return polish_on_supports(support, a, cost), passes


def _exact_penalty(u, q, b, inv_r, options):
    """Outer penalty loop of EP4Orth with the projected-gradient inner solver (``penalf_ob.m``).

    Inner solver: projected gradient with Barzilai-Borwein steps and the Zhang-Hager nonmonotone
    line search (gamma = 0.85, halving, acceptance ``1e-6 / t * ||dU||^2``), stopped when
    ``||min(U, grad_R P_sigma(U))||_F <= tol``
    (:func:`~fedmf_app.methods.sonmf.penalty_kernel.penalty_loop`). ``options.kernel`` says how it
    runs: compiled by numba (the matrices are ``d x r``, so interpreted code spends its time in
    call overhead) or as plain Python (``numpy``: no numba import and no compilation, cheaper in
    a process that solves only a few small subproblems).

    Returns the point, the outer and inner iteration counts and the final ``||Uw||^2 - 1``.
    """
    loop = penalty_loop if options.kernel == "numpy" else compiled_penalty_loop()
    out, outer, inner_total, gap = loop(
        np.ascontiguousarray(u, dtype=np.float64),
        np.ascontiguousarray(q, dtype=np.float64),
        np.ascontiguousarray(b, dtype=np.float64),
        float(inv_r),
        float(options.sigma0),
        float(options.sigma_growth),
        float(options.sigma_max),
        int(options.max_outer),
        int(options.max_inner),
        float(options.inner_tol0),
        float(options.inner_tol_decay),
        float(options.inner_tol_min),
        float(options.feasibility_tol),
    )
    return out, int(outer), int(inner_total), float(gap)
