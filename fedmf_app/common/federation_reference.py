"""The one interface of every family's in-process reference federation (no Flower).

Each family's ``reference.py`` defines ``REFERENCE``: a class that runs every client and the
server in one process, with the same kernels, in the same order and with the same seeds as the
family's Strategy and NumPyClients. The tests check the Flower runs against it, and the
benchmarks time it. :class:`FederationReference` is what the three have in common (a structure
test checks each family's ``REFERENCE`` against it).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["FederationReference"]


class FederationReference(Protocol):
    """An in-process federation of one method family.

    Parameters
    ----------
    views : list of ndarray or csr_matrix, each shape (N, d_m)
        The clients' views, samples by features, as a client loads them (preprocessed).
    params : object
        The family's typed parameters (its ``FAMILY.params``).
    num_clusters : int
        Clusters of the final clustering.
    seed : int
        The run's seed.
    observed : ndarray of bool, shape (N, M), optional
        The run's missing-view mask (column ``m``: the rows view ``m`` observes); ``None``: every
        view observes every row.

    Attributes
    ----------
    history : list of dict
        One record per round done, as :meth:`round` returns it.
    """

    history: list[dict[str, Any]]

    def __init__(
        self,
        views: list[Any],
        params: Any,
        num_clusters: int,
        seed: int = 0,
        observed: np.ndarray | None = None,
    ) -> None: ...

    def round(self) -> dict[str, Any]:
        """One server round: every client, then the server.

        Returns
        -------
        dict
            The round's record (also appended to :attr:`history`).
        """
        ...

    def labels(self) -> np.ndarray:
        """The clustering the run would end with after the rounds done.

        Returns
        -------
        ndarray of int, shape (N,)
        """
        ...
