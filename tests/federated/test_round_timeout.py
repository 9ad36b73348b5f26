"""A node whose message outlives its TTL (run config ``round-timeout-s``) stops the run with a message
that names the key, its value and the partitions that did not reply, in a round, in the handshake
and in fmvc-imk's set-up; a node that fails for another reason gets no such advice (in process, the
proxies raising what Flower's proxy raises when the SuperLink answers "Message Unavailable")."""

import json

import pytest
from flwr.server.superlink.linkstate.utils import (
    MESSAGE_UNAVAILABLE_ERROR_REASON,
    REPLY_MESSAGE_UNAVAILABLE_ERROR_REASON,
)

from fedmf_app.federated.strategy import FederationError
from fedmf_app.federated.timeouts import expired, node_failure, timeout_advice
from fedmf_app.in_process import InProcessProxy, run_in_process

from support.data import IAI_SMALL, IMK_BASE


def _flower_error(reason):
    """What Flower 1.42's ``GridClientProxy`` raises for a reply that carries an error."""
    return ValueError(
        f"Message contains an Error (reason: {reason}). "
        "It originated during client-side execution of a message."
    )


def _expiring(in_round=None, reason=MESSAGE_UNAVAILABLE_ERROR_REASON):
    """A proxy whose fit (in ``in_round``; ``None``: every fit) raises Flower's expiry error."""

    class Expiring(InProcessProxy):
        def fit(self, ins, timeout, group_id):
            if in_round is None or int(ins.config.get("server-round", 0)) == in_round:
                raise _flower_error(reason)
            return super().fit(ins, timeout, group_id)

    return Expiring


def test_fmvc_iai_round_past_its_ttl_names_round_timeout_s_and_the_partitions(tmp_path):
    cfg = {**IAI_SMALL, "num-server-rounds": 3, "round-timeout-s": 45.0}
    proxies = {
        1: _expiring(in_round=2),
        2: _expiring(in_round=2, reason=REPLY_MESSAGE_UNAVAILABLE_ERROR_REASON),
    }
    with pytest.raises(FederationError) as info:
        run_in_process(cfg, tmp_path, proxy_class=proxies)
    message = str(info.value)
    assert message.startswith("round 2: no valid reply from partition(s) [1, 2]")
    assert "partition(s) [1, 2] did not reply within run config 'round-timeout-s' = 45 s" in message
    assert "round-timeout-s=90" in message  # a larger value to try
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "failed" and "'round-timeout-s' = 45 s" in result["error"]
    assert [r["round"] for r in result["rounds"]] == [1]


def test_a_client_error_that_is_no_timeout_gets_no_timeout_advice(tmp_path):
    class Failing(InProcessProxy):
        def fit(self, ins, timeout, group_id):
            raise _flower_error("ZeroDivisionError: division by zero")

    cfg = {**IAI_SMALL, "num-server-rounds": 2}
    with pytest.raises(FederationError, match=r"no valid reply from partition\(s\) \[0\]") as info:
        run_in_process(cfg, tmp_path, proxy_class={0: Failing})
    assert "round-timeout-s" not in str(info.value)


def test_handshake_past_its_ttl_names_round_timeout_s(tmp_path):
    class Silent(InProcessProxy):
        def get_properties(self, ins, timeout, group_id):
            raise _flower_error(MESSAGE_UNAVAILABLE_ERROR_REASON)

    cfg = {**IAI_SMALL, "round-timeout-s": 30.0}
    handshake = r"node-2 failed the handshake: it did not reply within run config 'round-timeout-s' = 30 s"
    with pytest.raises(FederationError, match=handshake):
        run_in_process(cfg, tmp_path, proxy_class={2: Silent})


def test_fmvc_imk_setup_past_its_ttl_names_round_timeout_s(tmp_path):
    cfg = {**IMK_BASE, "round-timeout-s": 20.0}
    setup = r"node-0 failed the setup: it did not reply within run config 'round-timeout-s' = 20 s"
    with pytest.raises(FederationError, match=setup):
        run_in_process(cfg, tmp_path, proxy_class={0: _expiring()})


def test_expiry_is_told_from_other_failures():
    assert expired(MESSAGE_UNAVAILABLE_ERROR_REASON)
    assert expired(REPLY_MESSAGE_UNAVAILABLE_ERROR_REASON)
    assert expired("Expected one Message but got: 0")
    assert not expired("Node Unavailable")
    assert not expired("ValueError: shapes (3,4) and (5,) not aligned")
    assert timeout_advice(["boom", "bang"], 600.0, "partition(s) [3]") == ""
    reasons = ["boom", str(_flower_error(MESSAGE_UNAVAILABLE_ERROR_REASON))]
    advice = timeout_advice(reasons, 600.0, "partition(s) [3]")
    assert advice.startswith("partition(s) [3] did not reply within run config 'round-timeout-s' = 600 s")
    assert "round-timeout-s=1200" in advice
    assert node_failure("SuperNode 7 failed", "boom", 600.0) == "SuperNode 7 failed: boom"
