"""The one reader of every view as the clients of a run read them (no Flower, no app state)."""

from __future__ import annotations

from typing import Any

from fedmf_app.data import load_client_view
from fedmf_app.registry import data_needs

__all__ = ["client_views"]


def client_views(cfg: dict[str, Any], num_views: int) -> list[Any]:
    """Each view of the run's data set as its client reads it.

    Through the app's data layer (:func:`fedmf_app.data.load_client_view`, told what the run's
    family needs), one client per view: the same preparation, storage (a sparse file's view may
    come dense) and row order as the run's clients.

    Parameters
    ----------
    cfg : dict
        A validated run config (``dataset`` and the preparation keys).
    num_views : int
        ``M``, the data set's views (one client each).

    Returns
    -------
    list of ndarray or scipy.sparse.csr_matrix, each shape (N, d_m)
    """
    needs = data_needs(cfg)
    return [
        load_client_view(cfg, p, {"partition-id": p, "num-partitions": num_views}, needs=needs).features
        for p in range(num_views)
    ]
