"""ClientApp: read the run and node config, load this node's view, build the algorithm's client.

The same code serves simulated and deployed SuperNodes; the node config names the partition
(``partition-id``, ``num-partitions``) and may name this organisation's own single-view file
(``data-file``), which then replaces run config ``dataset`` on this node. After a sample-ID
alignment the node loads only the rows it kept
(:func:`~fedmf_app.federated.alignment.aligned_rows`). A node whose data cannot be loaded fails
with a :class:`~fedmf_app.data.DataError` that names the node (its id and node config) as well
as the file and the problem; the server stops the run with that message in the
handshake.
"""

from __future__ import annotations

from flwr.client import Client, ClientApp
from flwr.common import Context

from fedmf_app.data import DataError, load_client_view, partition_from_node_config
from fedmf_app.federated.alignment import aligned_rows
from fedmf_app.federated.node_count import with_num_clients
from fedmf_app.registry import client_class, data_needs, validate_run_config

__all__ = ["app", "client_fn"]


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
    fedmf_app.data.DataError
        When this node's data cannot be loaded; the message starts with the node's id and
        node config.
    """
    cfg = validate_run_config(with_num_clients(context.run_config, context.node_config))
    method_client = client_class(cfg["algorithm"])
    needs = data_needs(cfg)
    rows = aligned_rows(context)
    try:
        partition_id, num_partitions = partition_from_node_config(context.node_config)
        view = load_client_view(cfg, partition_id, context.node_config, rows=rows, needs=needs)
    except DataError as exc:
        node = " ".join(f"{k}={v!r}" for k, v in context.node_config.items())
        raise DataError(f"SuperNode {context.node_id} (node config: {node}): {exc}") from exc
    return method_client(context, cfg, partition_id, num_partitions, view).to_client()


app = ClientApp(client_fn=client_fn)
