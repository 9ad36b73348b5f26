"""Missing-view masks: which client observes which sample (spec §3.5, the protocol of paper C).

A mask is a boolean array ``observed`` of shape ``(n, m)``: ``observed[i, v]`` is true when view
``v`` of sample ``i`` is present. The mask is a pure function of ``(n, m, rate, dropped, seed)``, so
every client and the server rebuild the same mask from the run config without sending it; any
algorithm (e.g. ``fedsonmf`` or ``fmvc-imk``) can take it as input.

Protocol [P]: pick ``round(rate * n)`` samples at random and delete part of their views. [A] Each
selected sample loses ``dropped`` distinct random views (default ``floor(m / 2)``, "half of the
views"), never all of them, so every sample keeps at least one view (with two views, one).
"""

from __future__ import annotations

import numpy as np

from fedmf_app.seeding import Stream, rng_for

__all__ = ["missing_view_mask", "views_dropped"]


def views_dropped(num_views: int, dropped: int = 0) -> int:
    """Views removed from each selected sample.

    Parameters
    ----------
    num_views : int
        Views m.
    dropped : int
        Requested number; 0 means ``floor(m / 2)`` [A].

    Returns
    -------
    int
        In ``[1, m - 1]``.

    Raises
    ------
    ValueError
        When ``m < 2`` (one view cannot be partly missing) or ``dropped >= m``.
    """
    if num_views < 2:
        raise ValueError(f"missing views need at least 2 views; the run has {num_views}")
    count = dropped or num_views // 2
    if not 1 <= count < num_views:
        raise ValueError(
            f"missing-views-dropped = {dropped} is invalid for {num_views} views: each selected "
            f"sample must keep at least one view (use 1..{num_views - 1}, or 0 for m // 2)"
        )
    return count


def missing_view_mask(
    num_samples: int, num_views: int, rate: float, seed: int, dropped: int = 0
) -> np.ndarray:
    """Seeded missing-view mask of the §3.5 protocol.

    Parameters
    ----------
    num_samples : int
        Samples n.
    num_views : int
        Views m (one per client).
    rate : float
        Missing rate eta in [0, 1): the fraction of samples with missing views.
    seed : int
        Run seed; the mask uses its own random stream (``Stream.MISSING_VIEWS``).
    dropped : int
        Views removed per selected sample (0: ``floor(m / 2)``).

    Returns
    -------
    ndarray of bool, shape (n, m)
        ``True`` where the view of the sample is observed; every row has at least one ``True``.

    Raises
    ------
    ValueError
        On a rate outside [0, 1) or an impossible ``dropped``.
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"missing-rate = {rate} is invalid: must be in [0, 1)")
    observed = np.ones((num_samples, num_views), dtype=bool)
    selected = int(round(rate * num_samples))
    if selected == 0:
        return observed
    count = views_dropped(num_views, dropped)
    rng = rng_for(seed, Stream.MISSING_VIEWS)
    rows = rng.choice(num_samples, size=selected, replace=False)
    # one random permutation of the views per selected row; its first `count` entries are removed
    order = np.argsort(rng.random((selected, num_views)), axis=1)
    observed[rows[:, None], order[:, :count]] = False
    return observed
