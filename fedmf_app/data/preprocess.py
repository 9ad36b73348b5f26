"""Paper A's real-data preparation of one view, done by each client on its own view.

1. Views with negative entries (the NMF-type methods need ``X >= 0``) are handled by the named
   choice ``negative-values`` ([A]; the paper's data sets are nonnegative, so it does not say):

   * ``"min-max"`` (default): each feature of that view scaled to ``[0, 1]``,
     ``(x - min_j) / (max_j - min_j)`` (a constant feature becomes 0); the choice measured on HW's
     ``kar`` view;
   * ``"shift"``: the view's most negative value subtracted from every entry (keeps the view's
     geometry, distances and relative feature scales);
   * ``"error"``: refuse the view, naming it.

   Nonnegative views are never changed by this step.
2. ``view-normalisation``: ``"frobenius"`` (paper A: ``X_p / ||X_p||_F``, so every view weighs the
   same in the sum of the clients' losses) or ``"none"``.
"""

from __future__ import annotations

import numpy as np

from fedmf_app.data.errors import DataError

__all__ = ["NEGATIVE_VALUES", "VIEW_NORMALISATIONS", "prepare_view"]

#: Allowed values of run-config ``negative-values``.
NEGATIVE_VALUES: tuple[str, ...] = ("min-max", "shift", "error")
#: Allowed values of run-config ``view-normalisation``.
VIEW_NORMALISATIONS: tuple[str, ...] = ("frobenius", "none")


def prepare_view(x: np.ndarray, negative_values: str, normalisation: str, where: str) -> np.ndarray:
    """Make one view nonnegative (if needed) and normalise it.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Samples x features, finite.
    negative_values : str
        One of :data:`NEGATIVE_VALUES`.
    normalisation : str
        One of :data:`VIEW_NORMALISATIONS`.
    where : str
        The view's source, for messages.

    Returns
    -------
    ndarray, shape (n, d)
        A new float64 array, ``>= 0``.

    Raises
    ------
    DataError
        When the view has negative entries and ``negative_values = "error"``, or is all zeros
        under Frobenius normalisation.
    """
    out = np.array(x, dtype=np.float64)
    low = float(out.min())
    if low < 0.0:
        if negative_values == "error":
            raise DataError(
                f"{where} has negative values (minimum {low:.4g}) but the method needs nonnegative "
                'input; set run config \'negative-values\' to "min-max" or "shift"'
            )
        if negative_values == "min-max":
            col_min = out.min(axis=0)
            span = out.max(axis=0) - col_min
            out = (out - col_min) / np.where(span > 0, span, 1.0)
        else:
            out -= low
    if normalisation == "frobenius":
        norm = float(np.linalg.norm(out))
        if norm == 0.0:
            raise DataError(f"{where} is all zeros: it cannot be normalised by its Frobenius norm")
        out /= norm
    return out
