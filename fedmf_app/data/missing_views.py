"""Missing-view masks: which client observes which sample (the protocol of paper C).

A mask is a boolean array ``observed`` of shape ``(n, m)``: ``observed[i, v]`` is true when view
``v`` of sample ``i`` is present. The mask is a pure function of ``(n, m, rate, dropped, seed)``, so
every client and the server rebuild the same mask from the run config without sending it; any
algorithm can take it as input. ``fmvc-iai`` reads the mask itself (it imputes on a graph); the
complete-view algorithms (``fedsonmf``, its baselines and ``fmvc-imk``) get views whose missing
rows :func:`fill_missing_rows` has replaced, from observed rows only.

Protocol [P]: pick ``round(rate * n)`` samples at random and delete part of their views. [A] Each
selected sample loses ``dropped`` distinct random views (default ``floor(m / 2)``, "half of the
views"), never all of them, so every sample keeps at least one view (with two views, one).
"""

from __future__ import annotations

import numpy as np

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.common.sparse import issparse

__all__ = ["MISSING_FILLS", "fill_missing_rows", "missing_view_mask", "views_dropped"]

#: How :func:`fill_missing_rows` replaces a missing row.
MISSING_FILLS: tuple[str, ...] = ("mean", "zeros")


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
    """Seeded missing-view mask of paper C's protocol.

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


def fill_missing_rows(features: np.ndarray, observed: np.ndarray, fill: str = "mean") -> np.ndarray:
    """One client's view with its missing rows replaced, for algorithms that need complete views.

    [A] ``mean``: every missing row becomes the mean of the view's observed rows (mean
    imputation, the usual way to run a complete-view method on incomplete views); ``zeros``: a row
    of zeros. Either way the result depends on the observed rows only, so statistics computed
    afterwards (min-max scaling, norms) never see a value the client does not hold.

    Parameters
    ----------
    features : ndarray or scipy sparse matrix, shape (n, d)
        The view, samples x features (values of missing rows are ignored).
    observed : ndarray of bool, shape (n,)
        This view's column of :func:`missing_view_mask`.
    fill : {"mean", "zeros"}

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix, shape (n, d)
        A new float64 matrix (sparse when ``features`` is); observed rows are unchanged.

    Raises
    ------
    ValueError
        On an unknown ``fill``, a mask of the wrong length, or a view with no observed row.
    """
    if fill not in MISSING_FILLS:
        raise ValueError(f"missing fill {fill!r} is invalid: use one of {', '.join(MISSING_FILLS)}")
    observed = np.asarray(observed, dtype=bool)
    if observed.shape != (features.shape[0],):
        raise ValueError(f"mask of shape {observed.shape} does not fit a view of {features.shape[0]} rows")
    if not observed.any():
        raise ValueError("the view has no observed row to fill from")
    if issparse(features):
        import scipy.sparse as sp

        x = sp.csr_matrix(features, dtype=np.float64)
        kept = sp.diags(observed.astype(np.float64)) @ x
        if fill == "zeros":
            return kept.tocsr()
        mean = sp.csr_matrix(np.asarray(x[observed].mean(axis=0)))
        return (kept + sp.csr_matrix((~observed).astype(np.float64)[:, None]) @ mean).tocsr()
    out = np.array(features, dtype=np.float64)
    out[~observed] = out[observed].mean(axis=0) if fill == "mean" else 0.0
    return out
