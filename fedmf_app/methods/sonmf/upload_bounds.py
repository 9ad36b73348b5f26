"""What paper A's model bounds one client's upload to (numbers in, numbers out, no Flower).

On a view scaled to unit Frobenius norm (run config ``view-normalisation = "frobenius"`` on data read
from a file, :math:`\\|X_p\\|_F = 1`) and a feasible basis with exactly orthonormal columns or zero
columns (the ``assignment`` ``U`` solver: :math:`U_p^\\top U_p = \\operatorname{diag}(0/1)`), so that
:math:`\\|U_p^\\top A\\|_F \\le \\|A\\|_F` and :math:`\\|U_p^\\top U_p V\\|_F \\le \\|V\\|_F`:

* the gradient :math:`\\nabla_V f_p = 2(U_p^\\top U_p V - U_p^\\top X_p)` has norm at most
  :math:`2(\\|V\\|_F + 1)`, and the loss :math:`\\|X_p - U_pV\\|_F^2` is at most :math:`(1 + \\|V\\|_F)^2`;
* the sketch share :math:`X_p^\\top X_p\\Omega` has norm at most
  :math:`\\|X_p\\|_2^2\\|\\Omega\\|_F \\le \\|\\Omega\\|_F`;
* ``fedsonmf``'s upload, the pre-proximal local copy after :math:`\\tau` steps
  :math:`\\hat V^{k+1} = \\hat V^k - \\alpha(g_k + C_p)` from :math:`\\hat V^0 = V^s` (the prox only
  shrinks, so :math:`\\|g_k\\| \\le 2(\\|\\hat V^k\\| + 1)`), has norm at most
  :math:`B^s = q\\|V^s\\|_F + (q - 1)(1 + c_s/2)` with :math:`q = (1 + 2\\alpha)^\\tau`, where the drift
  correction :math:`C_p = (V^{s-1} - \\bar V^s)/\\tilde\\eta - G_p^{s-1}` has norm at most
  :math:`c_s = \\|V^{s-1} - \\bar V^s\\|_F/\\tilde\\eta + 2(B^{s-1} + 1)` (:math:`c_1 = 0`; 0 without
  drift correction); every party computes :math:`B^s` from public values;
* the server-only variant's and FedMGS's upload, an average gradient at fixed :math:`V^s`, at most
  :math:`2(\\|V^s\\|_F + 1)`;
* FedMAvg's upload after :math:`\\tau_s` proximal gradient steps from :math:`V^s`, at most
  :math:`q_s\\|V^s\\|_F + q_s - 1` with :math:`q_s = (1 + 2\\alpha)^{\\tau_s}`, and nonnegative.

FedVRA-U's upload adds its dual, which grows with the rounds; no bound is declared for it. Without
both conditions above no bound is declared either. :data:`SLACK` covers floating-point rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmf_app.methods.sonmf.adapted_updates import fedmavg_local_steps
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg
from fedmf_app.methods.sonmf.updates import SONMFParams

__all__ = ["SLACK", "UploadBounds", "gradient_bound", "loss_bound", "round_bounds", "sketch_bound"]

#: Relative slack of every bound (floating-point rounding of the norms).
SLACK = 1e-9


@dataclass(frozen=True)
class UploadBounds:
    """The bounds of one round.

    Attributes
    ----------
    v_norm : float
        :math:`\\|V^s\\|_F` of the ``V`` the clients use in the round.
    upload : float or None
        Bound on the norm of one client's upload (``None``: the method declares none).
    """

    v_norm: float
    upload: float | None


def gradient_bound(v_norm: float) -> float:
    """Bound on :math:`\\|\\nabla_V f_p(U_p, V)\\|_F` for :math:`\\|V\\|_F` = ``v_norm``."""
    return 2.0 * (v_norm + 1.0) * (1.0 + SLACK)


def loss_bound(v_norm: float) -> float:
    """Bound on :math:`\\|X_p - U_pV\\|_F^2` for :math:`\\|V\\|_F` = ``v_norm``."""
    return (1.0 + v_norm) ** 2 * (1.0 + SLACK)


def sketch_bound(omega: np.ndarray) -> float:
    """Bound on the norm of one sketch share :math:`X_p^\\top X_p\\Omega` (unit-norm view).

    Parameters
    ----------
    omega : ndarray, shape (n, l)

    Returns
    -------
    float
    """
    return float(np.linalg.norm(omega)) * (1.0 + SLACK)


def round_bounds(
    algorithm: str,
    params: SONMFParams,
    fedmavg_schedule: str,
    broadcast: np.ndarray,
    server_round: int,
    previous: float | None,
    v_prev: np.ndarray | None,
) -> UploadBounds:
    """The bounds of round ``server_round`` (module docstring).

    Parameters
    ----------
    algorithm : str
        Run config ``algorithm``.
    params : SONMFParams
        The method's kernel parameters.
    fedmavg_schedule : str
        Run config ``sonmf.fedmavg-schedule``.
    broadcast : ndarray, shape (r, n)
        What the server broadcast for the round (:math:`\\bar V^s`, or :math:`V^s` for FedMAvg and
        FedVRA-U).
    server_round : int
    previous : float or None
        :math:`B^{s-1}` (``None`` in round 1).
    v_prev : ndarray, shape (r, n), or None
        :math:`V^{s-1}`, the ``V`` of the previous round (``None`` in round 1).

    Returns
    -------
    UploadBounds
    """
    if algorithm in ("fedmavg", "fedvra-u"):
        v = broadcast
    elif params.v_update == "server":
        v = prox_l21_nonneg(broadcast, params.server_lr * params.mu)
    else:
        v = prox_l21_nonneg(broadcast, params.effective_lr * params.mu)
    v_norm = float(np.linalg.norm(v))
    alpha = params.local_lr
    if algorithm == "fedvra-u":
        upload = None
    elif algorithm == "fedmavg":
        q = (1.0 + 2.0 * alpha) ** fedmavg_local_steps(params.local_steps, server_round, fedmavg_schedule)
        upload = q * v_norm + q - 1.0
    elif params.v_update == "server":
        upload = 2.0 * (v_norm + 1.0)
    else:
        q = (1.0 + 2.0 * alpha) ** params.local_steps
        correction = 0.0
        if params.drift_correction and previous is not None and v_prev is not None:
            correction = float(np.linalg.norm(v_prev - broadcast)) / params.effective_lr + 2.0 * (
                previous + 1.0
            )
        upload = q * v_norm + (q - 1.0) * (1.0 + correction / 2.0)
    return UploadBounds(v_norm, None if upload is None else upload * (1.0 + SLACK))
