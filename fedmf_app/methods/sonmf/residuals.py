"""Stationarity residuals of paper A and their normalisations (``docs/sonmf.md``).

* :math:`R_V^s = \\|\\nabla h(V^{s+1}) + \\bar g^s\\|_F^2` with
  :math:`\\bar g^s = \\frac1m\\sum_p \\nabla_V f_p(U_p^{s,0}, V^s)` and a subgradient
  :math:`\\nabla h(V^{s+1}) \\in \\partial h(V^{s+1})`, taken in one of two ways:

  - *server prox* (:func:`residual_v`): when the server computes :math:`V^{s+1} = P_{t\\mu}(Z)`
    (step ``t``, pre-proximal point ``Z``), the subgradient that prox produces,
    :math:`(Z - V^{s+1})/t`; for paper A's method :math:`Z = \\bar V^{s+1}`, :math:`t = \\tilde\\eta`;
  - *min-norm* (:func:`residual_v_min_norm`): the subgradient closest to :math:`-\\bar g^s`, i.e.
    :math:`R_V = \\operatorname{dist}^2(0, \\bar g^s + \\partial h(V^{s+1}))`. It needs no prox step,
    so it is defined for every server update (model averaging included), and it is never larger
    than the server-prox value;
* :math:`R_U^s = \\frac1m\\sum_p r_p^{s,\\tau}`
  (see :func:`~fedmf_app.methods.sonmf.nonneg_orth.basis_residual`);
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
    "gradient_mapping",
    "normalised_residuals",
    "residual_v",
    "residual_v_min_norm",
    "rounds_to_target",
]


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


def residual_v_min_norm(v_next: np.ndarray, mean_grad: np.ndarray, mu: float) -> float:
    """:math:`R_V = \\operatorname{dist}^2\\bigl(0,\\ \\bar g + \\partial h(V^{s+1})\\bigr)` for
    :math:`h(V) = \\mu\\|V\\|_{2,1} + \\delta_{V \\ge 0}`.

    Row by row, with :math:`v = V^{s+1}_{i\\cdot} \\ge 0` and :math:`g = \\bar g_{i\\cdot}`:

    * :math:`v \\ne 0`: :math:`\\partial h = \\{\\mu v/\\|v\\| + w : w_j = 0 \\text{ if } v_j > 0,
      \\ w_j \\le 0 \\text{ if } v_j = 0\\}`, so the row contributes
      :math:`\\sum_{v_j > 0} (g_j + \\mu v_j/\\|v\\|)^2 + \\sum_{v_j = 0} \\min(g_j, 0)^2`;
    * :math:`v = 0`: :math:`\\partial h = \\{y : \\|y^+\\| \\le \\mu\\}`, so the row contributes
      :math:`\\max(\\|\\min(g, 0)\\| - \\mu, 0)^2`.

    Parameters
    ----------
    v_next : ndarray, shape (r, n)
        The server's :math:`V^{s+1}` (nonnegative).
    mean_grad : ndarray, shape (r, n)
        :math:`\\bar g = \\frac1m\\sum_p \\nabla_V f_p(U_p^{s,0}, V^s)`.
    mu : float
        Weight of :math:`\\|V\\|_{2,1}`.

    Returns
    -------
    float
    """
    norms = np.linalg.norm(v_next, axis=1, keepdims=True)
    active = v_next > 0.0
    neg = np.minimum(mean_grad, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        direction = np.where(norms > 0.0, v_next / norms, 0.0)
    nonzero_rows = np.where(active, mean_grad + mu * direction, neg)
    zero_rows = np.maximum(np.linalg.norm(neg, axis=1) - mu, 0.0)
    is_zero = norms[:, 0] <= 0.0
    return float(np.sum(nonzero_rows[~is_zero] ** 2) + np.sum(zero_rows[is_zero] ** 2))


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


#: [A] Floor of the residual normaliser :math:`\\max(R^1, \\varepsilon)`.
RESIDUAL_EPS = 1e-12


def normalised_residuals(history: Sequence[float], eps: float = RESIDUAL_EPS) -> tuple[float, float]:
    """Both normalisations of the latest residual.

    Parameters
    ----------
    history : sequence of float
        :math:`R^1, \\dots, R^s` (non-empty).
    eps : float
        Floor of the normaliser :math:`\\max(R^1, \\varepsilon)` (:data:`RESIDUAL_EPS`).

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
