"""ClientApp: read the run and node config, load this node's view, build the algorithm's client.

The same code serves simulated and deployed SuperNodes; the node config names the partition
(``partition-id``, ``num-partitions``) and may name this organisation's own single-view file
(``data-file``), which then replaces run config ``dataset`` on this node.
"""

from __future__ import annotations

from flwr.client import Client, ClientApp
from flwr.common import Context

from fedmf_app.config import validate_run_config
from fedmf_app.data import load_client_view, partition_from_node_config
from fedmf_app.registry import client_class

__all__ = ["app", "client_fn"]


def client_fn(context: Context) -> Client:
    """Build this node's client.

    Parameters
    ----------
    context : Context

    Returns
    -------
    flwr.client.Client
    """
    cfg = validate_run_config(context.run_config)
    partition_id, num_partitions = partition_from_node_config(context.node_config)
    view = load_client_view(cfg, partition_id, context.node_config)
    client = client_class(cfg["algorithm"])(context, cfg, partition_id, num_partitions, view)
    return client.to_client()


app = ClientApp(client_fn=client_fn)
