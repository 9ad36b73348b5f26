"""PromptGrid: the same replies as Flower's Grid, collected without the fixed 3 s wait."""

from types import SimpleNamespace

from fedmf_app.federated.prompt_grid import PromptGrid


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
