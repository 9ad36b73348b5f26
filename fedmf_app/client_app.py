"""ClientApp: read the run and node config, load this node's view, build the algorithm's client.

The same code serves simulated and deployed SuperNodes; the node config names the partition
(``partition-id``, ``num-partitions``) and may name this organisation's own single-view file
(``data-file``), which then replaces run config ``dataset`` on this node. After a sample-ID
alignment the node loads only the rows it kept
(:func:`~fedmf_app.federated.alignment.aligned_rows`).

Flower's simulation engine gives its simulated SuperNodes no node config but their partition; the
environment variable :data:`NODE_CONFIG_ENV` (the ``--node-config`` syntax, e.g.
``state-dir="/var/fedmf" resume-run-id=42``), set by whoever starts the nodes' processes and never
by the run, adds node-config keys there (a SuperNode's own node config wins over it). A node whose
data cannot be loaded fails with an error that names the cause, never its paths: those stay in its
own log (:mod:`fedmf_app.federated.node_errors`).
"""

from __future__ import annotations

import os

from flwr.client import Client, ClientApp
from flwr.common import Context
from flwr.common.config import parse_config_args

from fedmf_app.data import DataError, load_client_view, partition_from_node_config
from fedmf_app.federated.alignment import aligned_rows
from fedmf_app.federated.node_count import with_num_clients
from fedmf_app.federated.node_errors import refusal
from fedmf_app.registry import client_class, data_needs, validate_run_config

__all__ = ["NODE_CONFIG_ENV", "app", "client_fn", "node_config_from_env"]

#: Environment variable holding node-config keys for nodes whose node config Flower fills itself.
NODE_CONFIG_ENV = "FEDMF_NODE_CONFIG"


def node_config_from_env() -> dict:
    """The node-config keys of :data:`NODE_CONFIG_ENV` (empty when it is not set).

    Raises
    ------
    ValueError
        When the variable is not in the ``--node-config`` syntax.
    """
    text = os.environ.get(NODE_CONFIG_ENV, "").strip()
    return dict(parse_config_args([text])) if text else {}


def client_fn(context: Context) -> Client:
    """Build this node's client.

    Parameters
    ----------
    context : Context

    Returns
    -------
    flwr.client.Client

    Raises
    ------
    fedmf_app.federated.node_errors.NodeError
        When this node's data cannot be loaded (the cause, without the node's paths).
    """
    context.node_config = {**node_config_from_env(), **context.node_config}
    cfg = validate_run_config(with_num_clients(context.run_config, context.node_config))
    method_client = client_class(cfg["algorithm"])
    needs = data_needs(cfg)
    rows = aligned_rows(context)
    try:
        partition_id, num_partitions = partition_from_node_config(context.node_config)
        view = load_client_view(cfg, partition_id, context.node_config, rows=rows, needs=needs)
    except DataError as exc:
        partition = context.node_config.get("partition-id", "?")
        raise refusal(f"SuperNode {context.node_id} (partition {partition})", None, exc) from exc
    return method_client(context, cfg, partition_id, num_partitions, view).to_client()


app = ClientApp(client_fn=client_fn)
