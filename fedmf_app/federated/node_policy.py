"""What an organisation's SuperNode demands of a run before it answers anything (no Flower here).

The run config comes from whoever submits the run; the node config belongs to the organisation.
Node-config keys (all optional; a node without them follows the run config):

``require-secure-aggregation`` (bool)
    The run must set ``secure-aggregation = true`` and have at least 2 clients.
``require-signed-keys`` (bool)
    With secure aggregation on, the run must set ``secure-aggregation-signed-keys = true`` (every
    key-agreement key signed and checked against the peers' long-term keys).
``require-signed-psi`` (bool)
    When this node's data has sample IDs (the run aligns them), the run must sign the blinded
    points (``secure-aggregation-signed-keys = true``).
``min-clients`` (int, at least 2)
    The run's ``num-clients`` must be at least this.

A node that requires signed keys or points, or holds a ``signing-key`` (and so always verifies its
peers' signatures), must pin its peers' keys (``peer-fingerprints``): without pins it would trust
whatever keys are in ``peer-keys``, e.g. keys a coordinator handed out. Such a node refuses every
message until its node config has them.

The sizes a run may ask of a node are capped separately, per family, by the caps of its protocol
(``max-clusters``, ``max-rank``, ``max-list-depth``, ``max-anchors``:
:mod:`fedmf_app.federated.protocol`), and its state folder comes only from its own ``state-dir``.

Independently of any policy, a node whose node config has ``signing-key`` always signs its keys
and points and verifies its peers' (:func:`~fedmf_app.federated.secure_sum_flower.signs`),
whatever the run config says. :func:`check_node_policy` runs when
the ClientApp is built for a message, before the node's data is loaded or anything is answered, so
a run asking less is refused by every message, with a message naming the node, the key and its
policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NODE_POLICY_KEYS", "STRICT_NODE_POLICY", "NodePolicyError", "check_node_policy"]

#: The node-config keys of a node's policy.
NODE_POLICY_KEYS = ("require-secure-aggregation", "require-signed-keys", "require-signed-psi", "min-clients")

#: The policy the one-command federation gives every SuperNode.
STRICT_NODE_POLICY: dict[str, Any] = {
    "require-secure-aggregation": True,
    "require-signed-keys": True,
    "require-signed-psi": True,
    "min-clients": 2,
}


class NodePolicyError(RuntimeError):
    """A SuperNode refuses a run that asks less than its node-config policy."""


def _flag(node_config: Mapping[str, Any], key: str, node: str) -> bool:
    value = node_config.get(key, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise NodePolicyError(f"{node}: node config '{key}' = {value!r} must be true or false")


def check_node_policy(
    cfg: Mapping[str, Any], node_config: Mapping[str, Any], node: str, aligns: bool
) -> None:
    """Refuse the run when it asks less than this node's policy.

    Parameters
    ----------
    cfg : mapping
        The validated run config.
    node_config : mapping
        This node's node config.
    node : str
        The node, for messages (e.g. ``"SuperNode 7 (partition 1)"``).
    aligns : bool
        Whether this node's data has sample IDs (the run aligns them with PSI).

    Raises
    ------
    NodePolicyError
        Naming the node, the policy key and value, and the run-config key that falls short.
    """
    secure = bool(cfg["secure-aggregation"])
    signed = bool(cfg["secure-aggregation-signed-keys"])
    m = int(cfg["num-clients"])
    verifies = (
        _flag(node_config, "require-signed-keys", node)
        or _flag(node_config, "require-signed-psi", node)
        or bool(node_config.get("signing-key"))
    )
    if verifies and not node_config.get("peer-fingerprints"):
        raise NodePolicyError(
            f"{node} refuses every run: its node config requires signed keys (or holds a signing-key) "
            "but pins no peer keys; add node config 'peer-fingerprints' (the peers' key fingerprints, "
            "agreed out of band), or it would trust keys the coordinator hands out"
        )

    def refuse(policy: str, wanted: str, got: str) -> None:
        raise NodePolicyError(
            f"{node} refuses this run: its policy {policy} needs {wanted}, but the run has {got}"
        )

    raw_min = node_config.get("min-clients", 0)
    try:
        min_clients = int(raw_min)
    except (TypeError, ValueError):
        raise NodePolicyError(f"{node}: node config 'min-clients' = {raw_min!r} must be an integer") from None
    if "min-clients" in node_config and min_clients < 2:
        raise NodePolicyError(
            f"{node}: node config 'min-clients' = {min_clients} must be at least 2 (a sum over one "
            "client is that client's upload)"
        )
    if _flag(node_config, "require-secure-aggregation", node):
        policy = "(node config 'require-secure-aggregation' = true)"
        if not secure:
            refuse(policy, "'secure-aggregation' = true", "'secure-aggregation' = false")
        min_clients = max(min_clients, 2)
    if m < min_clients:
        refuse(
            f"(node config 'min-clients' = {min_clients})",
            f"'num-clients' >= {min_clients}",
            f"'num-clients' = {m}",
        )
    if secure and not signed and _flag(node_config, "require-signed-keys", node):
        refuse(
            "(node config 'require-signed-keys' = true)",
            "'secure-aggregation-signed-keys' = true",
            "'secure-aggregation-signed-keys' = false",
        )
    if aligns and not signed and _flag(node_config, "require-signed-psi", node):
        refuse(
            "(node config 'require-signed-psi' = true)",
            "signed PSI points ('secure-aggregation-signed-keys' = true)",
            "'secure-aggregation-signed-keys' = false",
        )
