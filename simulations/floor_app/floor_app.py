"""A no-op Flower app: each round the ServerApp sends one empty message to every node, the
ClientApp answers at once with an empty reply, and the ServerApp pulls the replies every
``poll-s`` seconds, as fedmf_app's ServerApp does (:class:`fedmf_app.federated.prompt_grid.PromptGrid`).
What a round costs here is Flower's: the SuperNodes' polls, a new ClientApp process per message,
the transport. The ServerApp logs ``floor round <i>: <seconds> s`` for every round.
"""

from __future__ import annotations

import time
from logging import INFO

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

client = ClientApp()
server = ServerApp()


@client.query()
def answer(message: Message, context: Context) -> Message:
    """Reply at once with an empty message."""
    return Message(RecordDict(), reply_to=message)


@server.main()
def main(grid: Grid, context: Context) -> None:
    """Wait for ``num-nodes`` SuperNodes, then run ``num-rounds`` rounds of empty messages."""
    num_nodes, poll_s = int(context.run_config["num-nodes"]), float(context.run_config["poll-s"])
    while len(nodes := list(grid.get_node_ids())) < num_nodes:
        time.sleep(poll_s)
    for server_round in range(1, int(context.run_config["num-rounds"]) + 1):
        started = time.perf_counter()
        messages = [grid.create_message(RecordDict(), "query", node, str(server_round)) for node in nodes]
        pending = set(grid.push_messages(messages))
        while pending:
            replies = list(grid.pull_messages(pending))
            pending.difference_update(m.metadata.reply_to_message_id for m in replies)
            if pending:
                time.sleep(poll_s)
        log(INFO, "floor round %d: %.3f s", server_round, time.perf_counter() - started)
