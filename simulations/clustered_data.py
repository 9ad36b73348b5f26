"""The one generator of clustered multi-view data, for the benchmarks and the tests.

:func:`clustered_views` draws ``n`` samples in ``k`` classes (uniform) and, for each view, the
classes' centres and every sample's features around its class's centre. Two kinds of centres:

* ``gaussian``: ``x_m = centre_m[y] + noise * N(0, I)`` with ``centre_m ~ centre_scale * N(0, I)``
  (per class and feature): Gaussian clusters, as k-means and the graph methods see them;
* ``planted-blocks``: each feature of a view belongs to one class (at random, every class owning
  at least one); a sample has mean ``centre_scale`` on its class's features and 0 elsewhere, plus
  ``noise * |N(0, 1)|``: nonnegative, a parts-based structure NMF recovers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CENTRES", "clustered_views"]

#: How the class centres of a view are drawn.
CENTRES = ("gaussian", "planted-blocks")


def clustered_views(
    n: int,
    k: int,
    dims: Sequence[int],
    seed: int,
    noise: float = 1.5,
    centre_scale: float = 2.0,
    centres: str = "gaussian",
) -> tuple[list[np.ndarray], np.ndarray]:
    """Views of ``n`` samples in ``k`` classes, and the classes.

    Parameters
    ----------
    n, k : int
        Samples and classes.
    dims : sequence of int
        Features of each view (``>= k`` for ``planted-blocks``).
    seed : int
        Seed of the numpy Generator that draws everything (classes first, then view by view).
    noise : float
        Scale of the per-sample noise.
    centre_scale : float
        Scale of the class centres (``gaussian``: their standard deviation; ``planted-blocks``:
        the mean on a class's own features).
    centres : {"gaussian", "planted-blocks"}
        How the centres are drawn (:data:`CENTRES`, see the module's text).

    Returns
    -------
    views : list of ndarray, shapes (n, d_m), float64
    y : ndarray, shape (n,)
        Classes in ``0 .. k - 1``.

    Raises
    ------
    ValueError
        On an unknown ``centres``.
    """
    if centres not in CENTRES:
        raise ValueError(f"unknown centres {centres!r}; use one of {CENTRES}")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    views = []
    for d in dims:
        if centres == "gaussian":
            centre = centre_scale * rng.normal(size=(k, d))
            views.append(centre[y] + noise * rng.normal(size=(n, d)))
        else:
            owner = np.concatenate([np.arange(k), rng.integers(0, k, d - k)])
            centre = centre_scale * (owner[None, :] == np.arange(k)[:, None])
            views.append(centre[y] + noise * np.abs(rng.normal(size=(n, d))))
    return views, y
