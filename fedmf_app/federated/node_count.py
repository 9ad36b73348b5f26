"""Run config ``num-clients = 0``: the number of clients is the number of SuperNodes.

So that a user sets one number (``flwr run --federation-config "num-supernodes=6"``, or as many
SuperNodes as organisations), ``num-clients`` defaults to 0 and is resolved where it can be:

* the ServerApp (:func:`count_supernodes`): when this machine can read the data set, one client
  per view (the handshake then waits for that many SuperNodes); otherwise the SuperNodes
  connected once their count has stayed the same for :data:`SETTLE_S` seconds (the simulation
  engine registers all of them before the ServerApp starts; in a deployment whose organisations
  start their SuperNodes minutes apart, set ``num-clients``);
* each ClientApp (:func:`with_num_clients`): its node config ``num-partitions`` (the simulation
  engine sets it to ``num-supernodes``; the handshake refuses a node whose ``num-partitions``
  is not the server's count);
* runs without SuperNodes (in process, the hydra runner, the estimators):
  :func:`fedmf_app.data.views_to_federate`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from logging import INFO
from typing import Any

from flwr.common.logger import log
from flwr.server import Grid

from fedmf_app.data import DataError, dataset_view_count
from fedmf_app.federated.handshake import FederationError

__all__ = ["SETTLE_S", "count_supernodes", "with_num_clients"]

#: Seconds the number of connected SuperNodes must stay the same before the ServerApp takes it.
SETTLE_S = 3.0


def count_supernodes(grid: Grid, cfg: Mapping[str, Any], poll_s: float = 0.2) -> int:
    """The run's client count when run config ``num-clients`` is 0.

    Parameters
    ----------
    grid : flwr.server.Grid
    cfg : mapping
        Validated run config (``dataset``, ``views``, ``connect-timeout-s``).
    poll_s : float
        Seconds between two looks at the connected SuperNodes.

    Returns
    -------
    int
        The data set's view count when this machine can read it, else the settled number of
        connected SuperNodes.

    Raises
    ------
    FederationError
        When no SuperNode connected within ``connect-timeout-s``.
    """
    views = dataset_view_count(cfg["dataset"], cfg["views"])
    if views is not None:
        log(INFO, "num-clients = 0: one client per view of the data set, %d", views)
        return views
    started = time.monotonic()
    deadline = started + float(cfg["connect-timeout-s"])
    count, since = len(list(grid.get_node_ids())), started
    while time.monotonic() < deadline:
        if count > 0 and time.monotonic() - since >= SETTLE_S:
            break
        time.sleep(poll_s)
        now = len(list(grid.get_node_ids()))
        if now != count:
            count, since = now, time.monotonic()
    if count == 0:
        raise FederationError(
            f"no SuperNode connected within run config 'connect-timeout-s' = {cfg['connect-timeout-s']:g} s "
            '(num-clients = 0 counts them); in simulation pass --federation-config "num-supernodes=<m>"'
        )
    seconds = time.monotonic() - started
    log(INFO, "num-clients = 0: %d SuperNodes connected (counted in %.1f s)", count, seconds)
    return count


def with_num_clients(run_config: Mapping[str, Any], node_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ClientApp's run config with ``num-clients = 0`` replaced by node config ``num-partitions``.

    Parameters
    ----------
    run_config : mapping
        ``context.run_config`` (not yet validated).
    node_config : mapping
        ``context.node_config``.

    Returns
    -------
    mapping
        ``run_config`` itself when ``num-clients`` is set, else a copy with the node's count.

    Raises
    ------
    fedmf_app.data.DataError
        When ``num-clients`` is 0 and the node config has no ``num-partitions``.
    """
    if str(run_config.get("num-clients", 0)) != "0":
        return run_config
    if "num-partitions" not in node_config:
        raise DataError(
            "run config 'num-clients' = 0 (one client per SuperNode) but node config has no "
            "'num-partitions': start the SuperNode with --node-config "
            '"partition-id=<p> num-partitions=<m>", or set run config num-clients'
        )
    return {**run_config, "num-clients": int(node_config["num-partitions"])}
