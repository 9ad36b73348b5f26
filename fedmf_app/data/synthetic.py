"""Synthetic multi-view data with a planted sparse orthogonal NMF (paper A, Section 4.1).

The paper gives d_p = 20, r = 6 and h in {0, 0.3, 0.6, 0.9}; the generator itself was not
recovered. This module implements the documented [A] generator of ``docs/sonmf.md``
Section 1.11:

* ground-truth basis ``U_p*``: the ``d_p`` rows split into ``r`` random nonempty disjoint groups,
  positive ``|N(0, 1)|`` entries, unit columns (so ``U_p* >= 0`` and ``U_p*^T U_p* = I``);
* shared coefficients ``V0 = |N(0, 1)|^{r x n}``, and per client ``V_p* = (1 - h) V0 + h E_p`` with
  ``E_p = |N(0, 1)|^{r x n}`` (``h = 0``: every client shares one V, so there is no drift);
* ``X_p = U_p* V_p* + noise * N(0, 1)``.

Client ``p`` builds only its own view, from ``(seed, p)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmf_app.common.feasible_basis import random_feasible_basis
from fedmf_app.common.seeding import Stream, rng_for

__all__ = ["AUTO_RANK_DEFAULT", "SyntheticSpec", "SyntheticView", "make_synthetic_view", "planted_rank"]

#: Rank of ``sonmf.rank = 0`` (auto) on synthetic data (paper A: 6), and on real data without a
#: cluster count.
AUTO_RANK_DEFAULT = 6


def planted_rank(rank: int) -> int:
    """Planted rank of the synthetic data: run config ``sonmf.rank``, or :data:`AUTO_RANK_DEFAULT` when 0.

    Parameters
    ----------
    rank : int

    Returns
    -------
    int
    """
    return rank or AUTO_RANK_DEFAULT


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of the synthetic generator.

    Parameters
    ----------
    num_samples : int
        ``n``, samples shared by all views.
    view_dim : int
        ``d_p``, features per view.
    rank : int
        ``r``, planted rank.
    heterogeneity : float
        ``h`` in [0, 1].
    noise : float
        Standard deviation of the additive Gaussian noise ([A] 0.01).
    seed : int
        Run seed.
    """

    num_samples: int = 200
    view_dim: int = 20
    rank: int = 6
    heterogeneity: float = 0.0
    noise: float = 0.01
    seed: int = 0


@dataclass(frozen=True)
class SyntheticView:
    """One client's synthetic view and its planted factors.

    Attributes
    ----------
    x : ndarray, shape (d_p, n)
        Observed data.
    u_true : ndarray, shape (d_p, r)
        Planted basis.
    v_true : ndarray, shape (r, n)
        Planted coefficients ``V_p*`` of this client.
    """

    x: np.ndarray
    u_true: np.ndarray
    v_true: np.ndarray


def make_synthetic_view(spec: SyntheticSpec, partition_id: int) -> SyntheticView:
    """Build view ``partition_id`` of the synthetic data set.

    Parameters
    ----------
    spec : SyntheticSpec
    partition_id : int
        Client index ``p >= 0``.

    Returns
    -------
    SyntheticView
    """
    n, d, r, h = spec.num_samples, spec.view_dim, spec.rank, spec.heterogeneity
    v0 = np.abs(rng_for(spec.seed, Stream.SYNTHETIC_SHARED).standard_normal((r, n)))
    rng = rng_for(spec.seed, Stream.SYNTHETIC_VIEW, partition_id)
    u_true = random_feasible_basis(d, r, rng)
    e_p = np.abs(rng.standard_normal((r, n)))
    v_true = (1.0 - h) * v0 + h * e_p
    x = u_true @ v_true + spec.noise * rng.standard_normal((d, n))
    return SyntheticView(x=x, u_true=u_true, v_true=v_true)
