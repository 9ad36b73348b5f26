"""PromptGrid: the same replies as Flower's Grid, collected without the fixed 3 s wait."""

from types import SimpleNamespace

import pytest

from fedmf_app.federated import prompt_grid
from fedmf_app.federated.prompt_grid import (
    REPLY_POLL_FRACTION,
    REPLY_POLL_MAX_S,
    REPLY_POLL_S,
    PromptGrid,
    pull_wait,
)


class _SlowRepliesGrid:
    """Answers message ``i`` on the ``arrives[i]``-th pull (counting from 1); records every call."""

    def __init__(self, arrives):
        self.arrives = arrives
        self.pulls = 0
        self.pushed = []
        self.run = SimpleNamespace(run_id=7)

    def push_messages(self, messages):
        self.pushed.extend(messages)
        return [f"id{i}" for i in range(len(self.pushed))]

    def pull_messages(self, message_ids):
        self.pulls += 1
        wanted = set(message_ids)
        return [
            SimpleNamespace(metadata=SimpleNamespace(reply_to_message_id=f"id{i}"))
            for i, at in enumerate(self.arrives)
            if at == self.pulls and f"id{i}" in wanted
        ]

    def get_node_ids(self):
        return [1, 2, 3]


def test_all_replies_are_collected_and_pulling_stops_when_the_last_arrives():
    inner = _SlowRepliesGrid([1, 4, 2])
    grid = PromptGrid(inner, poll_s=0.001)
    replies = grid.send_and_receive(["a", "b", "c"])
    assert sorted(r.metadata.reply_to_message_id for r in replies) == ["id0", "id1", "id2"]
    assert inner.pulls == 4 and inner.pushed == ["a", "b", "c"]
    assert grid.run.run_id == 7 and list(grid.get_node_ids()) == [1, 2, 3]


def test_a_timeout_returns_the_replies_received_so_far():
    inner = _SlowRepliesGrid([1, 10**9])
    replies = PromptGrid(inner, poll_s=0.001).send_and_receive(["a", "b"], timeout=0.05)
    assert [r.metadata.reply_to_message_id for r in replies] == ["id0"]
    assert inner.pulls >= 2  # it kept pulling until the timeout


@pytest.mark.parametrize("waited", [0.0, 0.3, 0.99, 1.0, 2.5, 4.99, 5.0, 7.0, 600.0])
def test_the_wait_between_pulls_is_a_tenth_of_the_wait_so_far_within_its_bounds(waited):
    wait = pull_wait(waited)
    assert REPLY_POLL_S <= wait <= REPLY_POLL_MAX_S
    # never longer than a tenth of the time waited, unless that is below the shortest wait
    assert wait <= max(REPLY_POLL_S, REPLY_POLL_FRACTION * waited) + 1e-12
    assert wait == pytest.approx(min(max(REPLY_POLL_S, REPLY_POLL_FRACTION * waited), REPLY_POLL_MAX_S))


def test_pulls_come_quickly_at_first_and_less_often_as_the_wait_grows(monkeypatch):
    """A reply that takes 8 s of a fake clock: pulled every 0.1 s during the first second, never
    more than REPLY_POLL_MAX_S apart (so collected within that of its arrival), and with far fewer
    pulls than a fixed 0.1 s would make."""
    clock = {"now": 0.0}
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        clock["now"] += seconds

    monkeypatch.setattr(prompt_grid.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(prompt_grid.time, "sleep", sleep)

    class LateGrid(_SlowRepliesGrid):
        def pull_messages(self, message_ids):
            self.pulls += 1
            if clock["now"] < 8.0:
                return []
            return [SimpleNamespace(metadata=SimpleNamespace(reply_to_message_id="id0"))]

    inner = LateGrid([])
    replies = PromptGrid(inner).send_and_receive(["a"])
    assert [r.metadata.reply_to_message_id for r in replies] == ["id0"]
    assert all(s == pytest.approx(REPLY_POLL_S) for s in sleeps[:9])  # the first second
    assert max(sleeps) == pytest.approx(REPLY_POLL_MAX_S)
    assert sorted(sleeps) == sleeps  # never shorter than the one before
    assert 8.0 <= clock["now"] <= 8.0 + REPLY_POLL_MAX_S
    fixed = 8.0 / REPLY_POLL_S
    assert inner.pulls < 0.6 * fixed
