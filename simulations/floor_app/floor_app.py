"""A no-op Flower app: each round the ServerApp sends one message to every node, the ClientApp
answers at once, and the ServerApp pulls the replies every ``poll-s`` seconds (0.1 s: the
shortest wait of fedmf_app's ServerApp, :class:`fedmf_app.federated.prompt_grid.PromptGrid`, which
backs off to 0.25 s as a wait grows; this app does not back off).
What a round costs here is Flower's: the SuperNodes' polls (or the simulation engine's), a new
ClientApp process per message (deployment), the transport. The messages are empty by default;
run config ``down-floats`` / ``up-floats`` give each message / reply one array of that many
float64 entries, so that a round can carry the bytes of a real run's round. The ServerApp logs
``floor round <i>: <seconds> s`` for every round.
"""

from __future__ import annotations

import time
from logging import INFO

import numpy as np
from flwr.app import Array, ArrayRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

client = ClientApp()
server = ServerApp()


def payload(floats: int) -> RecordDict:
    """Empty content for ``floats = 0``, else one ArrayRecord of ``floats`` float64 zeros."""
    if floats <= 0:
        return RecordDict()
    return RecordDict({"payload": ArrayRecord({"x": Array(np.zeros(floats))})})


@client.query()
def answer(message: Message, context: Context) -> Message:
    """Reply at once, with ``up-floats`` entries."""
    return Message(payload(int(context.run_config["up-floats"])), reply_to=message)


@server.main()
def main(grid: Grid, context: Context) -> None:
    """Wait for ``num-nodes`` SuperNodes, then run ``num-rounds`` rounds of ``down-floats`` messages."""
    num_nodes, poll_s = int(context.run_config["num-nodes"]), float(context.run_config["poll-s"])
    down = int(context.run_config["down-floats"])
    while len(nodes := list(grid.get_node_ids())) < num_nodes:
        time.sleep(poll_s)
    for server_round in range(1, int(context.run_config["num-rounds"]) + 1):
        started = time.perf_counter()
        messages = [grid.create_message(payload(down), "query", node, str(server_round)) for node in nodes]
        pending = set(grid.push_messages(messages))
        while pending:
            replies = list(grid.pull_messages(pending))
            pending.difference_update(m.metadata.reply_to_message_id for m in replies)
            if pending:
                time.sleep(poll_s)
        log(INFO, "floor round %d: %.3f s", server_round, time.perf_counter() - started)
