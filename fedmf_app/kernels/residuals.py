"""Stationarity residuals of paper A and their normalisations (``spec/ALGORITHMS.md`` Section 1.8).

* :math:`R_V^s = \\|\\nabla h(V^{s+1}) + \\frac1m\\sum_p \\nabla_V f_p(U_p^{s,0}, V^s)\\|_F^2`, with the
  prox subgradient :math:`\\nabla h(V^{s+1}) = (\\bar V^{s+1} - V^{s+1})/\\tilde\\eta`;
* :math:`R_U^s = \\frac1m\\sum_p r_p^{s,\\tau}` (see :func:`~fedmf_app.kernels.nonneg_orth.basis_residual`);
* :math:`R^s = R_V^s + R_U^s`.

Normalisations (all recorded, because the printed one cannot produce the paper's Fig. 5 counts):

* per-round ratio :math:`R^s / \\max(R^1, \\varepsilon)`;
* printed running average :math:`\\bar R^s = (\\frac1s\\sum_{t \\le s} R^t) / \\max(R^1, \\varepsilon)`,
  which is at least ``1/s``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "NORMALISATIONS",
    "gradient_mapping",
    "normalised_residuals",
    "residual_v",
    "rounds_to_target",
]

NORMALISATIONS = ("ratio", "running-average")


def residual_v(
    v_bar_next: np.ndarray, v_next: np.ndarray, mean_grad: np.ndarray, effective_lr: float
) -> float:
    """:math:`R_V^s = \\|(\\bar V^{s+1} - V^{s+1})/\\tilde\\eta + \\bar g\\|_F^2`.

    Parameters
    ----------
    v_bar_next, v_next : ndarray, shape (r, n)
        Server's pre- and post-proximal variables after round ``s``.
    mean_grad : ndarray, shape (r, n)
        :math:`\\frac1m\\sum_p \\nabla_V f_p(U_p^{s,0}, V^s)`.
    effective_lr : float
        :math:`\\tilde\\eta`.

    Returns
    -------
    float
    """
    return float(np.linalg.norm((v_bar_next - v_next) / effective_lr + mean_grad) ** 2)


def gradient_mapping(v: np.ndarray, v_next: np.ndarray, effective_lr: float) -> float:
    """Squared prox-gradient mapping :math:`\\|(V^s - V^{s+1})/\\tilde\\eta\\|_F^2` (server-only).

    Parameters
    ----------
    v, v_next : ndarray, shape (r, n)
    effective_lr : float

    Returns
    -------
    float
    """
    return float(np.linalg.norm((v - v_next) / effective_lr) ** 2)


def normalised_residuals(history: Sequence[float], eps: float = 1e-12) -> tuple[float, float]:
    """Both normalisations of the latest residual.

    Parameters
    ----------
    history : sequence of float
        :math:`R^1, \\dots, R^s` (non-empty).
    eps : float
        Floor of the normaliser :math:`\\max(R^1, \\varepsilon)` ([A] 1e-12).

    Returns
    -------
    ratio : float
        :math:`R^s / \\max(R^1, \\varepsilon)`.
    running_average : float
        :math:`(\\frac1s\\sum_t R^t) / \\max(R^1, \\varepsilon)`.
    """
    base = max(history[0], eps)
    return history[-1] / base, float(np.mean(history)) / base


def rounds_to_target(values: Sequence[float], target: float = 1e-2) -> int | None:
    """First round (1-based) whose value is at most ``target``; ``None`` if never reached.

    Parameters
    ----------
    values : sequence of float
        One value per round, round 1 first.
    target : float

    Returns
    -------
    int or None
    """
    for s, value in enumerate(values, start=1):
        if value <= target:
            return s
    return None
