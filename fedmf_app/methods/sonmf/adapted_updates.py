"""Compared methods of paper A, adapted to its sparse ONMF model (``docs/sonmf.md``).

The paper names the methods and their behaviour only; the adaptations below are [A]
sketches, built from the same pieces as the proposed method (the ``U`` step
:func:`~fedmf_app.methods.sonmf.nonneg_orth.solve_basis`, :func:`~fedmf_app.methods.sonmf.updates.grad_v`, the
prox :func:`~fedmf_app.methods.sonmf.prox.prox_l21_nonneg`). Adapted FedMGS is the proposed method's
server-only ``V`` update (:func:`~fedmf_app.methods.sonmf.updates.fixed_v_round` and
:func:`~fedmf_app.methods.sonmf.updates.prox_gradient_step`) and has no kernel of its own.

Adapted FedMAvg (model averaging; Wang & Chang, TSP 2022)
    client: :math:`V_p = V^s`; for :math:`k < \\tau_s`: ``U`` step at :math:`V_p`, then
    :math:`V_p \\leftarrow P_{\\alpha\\mu}(V_p - \\alpha\\nabla_V f_p(U, V_p))`; upload :math:`V_p`.
    server: :math:`V^{s+1} = \\frac1m\\sum_p V_p` (averaging *after* the prox).
    [A] shrinking local work :math:`\\tau_s = \\lceil\\tau/\\sqrt s\\rceil` (or constant ``tau``).

Adapted FedVRA-U (primal-dual, client-variance reduced; Wang et al., AAAI 2023)
    client keeps a dual :math:`\\Lambda_p` (``r x n``, zero at the start); :math:`V_p = V^s`; for
    :math:`k < \\tau`: ``U`` step at :math:`V_p`, then a gradient step on
    :math:`f_p(U, V_p) + \\langle\\Lambda_p, V_p - V^s\\rangle + \\frac\\rho2\\|V_p - V^s\\|^2`,
    :math:`V_p \\leftarrow V_p - \\alpha(\\nabla_V f_p(U, V_p) + \\Lambda_p + \\rho(V_p - V^s))`;
    dual step :math:`\\Lambda_p \\leftarrow \\Lambda_p + a\\rho(V_p - V^s)`; upload
    :math:`Z_p = V_p + \\Lambda_p/\\rho`.
    server: :math:`W = P_{\\mu/\\rho}(\\frac1m\\sum_p Z_p)`, :math:`V^{s+1} = V^s + d(W - V^s)`.
    With :math:`a = d = 1` this is federated ADMM with inexact local solves: the server step is
    the ADMM ``V`` update :math:`\\arg\\min_V h(V) + \\frac\\rho2\\|V - \\frac1m\\sum_p Z_p\\|^2`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.residual_products import squared_norm
from fedmf_app.methods.sonmf.updates import SONMFParams, grad_v
from fedmf_app.options.constraints import Interval
from fedmf_app.options.schema import option

__all__ = [
    "FEDMAVG_SCHEDULES",
    "FedVRAParams",
    "fedmavg_local_round",
    "fedmavg_local_steps",
    "fedmavg_server_step",
    "fedvra_local_round",
    "fedvra_server_step",
]

#: FedMAvg's local-step schedule: tau_s = ceil(tau / sqrt(s)), or tau in every round.
FEDMAVG_SCHEDULES = ("decreasing", "constant")


def fedmavg_local_steps(local_steps: int, server_round: int, schedule: str) -> int:
    """Local steps of FedMAvg in round ``s``: :math:`\\lceil\\tau/\\sqrt s\\rceil` or :math:`\\tau`.

    Parameters
    ----------
    local_steps : int
        :math:`\\tau \\ge 1`.
    server_round : int
        :math:`s \\ge 1`.
    schedule : {"decreasing", "constant"}

    Returns
    -------
    int
        At least 1.
    """
    if schedule == "constant":
        return local_steps
    if schedule == "decreasing":
        return max(1, math.ceil(local_steps / math.sqrt(server_round)))
    raise ValueError(f"schedule must be one of {FEDMAVG_SCHEDULES}, got {schedule!r}")


def fedmavg_local_round(
    x: np.ndarray, u: np.ndarray, v: np.ndarray, steps: int, params: SONMFParams
) -> tuple[np.ndarray, np.ndarray]:
    """FedMAvg client: ``steps`` alternating ``U`` steps and proximal gradient steps on its copy.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
        Feasible :math:`U_p^{s,0}`.
    v : ndarray, shape (r, n)
        Broadcast :math:`V^s`.
    steps : int
        :math:`\\tau_s`.
    params : SONMFParams
        ``local_lr`` (:math:`\\alpha`), ``mu``, ``rho1`` and ``basis`` are used.

    Returns
    -------
    v_local : ndarray, shape (r, n)
        :math:`V_p` after the last step (the upload; nonnegative).
    u : ndarray, shape (d, r)
        :math:`U_p^{s,\\tau_s}`.
    """
    alpha = params.local_lr
    v_local = v
    x_sq = squared_norm(x)  # the same at every step
    for _ in range(steps):
        u = params.basis_step(x, u, v_local, x_squared_norm=x_sq)
        v_local = prox_l21_nonneg(v_local - alpha * grad_v(x, u, v_local), alpha * params.mu)
    return v_local, u


def fedmavg_server_step(v_locals: list[np.ndarray]) -> np.ndarray:
    """FedMAvg server: :math:`V^{s+1} = \\frac1m\\sum_p V_p` (no prox at the server).

    Parameters
    ----------
    v_locals : list of ndarray, shape (r, n)

    Returns
    -------
    ndarray, shape (r, n)
    """
    return np.mean(np.stack(v_locals), axis=0)


@dataclass(frozen=True)
class FedVRAParams:
    """Steps of adapted FedVRA-U ([A] defaults; the paper gives none).

    Parameters
    ----------
    rho : float
        Penalty :math:`\\rho > 0` of the augmented Lagrangian; the server's prox step is
        :math:`1/\\rho`.
    dual_step : float
        :math:`a`, dual step as a multiple of :math:`\\rho` (1: the ADMM dual update).
    aggregation_step : float
        :math:`d \\in (0, 1]`, how far the server moves towards the prox point (1: ADMM).
    """

    rho: float = 5.0
    dual_step: float = option(
        "sonmf.fedvra-dual-step",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "fedvra-u: dual step a, Lambda_p += a * rho * (V_p - V^s) ([A] 1, as in ADMM).",
    )
    aggregation_step: float = option(
        "sonmf.fedvra-aggregation-step",
        1.0,
        Interval(float, 0, 1, closed="right"),
        "fedvra-u: aggregation step d, V^{s+1} = V^s + d (prox point - V^s) ([A] 1, as in ADMM).",
    )


def fedvra_local_round(
    x: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    dual: np.ndarray,
    params: SONMFParams,
    vra: FedVRAParams,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FedVRA-U client: ``tau`` alternating ``U`` and primal steps, then one dual step.

    Parameters
    ----------
    x : ndarray or scipy sparse matrix, shape (d, n)
    u : ndarray, shape (d, r)
        Feasible :math:`U_p^{s,0}`.
    v : ndarray, shape (r, n)
        Broadcast :math:`V^s`.
    dual : ndarray, shape (r, n)
        :math:`\\Lambda_p` from the previous round (zeros in round 1).
    params : SONMFParams
        ``local_steps``, ``local_lr``, ``rho1`` and ``basis`` are used.
    vra : FedVRAParams

    Returns
    -------
    upload : ndarray, shape (r, n)
        :math:`Z_p = V_p + \\Lambda_p^{new}/\\rho`.
    dual : ndarray, shape (r, n)
        :math:`\\Lambda_p^{new}`.
    u : ndarray, shape (d, r)
        :math:`U_p^{s,\\tau}`.
    """
    alpha, rho = params.local_lr, vra.rho
    v_local = v
    x_sq = squared_norm(x)  # the same at every step
    for _ in range(params.local_steps):
        u = params.basis_step(x, u, v_local, x_squared_norm=x_sq)
        v_local = v_local - alpha * (grad_v(x, u, v_local) + dual + rho * (v_local - v))
    dual = dual + vra.dual_step * rho * (v_local - v)
    return v_local + dual / rho, dual, u


def fedvra_server_step(
    v: np.ndarray, uploads: list[np.ndarray], mu: float, vra: FedVRAParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FedVRA-U server: :math:`W = P_{\\mu/\\rho}(\\bar Z)`, :math:`V^{s+1} = V^s + d(W - V^s)`.

    Parameters
    ----------
    v : ndarray, shape (r, n)
        :math:`V^s`.
    uploads : list of ndarray, shape (r, n)
        The clients' :math:`Z_p`.
    mu : float
    vra : FedVRAParams

    Returns
    -------
    z_mean : ndarray, shape (r, n)
        :math:`\\bar Z = \\frac1m\\sum_p Z_p` (the prox input).
    w : ndarray, shape (r, n)
        :math:`W`, the prox output.
    v_next : ndarray, shape (r, n)
        :math:`V^{s+1}` (equal to ``w`` when ``d = 1``).
    """
    z_mean = np.mean(np.stack(uploads), axis=0)
    w = prox_l21_nonneg(z_mean, mu / vra.rho)
    d = vra.aggregation_step
    return z_mean, w, (w if d == 1.0 else v + d * (w - v))
