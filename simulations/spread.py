"""The one mean ± spread formatter of the tables the drivers print (no Flower, no app state).

Every table cell that summarises runs over seeds is :func:`mean_spread`, and every table that has
such cells names the statistic in its header or caption with :data:`SPREAD` (:func:`header`): the
mean and the population standard deviation (``ddof = 0``) over the seeds, in the cell's unit.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["SPREAD", "header", "mean_spread"]

#: The statistic of every ``mean ± spread`` cell, as the tables name it.
SPREAD = "mean ± sd over the seeds (population sd, ddof = 0)"


def mean_spread(values: Iterable[float], digits: int = 1, scale: float = 1.0) -> str:
    """``"<mean> ± <sd>"`` of ``values`` times ``scale``; just the mean for a single value.

    Parameters
    ----------
    values : iterable of float
    digits : int
        Decimals of both numbers.
    scale : float
        E.g. 100 for scores in %.

    Returns
    -------
    str
    """
    x = scale * np.asarray(list(values), dtype=np.float64)
    if x.size == 1:
        return f"{x[0]:.{digits}f}"
    return f"{x.mean():.{digits}f} ± {x.std():.{digits}f}"


def header(what: str) -> str:
    """A caption naming the statistic, e.g. ``header("ACC / NMI in %")``."""
    return f"{what}, {SPREAD}"
