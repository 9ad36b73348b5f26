"""Federated sparse ONMF with variable splitting and drift correction (paper A, Algorithm 1).

Problem (3): with ``m`` clients each holding a view ``X_p`` (``d_p x n``),

.. math::
    \\min_{\\{U_p\\}, V} \\; \\frac1m \\sum_p \\|X_p - U_p V\\|_F^2 + \\mu\\|V\\|_{2,1}
    \\quad \\text{s.t. } U_p \\ge 0,\\; U_p^\\top U_p = I,\\; V \\ge 0 .

One round ``s`` (``docs/sonmf.md``), with :math:`\\tilde\\eta = \\eta_g\\tau\\alpha`:

client ``p`` (:func:`local_round`)
    :math:`V^s = P_{\\tilde\\eta\\mu}(\\bar V^s)`;
    correction :math:`C_p^s = (V^{s-1} - \\bar V^s)/\\tilde\\eta - G_p^{s-1}` (``C_p^1 = 0``);
    :math:`\\hat V^0 = V^0 = V^s`; for ``k < tau``: ``U`` step (:attr:`SONMFParams.basis_step`),
    :math:`g_k = \\nabla_V f_p(U^{k+1}, V^k)`, :math:`\\hat V^{k+1} = \\hat V^k - \\alpha(g_k + C_p^s)`,
    :math:`V^{k+1} = P_{(k+1)\\alpha\\mu}(\\hat V^{k+1})`; upload :math:`\\hat V^\\tau`;
    keep :math:`G_p^s = \\frac1\\tau\\sum_k g_k` and :math:`V^s`.

server (:func:`server_step`)
    :math:`\\bar V^{s+1} = V^s + \\eta_g(\\frac1m\\sum_p \\hat V_p - V^s)`,
    :math:`V^{s+1} = P_{\\tilde\\eta\\mu}(\\bar V^{s+1})`.

The corrections average to zero over the clients (given full participation and one
:math:`\\tilde\\eta` for all), so :math:`\\bar V^{s+1} = V^s - \\tilde\\eta \\frac1m\\sum_p G_p^s`.

Ablation "V updated only at the server" (``v_update = "server"``): client ``p``
runs ``tau`` ``U`` steps with ``V`` fixed at :math:`V^s` (:func:`fixed_v_round`) and uploads
:math:`G_p^s = \\frac1\\tau\\sum_k \\nabla_V f_p(U_p^{s,k+1}, V^s)`; the server takes one
proximal gradient step :math:`\\bar V^{s+1} = V^s - \\eta\\,\\frac1m\\sum_p G_p^s`,
:math:`V^{s+1} = P_{\\eta\\mu}(\\bar V^{s+1})` (:func:`prox_gradient_step`) with
:math:`\\eta = \\eta_g\\alpha` (``server_step = "global-times-local"``, the ablation's reading [A]:
local copies gain through the larger :math:`\\tilde\\eta`) or :math:`\\eta = \\tilde\\eta`
(``"effective"``). Adapted FedMGS is this update with its own step choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fedmf_app.common.sparse import issparse
from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions, BasisStep, basis_residual
from fedmf_app.methods.sonmf.prox import l21_norm, l21_row_scale, prox_l21_nonneg
from fedmf_app.methods.sonmf.residual_products import squared_norm, squared_residual, ut_times_residual
from fedmf_app.options.constraints import Boolean, Interval, OneOf
from fedmf_app.options.schema import group, option

__all__ = [
    "RHO1_SCALES",
    "SERVER_STEPS",
    "V_UPDATES",
    "SONMFParams",
    "LocalRoundResult",
    "ClientDiagnostics",
    "client_diagnostics",
    "drift_correction",
    "fixed_v_round",
    "grad_v",
    "local_round",
    "local_loss",
    "prox_gradient_step",
    "regulariser",
    "server_step",
]

#: Where V is updated: on local pre-/post-proximal copies (the method) or only at the server.
V_UPDATES = ("local-copies", "server")
#: Step of a server-only V update: eta_g * alpha, or the effective step eta~ = eta_g * tau * alpha.
SERVER_STEPS = ("global-times-local", "effective")
#: What ``rho1`` is measured against: the data term's curvature in ``U`` at the current ``V``, or nothing.
RHO1_SCALES = ("data", "absolute")


@dataclass(frozen=True)
class SONMFParams:
    """Step sizes and weights of the proposed method.

    Parameters
    ----------
    local_steps : int
        ``tau``, local steps per round.
    local_lr : float
        ``alpha``, local step size.
    global_lr : float
        ``eta_g``, server step size.
    mu : float
        Weight of ``||V||_{2,1}``.
    rho1 : float
        Proximal weight of the basis subproblem: relative to the data term (``rho1_scale = "data"``)
        or as it is (``"absolute"``); :meth:`basis_weight` gives the weight a ``U`` step uses.
    rho1_scale : {"data", "absolute"}
        ``"data"``: the weight is ``rho1`` times :math:`2\\|V\\|_F^2/r`, the mean eigenvalue of the
        data term's Hessian in ``U`` (:math:`2VV^\\top \\otimes I`) at the ``V`` of that step.
    drift_correction : bool
        Apply the correction ``C_p`` (``False`` gives the uncorrected ablation variant).
    v_update : {"local-copies", "server"}
        ``"server"``: the ablation in which only the server updates ``V`` (module docstring).
    server_step : {"global-times-local", "effective"}
        Step of the server-only update: :math:`\\eta_g\\alpha` or :math:`\\tilde\\eta`.
    basis : BasisSolverOptions
        Options of the basis solver.
    """

    local_steps: int = option(
        "sonmf.local-steps", 10, Interval(int, 1, None, closed="left"), "Local steps tau per round ([A] 10)."
    )
    local_lr: float = 0.01
    global_lr: float = 1.5
    mu: float = option(
        "sonmf.mu",
        0.01,
        Interval(float, 0.0, None, closed="left"),
        "Weight of the joint-sparsity term mu ||V||_{2,1} ([A] 0.01).",
    )
    rho1: float = 0.01
    rho1_scale: str = "data"
    drift_correction: bool = option(
        "sonmf.drift-correction",
        True,
        Boolean(),
        "Apply the drift correction C_p (false: the uncorrected ablation).",
    )
    v_update: str = option(
        "sonmf.v-update",
        "local-copies",
        OneOf(V_UPDATES),
        "fedsonmf: `server` is the ablation in which clients run sonmf.local-steps U steps with V "
        "fixed at V^s, upload their average grad_V f_p, and only the server updates V "
        "(one prox-gradient step of size sonmf.server-step).",
    )
    server_step: str = option(
        "sonmf.server-step",
        "global-times-local",
        OneOf(SERVER_STEPS),
        "Step of the server-only V update (sonmf.v-update=server): eta_g * alpha, or the effective "
        "eta~ = eta_g * tau * alpha ([A] eta_g * alpha, the ablation's reading).",
    )
    basis: BasisSolverOptions = group(BasisSolverOptions)

    def __post_init__(self) -> None:
        if self.v_update not in V_UPDATES:
            raise ValueError(f"v_update must be one of {V_UPDATES}, got {self.v_update!r}")
        if self.server_step not in SERVER_STEPS:
            raise ValueError(f"server_step must be one of {SERVER_STEPS}, got {self.server_step!r}")
        if self.rho1_scale not in RHO1_SCALES:
            raise ValueError(f"rho1_scale must be one of {RHO1_SCALES}, got {self.rho1_scale!r}")

    @cached_property
    def basis_step(self) -> BasisStep:
        """The run's ``U`` step: the solver of :attr:`basis` with the weight rule of ``rho1`` and
        ``rho1_scale``, built once."""
        return BasisStep(self.basis, self.rho1, self.rho1_scale)

    def basis_weight(self, v: np.ndarray) -> float:
        """Proximal weight :math:`\\rho_1` of a ``U`` step taken at ``v`` (:meth:`BasisStep.weight`).

        Parameters
        ----------
        v : ndarray, shape (r, n)
            The coefficients of the ``U`` step.

        Returns
        -------
        float
        """
        return self.basis_step.weight(float(np.vdot(v, v)), v.shape[0])

    @property
    def effective_lr(self) -> float:
        """Effective global step :math:`\\tilde\\eta = \\eta_g \\tau \\alpha`."""
        return self.global_lr * self.local_steps * self.local_lr

    @property
    def server_lr(self) -> float:
        """Step of the server's prox, :math:`V^{s+1} = P_{t\\mu}(\\bar V^{s+1})`.

        :math:`\\tilde\\eta` with local copies; with ``v_update = "server"``,
        :math:`\\eta_g\\alpha` or :math:`\\tilde\\eta` according to ``server_step``.
        """
        if self.v_update == "server" and self.server_step == "global-times-local":
            return self.global_lr * self.local_lr
        return self.effective_lr


@dataclass(frozen=True)
class LocalRoundResult:
    """What one client's round produces.

    Attributes
    ----------
    v_hat : ndarray, shape (r, n)
        Pre-proximal local copy after ``tau`` steps (the only upload).
    u : ndarray, shape (d, r)
        Basis after the round (private; the next round's warm start).
    grad_avg : ndarray, shape (r, n)
        :math:`G_p^s`, average local gradient (private; next round's correction).
    v : ndarray, shape (r, n)
        :math:`V^s = P_{\\tilde\\eta\\mu}(\\bar V^s)` (private; next round's correction).
    correction : ndarray, shape (r, n)
        :math:`C_p^s` used in this round.
    xvt : ndarray, shape (d, r)
        :math:`X V^{s\\top}`, the first step's product, which the diagnostics at :math:`V^s` reuse.
    """

    v_hat: np.ndarray
    u: np.ndarray
    grad_avg: np.ndarray
    v: np.ndarray
    correction: np.ndarray
    xvt: np.ndarray


def local_loss(x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
    """:math:`f_p(U, V) = \\|X - UV\\|_F^2`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
    v : ndarray, shape (r, n)

    Returns
    -------
    float
    """
    return squared_residual(x, u, v)


def grad_v(x: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:math:`\\nabla_V f_p(U, V) = 2U^\\top(UV - X)`.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
    v : ndarray, shape (r, n)

    Returns
    -------
    ndarray, shape (r, n)
    """
    out = ut_times_residual(x, u, v)
    out *= 2.0
    return out


def regulariser(v: np.ndarray, mu: float) -> float:
    """:math:`h(V) = \\mu\\|V\\|_{2,1}` for ``V >= 0``.

    Parameters
    ----------
    v : ndarray, shape (r, n)
    mu : float

    Returns
    -------
    float
    """
    return mu * l21_norm(v)


def drift_correction(
    v_prev: np.ndarray, v_bar: np.ndarray, grad_prev: np.ndarray, effective_lr: float
) -> np.ndarray:
    """:math:`C_p^s = (V^{s-1} - \\bar V^s)/\\tilde\\eta - G_p^{s-1}`.

    The first term is the global average gradient of the previous round, recovered from the
    broadcast; the second is this client's own.

    Parameters
    ----------
    v_prev : ndarray, shape (r, n)
        Post-proximal global variable of the previous round, :math:`V^{s-1}`.
    v_bar : ndarray, shape (r, n)
        Pre-proximal global variable just received, :math:`\\bar V^s`.
    grad_prev : ndarray, shape (r, n)
        This client's average local gradient of the previous round, :math:`G_p^{s-1}`.
    effective_lr : float
        :math:`\\tilde\\eta`.

    Returns
    -------
    ndarray, shape (r, n)
    """
    return (v_prev - v_bar) / effective_lr - grad_prev


def local_round(
    x: np.ndarray,
    u: np.ndarray,
    v_bar: np.ndarray,
    params: SONMFParams,
    v_prev: np.ndarray | None = None,
    grad_prev: np.ndarray | None = None,
) -> LocalRoundResult:
    """Run one client's ``tau`` local steps (Algorithm 1, client part).

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
        Client data.
    u : ndarray, shape (d, r)
        Feasible basis :math:`U_p^{s,0}`.
    v_bar : ndarray, shape (r, n)
        Broadcast pre-proximal global variable :math:`\\bar V^s`.
    params : SONMFParams
    v_prev, grad_prev : ndarray, shape (r, n), optional
        :math:`V^{s-1}` and :math:`G_p^{s-1}` from this client's previous round; ``None`` in the
        first round (then :math:`C_p^1 = 0`).

    Returns
    -------
    LocalRoundResult

    Notes
    -----
    A sparse ``X`` is read twice per step, in :math:`XV^\\top` (``d x r``, the ``U`` step's linear
    term) and :math:`U^\\top X` (``r x n``, the gradient). A dense ``X`` is read once per step, a
    block of samples at a time (:func:`_dense_steps`). :math:`\\|X\\|_F^2` is computed once per
    round and the ``r x n`` updates are made in place.
    """
    eta = params.effective_lr
    v = prox_l21_nonneg(v_bar, eta * params.mu)
    if params.drift_correction and v_prev is not None and grad_prev is not None:
        corr = drift_correction(v_prev, v_bar, grad_prev, eta)
    else:
        corr = np.zeros_like(v_bar)
    if not issparse(x):
        v_hat, u, grad_sum, xvt_start = _dense_steps(x, u, v, corr, params)
        return LocalRoundResult(v_hat=v_hat, u=u, grad_avg=grad_sum, v=v, correction=corr, xvt=xvt_start)
    alpha, mu = params.local_lr, params.mu
    v_hat = v.copy()
    v_local = v
    grad_sum = np.zeros_like(v_bar)
    step = np.empty_like(v_bar)
    x_sq = squared_norm(x)
    xvt_start = None
    for k in range(params.local_steps):
        xvt = np.asarray(x @ v_local.T)
        if xvt_start is None:
            xvt_start = xvt
        u = params.basis_step(x, u, v_local, xvt=xvt, x_squared_norm=x_sq)
        g = grad_v(x, u, v_local)
        grad_sum += g
        np.add(g, corr, out=step)
        step *= alpha
        v_hat -= step
        v_local = prox_l21_nonneg(v_hat, (k + 1) * alpha * mu)
    grad_sum /= params.local_steps
    return LocalRoundResult(v_hat=v_hat, u=u, grad_avg=grad_sum, v=v, correction=corr, xvt=xvt_start)


#: Samples per block of :func:`_dense_steps` (a 50-feature block of ``X`` is 1.6 MB: it and the
#: step's ``r x`` block arrays stay in cache between the two products).
_STEP_BLOCK = 4096


def _dense_steps(
    x: np.ndarray, u: np.ndarray, v: np.ndarray, corr: np.ndarray, params: SONMFParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``tau`` local steps of :func:`local_round` on a dense ``X``, one pass over ``X`` per step.

    The local iterate is kept as :math:`V^k = \\operatorname{diag}(c^k)\\max(\\hat V^k, 0)`, the row
    scaling of the proximal map (:func:`prox_l21_nonneg`; :math:`c^0 = 1`, :math:`\\hat V^0 = V^s`).
    Block by block of samples, one pass computes the gradient :math:`g_k` (``U^T X`` of the block),
    updates :math:`\\hat V`, and accumulates what the next step needs of
    :math:`P = \\max(\\hat V^{k+1}, 0)`: its row norms (hence :math:`c^{k+1}`), :math:`XP^\\top`
    (``X`` of the block again, still in cache) and, for the penalty ``U`` solver, :math:`PP^\\top`;
    then :math:`XV^{k+1\\top} = XP^\\top\\operatorname{diag}(c^{k+1})` and
    :math:`V^{k+1}V^{k+1\\top} = \\operatorname{diag}(c^{k+1})PP^\\top\\operatorname{diag}(c^{k+1})`.
    The same arithmetic as the two-pass loop, but for the order of the sums over samples.

    Parameters
    ----------
    x : ndarray, shape (d, n)
    u : ndarray, shape (d, r)
        :math:`U_p^{s,0}`.
    v : ndarray, shape (r, n)
        :math:`V^s` (nonnegative; not modified).
    corr : ndarray, shape (r, n)
        :math:`C_p^s`.
    params : SONMFParams

    Returns
    -------
    v_hat : ndarray, shape (r, n)
    u : ndarray, shape (d, r)
    grad_avg : ndarray, shape (r, n)
    xvt_start : ndarray, shape (d, r)
        :math:`XV^{s\\top}`.
    """
    alpha, mu, tau = params.local_lr, params.mu, params.local_steps
    (d, n), r = x.shape, v.shape[0]
    step = params.basis_step
    gram = step.needs_gram
    blocks = [slice(start, min(start + _STEP_BLOCK, n)) for start in range(0, n, _STEP_BLOCK)]
    x_sq = squared_norm(x)
    v_hat = v.copy()
    grad_sum = np.zeros_like(v)
    scale = np.ones(r)
    xvt = xvt_start = np.asarray(x @ v.T)
    row_sq = np.einsum("ij,ij->i", v, v)
    vvt = v @ v.T if gram else None
    for k in range(tau):
        u = step.at_products(x, u, xvt, row_sq, vvt, x_sq)
        last = k == tau - 1
        p_sq, xpt = np.zeros(r), np.zeros((d, r))
        ppt = np.zeros((r, r)) if gram else None
        for b in blocks:
            xb, vh = x[:, b], v_hat[:, b]
            vk = np.maximum(vh, 0.0)
            vk *= scale[:, None]  # V^k of the block
            g = grad_v(xb, u, vk)
            grad_sum[:, b] += g
            g += corr[:, b]
            g *= alpha
            vh -= g
            if last:
                continue
            p = np.maximum(vh, 0.0)
            p_sq += np.einsum("ij,ij->i", p, p)
            xpt += xb @ p.T
            if gram:
                ppt += p @ p.T
        if last:
            break
        scale = l21_row_scale(np.sqrt(p_sq), (k + 1) * alpha * mu)
        row_sq = scale**2 * p_sq
        xvt = xpt * scale[None, :]
        if gram:
            vvt = ppt * np.outer(scale, scale)
    grad_sum /= tau
    return v_hat, u, grad_sum, xvt_start


def server_step(
    v: np.ndarray, v_hats: list[np.ndarray], params: SONMFParams
) -> tuple[np.ndarray, np.ndarray]:
    """Server aggregation (Algorithm 1, server part).

    Parameters
    ----------
    v : ndarray, shape (r, n)
        Current post-proximal global variable :math:`V^s`.
    v_hats : list of ndarray, shape (r, n)
        The clients' uploads :math:`\\hat V_p^{s,\\tau}`, one per client.
    params : SONMFParams

    Returns
    -------
    v_bar_next : ndarray, shape (r, n)
        :math:`\\bar V^{s+1}` (broadcast next).
    v_next : ndarray, shape (r, n)
        :math:`V^{s+1} = P_{\\tilde\\eta\\mu}(\\bar V^{s+1})`.
    """
    mean_hat = np.mean(np.stack(v_hats), axis=0)
    v_bar_next = v + params.global_lr * (mean_hat - v)
    return v_bar_next, prox_l21_nonneg(v_bar_next, params.effective_lr * params.mu)


def fixed_v_round(
    x: np.ndarray, u: np.ndarray, v: np.ndarray, params: SONMFParams
) -> tuple[np.ndarray, np.ndarray]:
    """``tau`` basis steps with ``V`` fixed at :math:`V^s` (server-only ``V`` update, FedMGS).

    .. math::
        U^{k+1} = \\arg\\min_{U \\ge 0,\\ U^\\top U = I} f_p(U, V^s) + \\tfrac{\\rho_1}{2}\\|U - U^k\\|_F^2,
        \\qquad G_p^s = \\frac1\\tau\\sum_{k<\\tau} \\nabla_V f_p(U^{k+1}, V^s).

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
        Feasible :math:`U_p^{s,0}`.
    v : ndarray, shape (r, n)
        :math:`V^s`.
    params : SONMFParams
        ``local_steps``, ``rho1`` and ``basis`` are used.

    Returns
    -------
    u : ndarray, shape (d, r)
        :math:`U_p^{s,\\tau}`.
    grad_avg : ndarray, shape (r, n)
        :math:`G_p^s` (the upload).
    """
    grad_sum = np.zeros_like(v)
    xvt, x_sq = np.asarray(x @ v.T), squared_norm(x)  # V is fixed
    for _ in range(params.local_steps):
        u = params.basis_step(x, u, v, xvt=xvt, x_squared_norm=x_sq)
        grad_sum += grad_v(x, u, v)
    grad_sum /= params.local_steps
    return u, grad_sum


def prox_gradient_step(
    v: np.ndarray, grad: np.ndarray, lr: float, mu: float
) -> tuple[np.ndarray, np.ndarray]:
    """One proximal gradient step on ``V``: :math:`\\bar V^{+} = V - t\\,G`,
    :math:`V^{+} = P_{t\\mu}(\\bar V^{+})`.

    Parameters
    ----------
    v : ndarray, shape (r, n)
        :math:`V^s`.
    grad : ndarray, shape (r, n)
        Aggregated gradient, e.g. :math:`\\frac1m\\sum_p G_p^s`.
    lr : float
        Step ``t``.
    mu : float

    Returns
    -------
    v_bar_next, v_next : ndarray, shape (r, n)
    """
    v_bar_next = v - lr * grad
    return v_bar_next, prox_l21_nonneg(v_bar_next, lr * mu)


@dataclass(frozen=True)
class ClientDiagnostics:
    """Per-client quantities for the stationarity residual (diagnostics only).

    Attributes
    ----------
    loss : float
        :math:`f_p(U_p^{s,0}, V^s)`.
    grad : ndarray, shape (r, n)
        :math:`\\nabla_V f_p(U_p^{s,0}, V^s)`.
    basis_residual : float
        :math:`r_p^{s,\\tau}` proxy at :math:`(U_p^{s,\\tau}, V^s)`.
    """

    loss: float
    grad: np.ndarray
    basis_residual: float


def client_diagnostics(
    x: np.ndarray, u_start: np.ndarray, u_end: np.ndarray, v: np.ndarray, xvt: np.ndarray | None = None
) -> ClientDiagnostics:
    """Diagnostics of one client's round.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u_start : ndarray, shape (d, r)
        :math:`U_p^{s,0}`.
    u_end : ndarray, shape (d, r)
        :math:`U_p^{s,\\tau}`.
    v : ndarray, shape (r, n)
        :math:`V^s`.
    xvt : ndarray, shape (d, r), optional
        :math:`XV^{s\\top}` when the round computed it (:attr:`LocalRoundResult.xvt`).

    Returns
    -------
    ClientDiagnostics
    """
    return ClientDiagnostics(
        loss=local_loss(x, u_start, v),
        grad=grad_v(x, u_start, v),
        basis_residual=basis_residual(x, v, u_end, xvt),
    )
