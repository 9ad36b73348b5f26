"""The organisations decide what is protected: a SuperNode refuses, before it answers anything, a
run whose run config asks less than its node-config policy (downgrades by the server side: secure
aggregation off, unsigned keys, one client), naming the node, the key and its policy (in process)."""

import pytest

from fedmf_app.deployment.federation import LocalFederation
from fedmf_app.federated.node_policy import STRICT_NODE_POLICY, NodePolicyError, check_node_policy
from fedmf_app.federated.strategy import FederationError
from fedmf_app.in_process import InProcessProxy, run_in_process
from fedmf_app.registry import validate_run_config

from support.data import IMK_BASE, SONMF_SMALL
from support.federation import signed_node_configs

SONMF = {**SONMF_SMALL, "num-server-rounds": 2, "connect-timeout-s": 0.2}


class _Counting(InProcessProxy):
    """Counts the replies a node sends."""

    replies = 0

    def get_properties(self, ins, timeout, group_id):
        res = super().get_properties(ins, timeout, group_id)
        _Counting.replies += 1
        return res


def _strict_nodes(tmp_path, m=3):
    signed = signed_node_configs(tmp_path / "keys", m)
    return lambda p: {**STRICT_NODE_POLICY, **signed[p]}


def _refused(tmp_path, overrides, match, m=3):
    _Counting.replies = 0
    with pytest.raises(FederationError, match=match):
        run_in_process(
            overrides, tmp_path / "out", node_config=_strict_nodes(tmp_path, m), proxy_class=_Counting
        )
    assert _Counting.replies == 0  # nothing answered, not even the shape of a view


def test_a_downgrade_by_run_config_is_refused_by_the_node(tmp_path):
    _refused(
        tmp_path,
        {**SONMF, "secure-aggregation": False},
        r"SuperNode 10\d \(partition \d\) refuses this run: its policy \(node config "
        r"'require-secure-aggregation' = true\) needs 'secure-aggregation' = true",
    )


def test_unsigned_keys_are_refused_by_a_node_requiring_signed_keys(tmp_path):
    _refused(
        tmp_path,
        {**SONMF, "secure-aggregation": True, "secure-aggregation-signed-keys": False},
        r"refuses this run: its policy \(node config 'require-signed-keys' = true\) needs "
        r"'secure-aggregation-signed-keys' = true",
    )


def test_a_run_of_one_client_is_refused_by_the_node_and_by_the_key_agreement(tmp_path):
    one = {**SONMF, "num-clients": 1, "secure-aggregation": True, "secure-aggregation-signed-keys": True}
    _refused(
        tmp_path, one, r"min-clients' = 2\) needs 'num-clients' >= 2, but the run has 'num-clients' = 1", m=1
    )
    # a node without any policy still refuses to "mask" an upload that would be the sum on its own
    with pytest.raises(FederationError, match=r"secure aggregation over num-clients = 1 is refused"):
        run_in_process({**one, "secure-aggregation-signed-keys": False}, tmp_path / "plain")


def test_fmvc_imk_cannot_send_its_graphs_in_the_clear(tmp_path):
    # no option turns the masked graph sum off; the policy's demand is secure-aggregation itself
    cfg = validate_run_config({**IMK_BASE, "num-server-rounds": 1})
    assert not any(key.startswith("imk.secure") or key == "imk.mask-frac-bits" for key in cfg)
    _refused(tmp_path, {**IMK_BASE, "secure-aggregation-signed-keys": True}, r"'secure-aggregation' = true")


def test_a_run_meeting_the_strict_policy_completes(tmp_path):
    cfg = {**SONMF, "secure-aggregation": True, "secure-aggregation-signed-keys": True}
    run = run_in_process(cfg, tmp_path / "out", node_config=_strict_nodes(tmp_path))
    assert run.recorder.data["status"] == "completed"


def test_policy_values_are_checked():
    cfg = validate_run_config({**SONMF, "secure-aggregation": True})
    for node_config, match in [
        ({"min-clients": 1}, "'min-clients' = 1 must be at least 2"),
        ({"min-clients": "two"}, "must be an integer"),
        ({"require-secure-aggregation": "yes"}, "must be true or false"),
        ({"min-clients": 4}, r"needs 'num-clients' >= 4"),
    ]:
        with pytest.raises(NodePolicyError, match=match):
            check_node_policy(cfg, node_config, "SuperNode 1 (partition 0)", aligns=False)
    check_node_policy(cfg, {"require-secure-aggregation": "true", "min-clients": 3}, "n", aligns=False)


def test_the_local_federation_is_strict_and_gives_each_node_only_its_own_private_key(tmp_path):
    federation = LocalFederation(tmp_path / "w", 3, ".")
    configs = [federation.node_config(i) for i in range(3)]
    for i, config in enumerate(configs):
        assert {k: config[k] for k in STRICT_NODE_POLICY} == STRICT_NODE_POLICY
        assert config["signing-key"] == str(
            tmp_path / "w" / f"supernode-{i}" / "own-key" / f"supernode-{i}.key"
        )
        assert config["peer-keys"] == str(tmp_path / "w" / "peer-keys")
    assert (
        LocalFederation(tmp_path / "w", 3, ".", node_policy={})
        .node_config(0)
        .keys()
        .isdisjoint(STRICT_NODE_POLICY)
    )


def test_a_node_with_a_signing_key_signs_fmvc_imks_graph_keys_too(tmp_path):
    signed = signed_node_configs(tmp_path / "keys", 3)

    def node(p):
        return signed[p]

    # the graph sum's keys are the run's one key agreement: signed by every node that holds a key
    run = run_in_process({**IMK_BASE, "num-server-rounds": 1}, tmp_path / "out", node_config=node)
    assert run.recorder.data["status"] == "completed"
