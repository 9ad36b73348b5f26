"""A Grid that collects replies as soon as they arrive, and notices when its SuperLink is gone.

Flower 1.42's deployment Grid (``HttpGrid.send_and_receive``) pushes a round's messages and then
pulls the replies with a fixed 3 s sleep between pulls, so a round that the clients finish in
0.5 s still costs 3 s on the ServerApp side. :class:`PromptGrid` wraps the Grid Flower hands to the
ServerApp and does the same push and pulls with a short sleep (:data:`REPLY_POLL_S`);
everything else is delegated unchanged. The legacy ``Server`` loop, the Strategy and the
ClientApps are the same; only the wait between pulls changes.

Flower's Grid retries a call to a SuperLink that does not answer without end (a ServerApp whose
SuperLink was killed waits forever). :class:`PromptGrid` gives every call to the SuperLink
``lost_after`` seconds; a call that takes longer raises :class:`SuperLinkLost`, so that the
ServerApp can mark its run interrupted and exit (:func:`fedmf_app.server_app.main`).
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from flwr.app import Message, RecordDict
from flwr.server import Grid
from flwr.supercore.run import Run

__all__ = ["REPLY_POLL_S", "PromptGrid", "SuperLinkLost"]

#: [A] Seconds between the pulls of replies that have not all arrived (Flower's own ServerApp waits
#: a fixed 3 s).
REPLY_POLL_S = 0.1

Result = TypeVar("Result")


class SuperLinkLost(RuntimeError):
    """The SuperLink did not answer a call in time (it stopped, or the connection to it is gone)."""


class PromptGrid(Grid):
    """Delegates to ``grid``; :meth:`send_and_receive` pulls every ``poll_s`` seconds.

    Parameters
    ----------
    grid : flwr.server.Grid
        The Grid the ServerApp was given.
    poll_s : float
        Seconds between two pulls of replies that have not all arrived.
    lost_after : float
        Seconds a call to the SuperLink may take before it counts as lost (:class:`SuperLinkLost`).
    """

    def __init__(self, grid: Grid, poll_s: float = REPLY_POLL_S, lost_after: float = 60.0) -> None:
        self._grid = grid
        self._poll_s = poll_s
        self._lost_after = lost_after
        self._calls = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="superlink-call"
        )

    def _call(self, what: str, call: Callable[[], Result]) -> Result:
        """``call()`` on a worker thread, given :attr:`lost_after` seconds.

        Raises
        ------
        SuperLinkLost
            When it has not returned by then.
        """
        future = self._calls.submit(call)
        try:
            return future.result(timeout=self._lost_after)
        except concurrent.futures.TimeoutError:
            raise SuperLinkLost(
                f"the SuperLink did not answer {what} within {self._lost_after:g} s (it stopped, or the "
                "connection to it is gone)"
            ) from None

    def set_run(self, run: Run) -> None:
        self._grid.set_run(run)

    @property
    def run(self) -> Run:
        return self._grid.run

    def create_message(
        self,
        content: RecordDict,
        message_type: str,
        dst_node_id: int,
        group_id: str,
        ttl: float | None = None,
    ) -> Message:
        return self._grid.create_message(content, message_type, dst_node_id, group_id, ttl)

    def get_node_ids(self) -> Iterable[int]:
        return self._call("a request for the nodes", lambda: list(self._grid.get_node_ids()))

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        messages = list(messages)
        return self._call("a push of messages", lambda: list(self._grid.push_messages(messages)))

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        message_ids = list(message_ids)
        return self._call("a pull of replies", lambda: list(self._grid.pull_messages(message_ids)))

    def send_and_receive(
        self, messages: Iterable[Message], *, timeout: float | None = None
    ) -> Iterable[Message]:
        """Push ``messages``, then pull their replies until all are in or ``timeout`` passes.

        Parameters
        ----------
        messages : iterable of Message
        timeout : float, optional
            Seconds to wait for the replies (``None``: until all have arrived).

        Returns
        -------
        list of Message
            The replies received (fewer than the messages when the timeout passed first).
        """
        pending = set(self.push_messages(messages))
        end = None if timeout is None else time.monotonic() + timeout
        replies: list[Message] = []
        while True:
            received = list(self.pull_messages(pending))
            replies.extend(received)
            pending.difference_update(m.metadata.reply_to_message_id for m in received)
            if not pending:
                return replies
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return replies
            time.sleep(self._poll_s if left is None else min(self._poll_s, left))
