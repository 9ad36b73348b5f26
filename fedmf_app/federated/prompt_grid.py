"""A Grid that collects replies as soon as they arrive, and notices when its SuperLink is gone.

Flower 1.42's deployment Grid (``HttpGrid.send_and_receive``) pushes a round's messages and then
pulls the replies with a fixed 3 s sleep between pulls, so a round that the clients finish in
0.5 s still costs 3 s on the ServerApp side. :class:`PromptGrid` wraps the Grid Flower hands to the
ServerApp and does the same push and pulls with a short sleep that grows with the wait
(:func:`pull_wait`): every :data:`REPLY_POLL_S` s at first, then a tenth of the time waited
(:data:`REPLY_POLL_FRACTION`), at most :data:`REPLY_POLL_MAX_S`. A simulated round, whose
replies come within a second, is pulled every 0.1 s; a deployed round, where each SuperNode
sleeps 3 s between its own polls, is not pulled ten times a second for several seconds (every
pull costs the SuperLink and the ServerApp CPU that the ClientApps on the same machine would
use). Everything else is delegated unchanged. The legacy ``Server`` loop, the Strategy and the
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

__all__ = [
    "REPLY_POLL_FRACTION",
    "REPLY_POLL_MAX_S",
    "REPLY_POLL_S",
    "PromptGrid",
    "SuperLinkLost",
    "pull_wait",
]

#: [A] Shortest wait, in seconds, between two pulls of replies that have not all arrived (Flower's
#: own ServerApp waits a fixed 3 s).
REPLY_POLL_S = 0.1

#: [A] Longest wait, in seconds, between two pulls.
REPLY_POLL_MAX_S = 0.25

#: [A] Between those, the wait is this fraction of the time waited so far: a reply is collected at
#: most a tenth of the wait (and at most :data:`REPLY_POLL_MAX_S`) after it arrived.
REPLY_POLL_FRACTION = 0.1


def pull_wait(
    waited: float,
    poll_s: float = REPLY_POLL_S,
    poll_max_s: float = REPLY_POLL_MAX_S,
    fraction: float = REPLY_POLL_FRACTION,
) -> float:
    """Seconds to sleep before the next pull, after ``waited`` seconds without every reply.

    Parameters
    ----------
    waited : float
        Seconds since the messages were pushed.
    poll_s, poll_max_s : float
        Shortest and longest wait.
    fraction : float
        The wait in between, as a fraction of ``waited``.

    Returns
    -------
    float
        ``min(max(poll_s, fraction * waited), poll_max_s)``.
    """
    return min(max(poll_s, fraction * waited), poll_max_s)


Result = TypeVar("Result")


class SuperLinkLost(RuntimeError):
    """The SuperLink did not answer a call in time (it stopped, or the connection to it is gone)."""


class PromptGrid(Grid):
    """Delegates to ``grid``; :meth:`send_and_receive` pulls at the waits of :func:`pull_wait`.

    Parameters
    ----------
    grid : flwr.server.Grid
        The Grid the ServerApp was given.
    poll_s : float
        Shortest wait between two pulls of replies that have not all arrived.
    poll_max_s : float
        Longest wait (at least ``poll_s``).
    lost_after : float
        Seconds a call to the SuperLink may take before it counts as lost (:class:`SuperLinkLost`).
    """

    def __init__(
        self,
        grid: Grid,
        poll_s: float = REPLY_POLL_S,
        poll_max_s: float = REPLY_POLL_MAX_S,
        lost_after: float = 60.0,
    ) -> None:
        self._grid = grid
        self._poll_s = poll_s
        self._poll_max_s = max(poll_max_s, poll_s)
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
        pushed = time.monotonic()
        end = None if timeout is None else pushed + timeout
        replies: list[Message] = []
        while True:
            received = list(self.pull_messages(pending))
            replies.extend(received)
            pending.difference_update(m.metadata.reply_to_message_id for m in received)
            if not pending:
                return replies
            now = time.monotonic()
            left = None if end is None else end - now
            if left is not None and left <= 0:
                return replies
            wait = pull_wait(now - pushed, self._poll_s, self._poll_max_s)
            time.sleep(wait if left is None else min(wait, left))
