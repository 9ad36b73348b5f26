"""Client data: which view a client holds and how it is loaded.

Views are held samples x features (``n x d``); an algorithm that works on features x samples (paper
A) transposes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view

__all__ = ["ClientView", "DataError", "load_client_view", "partition_from_node_config", "synthetic_spec"]


class DataError(ValueError):
    """A client's data cannot be used (missing, unreadable, malformed, or inconsistent)."""


@dataclass(frozen=True)
class ClientView:
    """One client's view.

    Attributes
    ----------
    features : ndarray, shape (n, d)
        Samples x features, float64.
    source : str
        Where the view came from, for messages and logs.
    """

    features: np.ndarray
    source: str


def partition_from_node_config(node_config: Mapping[str, Any]) -> tuple[int, int | None]:
    """Read ``partition-id`` (and ``num-partitions`` if given) from a node config.

    Parameters
    ----------
    node_config : mapping
        ``context.node_config``.

    Returns
    -------
    partition_id : int
    num_partitions : int or None

    Raises
    ------
    DataError
        When ``partition-id`` is missing or not a nonnegative integer.
    """
    if "partition-id" not in node_config:
        raise DataError(
            "node config has no 'partition-id': start the SuperNode with "
            "--node-config \"partition-id=<p> num-partitions=<m>\""
        )
    pid = node_config["partition-id"]
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise DataError(f"node config 'partition-id' = {pid!r} must be an integer >= 0")
    num = node_config.get("num-partitions")
    return pid, (int(num) if num is not None else None)


def synthetic_spec(cfg: Mapping[str, Any]) -> SyntheticSpec:
    """Synthetic-data parameters from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.config.validate_run_config`.

    Returns
    -------
    SyntheticSpec
    """
    return SyntheticSpec(
        num_samples=cfg["num-samples"],
        view_dim=cfg["view-dim"],
        rank=cfg["rank"],
        heterogeneity=cfg["heterogeneity"],
        noise=cfg["noise"],
        seed=cfg["seed"],
    )


def load_client_view(cfg: Mapping[str, Any], partition_id: int) -> ClientView:
    """Load the view of client ``partition_id`` (and nothing else).

    Parameters
    ----------
    cfg : mapping
        Validated run config.
    partition_id : int

    Returns
    -------
    ClientView

    Raises
    ------
    DataError
        When ``partition_id`` has no view.
    """
    m = cfg["num-clients"]
    if partition_id >= m:
        raise DataError(
            f"partition-id {partition_id} has no view: the run has num-clients = {m} "
            f"(partition ids 0..{m - 1})"
        )
    view = make_synthetic_view(synthetic_spec(cfg), partition_id)
    source = (
        f"synthetic view {partition_id} (seed={cfg['seed']}, h={cfg['heterogeneity']}, "
        f"n={cfg['num-samples']}, d={cfg['view-dim']})"
    )
    return ClientView(features=view.x.T, source=source)
