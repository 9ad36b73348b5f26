"""Penalty loop of the ``U`` solver (``BasisSolverOptions.method = "penalty"``,
:func:`~fedmf_app.methods.sonmf.nonneg_orth.solve_basis`), as plain Python and compiled by numba.

The matrices are ``d x r`` with small ``r``, so the loop is written element by element.
:func:`penalty_loop` is plain Python (``sonmf.basis-kernel = "numpy"``: no numba import, no
compilation); :func:`compiled_penalty_loop` compiles the same functions with numba
(``"compiled"``; ``cache=True``: compiled once per machine and app version, then loaded from
``__pycache__``), so the two take the same steps.
"""

from __future__ import annotations

import math
import types
from functools import cache

import numpy as np

__all__ = ["compiled_penalty_loop", "penalised", "penalty_loop", "project_step", "smooth_part"]


def smooth_part(u, q, b, uq, rows, grad):
    """Smooth part of the scaled penalised function at ``u``, written into ``uq``, ``rows``, ``grad``.

    With ``rows = U 1_r`` the penalised function is
    ``P_sigma(U) = psi(U) + sigma (rows^T rows / r - 1)`` and its gradient
    ``grad psi(U) + (2 sigma / r) rows 1_r^T``, where ``psi(U) = <U, UQ> - <U, B>`` and
    ``grad psi(U) = 2UQ - B``. Only the sigma terms change between outer iterations, so the
    value of ``psi`` is returned and the rest kept in the buffers.
    """
    d, r = u.shape
    value = 0.0
    for i in range(d):
        s = 0.0
        for j in range(r):
            acc = 0.0
            for k in range(r):
                acc += u[i, k] * q[k, j]
            uq[i, j] = acc
            value += u[i, j] * (acc - b[i, j])
            grad[i, j] = 2.0 * acc - b[i, j]
            s += u[i, j]
        rows[i] = s
    return value


def project_step(u, g, t, out):
    """``out = project_oblique_nonneg(u - t g)``, written in place (see ``nonneg_orth``)."""
    d, r = u.shape
    for j in range(r):
        norm2 = 0.0
        best = 0
        for i in range(d):
            z = u[i, j] - t * g[i, j]
            if z > u[best, j] - t * g[best, j]:
                best = i
            z = max(z, 0.0)
            out[i, j] = z
            norm2 += z * z
        if norm2 > 0.0:
            norm = math.sqrt(norm2)
            for i in range(d):
                out[i, j] /= norm
        else:
            for i in range(d):
                out[i, j] = 0.0
            out[best, j] = 1.0


def penalised(value, rows, sigma, inv_r):
    """``P_sigma(U) = psi(U) + sigma (rows^T rows / r - 1)`` from ``psi(U)`` and ``rows = U 1_r``."""
    return value + sigma * (inv_r * np.dot(rows, rows) - 1.0)


def penalty_loop(
    u0,
    q,
    b,
    inv_r,
    sigma0,
    sigma_growth,
    sigma_max,
    max_outer,
    max_inner,
    tol0,
    tol_decay,
    tol_min,
    feas_tol,
):
    """The penalty loop of :func:`~fedmf_app.methods.sonmf.nonneg_orth.solve_basis`.

    Parameters
    ----------
    u0 : ndarray, shape (d, r)
        Start on the nonnegative oblique manifold (unit nonnegative columns).
    q : ndarray, shape (r, r)
        Scaled ``V V^T``.
    b : ndarray, shape (d, r)
        Scaled ``2 X V^T + rho1 U0``.
    inv_r : float
        ``1 / r``.
    sigma0, sigma_growth, sigma_max, max_outer, max_inner, tol0, tol_decay, tol_min, feas_tol
        The fields of :class:`~fedmf_app.methods.sonmf.nonneg_orth.BasisSolverOptions`.

    Returns
    -------
    u : ndarray, shape (d, r)
    outer, inner_total : int
    gap : float
        ``||Uw||^2 - 1`` at the returned point.
    """
    gamma = 0.85
    d, r = u0.shape
    sigma, tol, step = sigma0, tol0, 1.0
    u = u0.copy()
    uq, grad, rows = np.empty((d, r)), np.empty((d, r)), np.empty(d)
    un, uqn, gradn, rowsn = np.empty((d, r)), np.empty((d, r)), np.empty((d, r)), np.empty(d)
    g, gn = np.empty((d, r)), np.empty((d, r))
    value = smooth_part(u, q, b, uq, rows, grad)
    inner_total = 0
    outer = 0
    gap = inv_r * np.dot(rows, rows) - 1.0
    for outer in range(1, max_outer + 1):  # noqa: B007 (the count is returned)
        coef = 2.0 * sigma * inv_r
        for i in range(d):
            for j in range(r):
                g[i, j] = grad[i, j] + coef * rows[i]
        ref = 0.0
        have_ref = False
        weight = 1.0
        for _ in range(max_inner):
            m2 = 0.0
            for j in range(r):
                ug = 0.0
                for i in range(d):
                    ug += u[i, j] * g[i, j]
                for i in range(d):
                    m = min(u[i, j], g[i, j] - u[i, j] * ug)
                    m2 += m * m
            if math.sqrt(m2) <= tol:
                break
            if not have_ref:
                ref = penalised(value, rows, sigma, inv_r)
                have_ref = True
            inner_total += 1
            t = step
            accepted = False
            fn = 0.0
            valuen = 0.0
            ss = 0.0
            for _ls in range(30):
                project_step(u, g, t, un)
                valuen = smooth_part(un, q, b, uqn, rowsn, gradn)
                fn = penalised(valuen, rowsn, sigma, inv_r)
                ss = 0.0
                for i in range(d):
                    for j in range(r):
                        ss += (un[i, j] - u[i, j]) ** 2
                if fn <= ref - 1e-6 / t * ss:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                break  # no acceptable step: keep u
            coef = 2.0 * sigma * inv_r
            sy = 0.0
            yy = 0.0
            for i in range(d):
                for j in range(r):
                    gn[i, j] = gradn[i, j] + coef * rowsn[i]
                    y = gn[i, j] - g[i, j]
                    sy += (un[i, j] - u[i, j]) * y
                    yy += y * y
            if sy > 0.0 and yy > 0.0:
                step = min(max(sy / yy, 1e-10), 1e10)
            else:
                step = min(2.0 * t, 1e10)
            weight_new = gamma * weight + 1.0
            ref = (gamma * weight * ref + fn) / weight_new
            weight = weight_new
            u, un = un, u
            uq, uqn = uqn, uq
            grad, gradn = gradn, grad
            rows, rowsn = rowsn, rows
            g, gn = gn, g
            value = valuen
        gap = inv_r * np.dot(rows, rows) - 1.0
        if abs(gap) <= feas_tol:
            break
        sigma = min(sigma * sigma_growth, sigma_max)
        tol = max(tol * tol_decay, tol_min)
    return u, outer, inner_total, gap


@cache
def compiled_penalty_loop():
    """:func:`penalty_loop` compiled by numba, with its three helpers (cached on disk, compiled
    once per machine).

    Returns
    -------
    callable
        Same signature and results as :func:`penalty_loop`.
    """
    import numba  # only where U is solved with the compiled kernel

    jit = numba.njit(cache=True)
    helpers = {f.__name__: jit(f) for f in (smooth_part, project_step, penalised)}
    loop = types.FunctionType(penalty_loop.__code__, {**penalty_loop.__globals__, **helpers}, "penalty_loop")
    loop.__qualname__ = penalty_loop.__qualname__
    return jit(loop)
