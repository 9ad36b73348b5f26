"""Secure sum, the Flower side: key agreement before round 1, masked uploads, decoded sums.

The maths is :mod:`fedmf_app.common.secure_sum_math`. When a run masks sums (its family's protocol
says so, :attr:`~fedmf_app.federated.protocol.Protocol.masks`: run config
``secure-aggregation = true``; always for fmvc-imk's graph sum and paper A's sketch start), the
clients agree keys before round 1 in two steps that cost no message of their own:

1. in the handshake, each client draws an X25519 key pair for this run (:func:`own_key`; once: the
   handshake after a sample-ID alignment answers the same key), keeps the private key in
   ``context.state`` and answers the public key, signed with its long-term key when
   ``secure-aggregation-signed-keys = true`` or its node config has a ``signing-key``
   (:func:`signs`, :mod:`fedmf_app.common.key_signing`);
2. the server relays every public key (and signature) and a fresh 16-byte context with the first
   request after the handshake (:func:`peers_rider`; the ``peers`` stage rides with it,
   :attr:`~fedmf_app.federated.protocol.Stage.rides`). Before it answers that request, each client
   checks that its own key came back unchanged, that no key appears twice and (signed keys) every
   peer's signature against that peer's long-term public key from its node config, then derives
   and keeps its pair keys (:func:`answer_peers`). Any failure stops the run at that request, with
   a message naming the SuperNode and the partition whose key is wrong.

A method's client then sends, in place of the arrays its server only needs summed, one
:func:`masked_upload` (uint64 words, :mod:`fedmf_app.common.secure_sum_math`; laid out as the protocol
declares by :meth:`fedmf_app.federated.client.ViewClient.reply`); its server adds the uploads and decodes
only the sum (:func:`summed_arrays`, through
:meth:`fedmf_app.federated.strategy.ViewFederationStrategy.decode_sum`). Each ``(round, tag)`` is masked
once per run: a client asked to mask the same message twice refuses.

Node config of a client with signed keys: ``signing-key`` (its long-term private key file),
``peer-keys`` (a folder holding ``supernode-<j>.pub`` for every partition ``j``, its own included,
as written by ``python -m fedmf_app.deployment.certificates``) and, to trust those keys only as
far as the organisation itself checked them, ``peer-fingerprints`` (:func:`peer_public_key`).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from flwr.common import ConfigRecord, Context, Scalar

from fedmf_app.common.key_signing import (
    KeyFileError,
    fingerprint,
    key_statement,
    load_fingerprints,
    load_private_key,
    load_public_key,
    sign,
)
from fedmf_app.common.key_signing import verify as verify_signature
from fedmf_app.common.secure_sum_math import (
    FixedPointError,
    MaskIntegrityError,
    append_check_words,
    decode_fixed,
    derive_pair_key,
    encode_fixed,
    generate_private_key,
    mask_words,
    message_key,
    public_key_bytes,
    split_check_words,
    sum_words,
)
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.federated.handshake import FederationError

__all__ = [
    "SecureAggregationError",
    "answer_peers",
    "key_transcript",
    "masked_upload",
    "message_keys",
    "node_key_path",
    "own_key",
    "pair_keys",
    "peer_public_key",
    "peers_rider",
    "signs",
    "summed_arrays",
]

_STATE = "secagg"
_KEYS = "secagg.pairs"
_USED = "secagg.used"


class SecureAggregationError(RuntimeError):
    """A client refuses the key agreement or a masked message (substituted, replayed or missing keys)."""


# ------------------------------------------------------------------------------------- client
def node_key_path(context: Context, key: str, partition_id: int) -> Path:
    """Node config ``signing-key`` or ``peer-keys`` of a client with signed keys (a path).

    Raises
    ------
    SecureAggregationError
        When the node config lacks it.
    """
    value = context.node_config.get(key)
    if not value:
        raise SecureAggregationError(
            f"partition {partition_id}: run config 'secure-aggregation-signed-keys' = true needs node "
            f"config '{key}' on every SuperNode, and this node has none"
        )
    return Path(str(value))


def peer_public_key(context: Context, partition_id: int, peer: int) -> Any:
    """Partition ``peer``'s long-term public key: ``supernode-<peer>.pub`` in node config
    ``peer-keys``, checked against its pinned fingerprint when the node config has
    ``peer-fingerprints`` (a file of ``<partition id> SHA256:<...>`` lines this organisation
    agreed with its peers out of band, :func:`~fedmf_app.common.key_signing.load_fingerprints`).

    Raises
    ------
    SecureAggregationError
        When a node-config key is missing, or a file is unreadable.
    KeyFileError
        When the key's fingerprint is not the pinned one (a key not from that organisation, e.g.
        one the coordinator handed out).
    """
    path = node_key_path(context, "peer-keys", partition_id) / f"supernode-{peer}.pub"
    key = load_public_key(path)
    pins = context.node_config.get("peer-fingerprints")
    if pins:
        pinned = load_fingerprints(str(pins)).get(peer)
        found = fingerprint(key)
        if pinned != found:
            raise KeyFileError(
                f"{path} has fingerprint {found}, but node config 'peer-fingerprints' ({pins}) pins "
                f"{pinned or 'no key'} for partition {peer}: not that organisation's key; refused"
            )
    return key


def signs(context: Context, cfg: dict[str, Any]) -> bool:
    """Whether this client signs its key-agreement key and PSI points and checks its peers':
    with run config ``secure-aggregation-signed-keys = true``, and always when its node config has
    a ``signing-key`` (the organisation's choice, not the run's)."""
    return bool(cfg["secure-aggregation-signed-keys"]) or bool(context.node_config.get("signing-key"))


def _run_key(context: Context) -> ConfigRecord | None:
    """This client's key record for the run it is in (``None`` before :func:`own_key`, or when the
    record is another run's)."""
    stored = context.state.config_records.get(_STATE)
    return stored if stored is not None and int(stored["run-id"]) == int(context.run_id) else None


def own_key(context: Context, cfg: dict[str, Any], partition_id: int) -> dict[str, Scalar]:
    """A client's key for the run, for its handshake reply (see the module docstring).

    The first call draws the X25519 key pair (kept in ``context.state``); a later call in the same
    run (the handshake after a sample-ID alignment) answers the same key: one key per run.

    Parameters
    ----------
    context : Context
        This node's context; the key goes into ``context.state``.
    cfg : dict
        Validated run config.
    partition_id : int

    Returns
    -------
    dict
        ``secagg-public-key`` (32 bytes) and, with signed keys, ``secagg-signature``.

    Raises
    ------
    SecureAggregationError
        Over one client, or without the node's signing key where it signs.
    """
    m = int(cfg["num-clients"])
    me = f"partition {partition_id}"
    if m < 2:
        raise SecureAggregationError(
            f"{me}: secure aggregation over num-clients = {m} is refused (a sum over one client "
            "is that client's upload)"
        )
    stored = _run_key(context)
    if stored is None:
        private = generate_private_key()
        public = public_key_bytes(private)
        signature = b""
        if signs(context, cfg):
            try:
                signing_key = load_private_key(node_key_path(context, "signing-key", partition_id))
            except KeyFileError as exc:
                raise SecureAggregationError(f"{me}: node config 'signing-key': {exc}") from exc
            signature = sign(signing_key, key_statement(context.run_id, partition_id, m, public))
        stored = ConfigRecord(
            {
                "run-id": int(context.run_id),
                "private-key": private.private_bytes_raw(),
                "public-key": public,
                "signature": signature,
            }
        )
        context.state.config_records[_STATE] = stored
    answer: dict[str, Scalar] = {"secagg-public-key": bytes(stored["public-key"])}
    if stored["signature"]:
        answer["secagg-signature"] = bytes(stored["signature"])
    return answer


def answer_peers(context: Context, cfg: dict[str, Any], partition_id: int, config: dict[str, Scalar]) -> None:
    """Check the peers' keys relayed with the first request after the handshake, then derive and keep
    the pair keys (see the module docstring).

    Parameters
    ----------
    context : Context
        This node's context, holding its key (:func:`own_key`); the pair keys go into
        ``context.state``.
    cfg : dict
        Validated run config.
    partition_id : int
    config : dict
        ``secagg-context``, ``secagg-public-key-<j>`` and ``secagg-signature-<j>``.

    Raises
    ------
    SecureAggregationError
        Naming this partition and, for a bad key, the partition it claims to be from.
    """
    m = int(cfg["num-clients"])
    records = context.state.config_records
    me = f"partition {partition_id}"
    stored = _run_key(context)
    if stored is None:
        raise SecureAggregationError(f"{me}: sent the peers' keys before it sent its own key; refused")
    if _KEYS in records:
        raise SecureAggregationError(f"{me}: sent the peers' keys a second time in this run; refused")
    publics = [bytes(config[f"secagg-public-key-{j}"]) for j in range(m)]
    if publics[partition_id] != bytes(stored["public-key"]):
        raise SecureAggregationError(
            f"{me}: the key relayed as its own is not the key it sent (a substituted key); refused"
        )
    seen: dict[bytes, int] = {}
    for j, public in enumerate(publics):
        if public in seen:
            raise SecureAggregationError(
                f"{me}: partitions {seen[public]} and {j} were relayed the same key-agreement key "
                "(a replayed key); refused"
            )
        seen[public] = j
    if signs(context, cfg):
        folder = node_key_path(context, "peer-keys", partition_id)
        for j in range(m):
            if j == partition_id:
                continue
            try:
                long_term = peer_public_key(context, partition_id, j)
            except KeyFileError as exc:
                raise SecureAggregationError(f"{me}: node config 'peer-keys': {exc}") from exc
            signature = bytes(config.get(f"secagg-signature-{j}", b""))
            if not verify_signature(long_term, key_statement(context.run_id, j, m, publics[j]), signature):
                raise SecureAggregationError(
                    f"{me}: the key-agreement key relayed for partition {j} is not signed by partition "
                    f"{j}'s long-term key ({folder / f'supernode-{j}.pub'}): a substituted or replayed "
                    "key; refused"
                )
    private = X25519PrivateKey.from_private_bytes(bytes(stored["private-key"]))
    salt = b"fedmf-secagg|%d|" % context.run_id + bytes(config["secagg-context"])
    records[_KEYS] = ConfigRecord(
        {str(j): derive_pair_key(private, publics[j], salt) for j in range(m) if j != partition_id}
    )
    records[_USED] = ConfigRecord({"messages": [""]})


def key_transcript(config: dict[str, Scalar], num_clients: int) -> str:
    """SHA-256 of a run's key agreement as the peers' rider relays it: the context and every
    client's public key, in partition order (what binds a client's saved state to the run's keys).

    Parameters
    ----------
    config : dict
        The peers' rider (:func:`peers_rider`).
    num_clients : int

    Returns
    -------
    str
        64 hex digits.
    """
    digest = hashlib.sha256(bytes(config["secagg-context"]))
    for j in range(num_clients):
        digest.update(bytes(config[f"secagg-public-key-{j}"]))
    return digest.hexdigest()


def pair_keys(context: Context, partition_id: int) -> dict[int, bytes]:
    """This client's pair keys (peer index -> 32 bytes).

    Raises
    ------
    SecureAggregationError
        Before the key agreement (e.g. a SuperNode restarted and lost its keys).
    """
    stored = context.state.config_records.get(_KEYS)
    if stored is None:
        raise SecureAggregationError(
            f"partition {partition_id}: has no secure-aggregation keys (no key agreement in this run, "
            "or the SuperNode restarted and lost them)"
        )
    return {int(j): bytes(k) for j, k in stored.items()}


def message_keys(context: Context, partition_id: int, server_round: int, tag: str) -> dict[int, bytes]:
    """This client's per-message mask keys (peer index -> 32 bytes), usable once per run.

    Parameters
    ----------
    context : Context
    partition_id : int
    server_round : int
    tag : str

    Returns
    -------
    dict of int to bytes
        :func:`~fedmf_app.common.secure_sum_math.message_key` of each pair key.

    Raises
    ------
    SecureAggregationError
        When this ``(round, tag)`` was masked before in this run, or there are no keys.
    """
    keys = pair_keys(context, partition_id)
    message = f"{tag}|{server_round}"
    used = list(context.state.config_records[_USED]["messages"])
    if message in used:
        raise SecureAggregationError(
            f"partition {partition_id}: asked to mask {tag!r} of round {server_round} a second time; "
            "refused (a mask is used once)"
        )
    context.state.config_records[_USED] = ConfigRecord({"messages": [*used, message]})
    return {peer: message_key(key, server_round, tag) for peer, key in keys.items()}


def masked_upload(
    context: Context,
    cfg: dict[str, Any],
    partition_id: int,
    arrays: list[np.ndarray],
    server_round: int,
    tag: str,
) -> np.ndarray:
    """One client's masked fixed-point upload of ``arrays`` (concatenated, row-major).

    Parameters
    ----------
    context : Context
    cfg : dict
        Validated run config (``seed``, ``num-clients``, ``secure-aggregation-frac-bits``).
    partition_id : int
    arrays : list of ndarray
        Real arrays (scalars as 0-d or 1-element arrays) whose sum the server needs.
    server_round : int
    tag : str
        Which sum of the round (distinct per message of a round).

    Returns
    -------
    ndarray of uint64, shape (K + CHECK_WORDS,)
        K = total size of ``arrays``, then the check words
        (:func:`~fedmf_app.common.secure_sum_math.append_check_words`).

    Raises
    ------
    SecureAggregationError
        When this ``(round, tag)`` was masked before, or a value cannot be encoded (naming the
        partition and the round).
    """
    keys = message_keys(context, partition_id, server_round, tag)
    values = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
    rng = rng_for(
        cfg["seed"], Stream.SECURE_AGG_ROUNDING, partition_id, server_round, zlib.crc32(tag.encode())
    )
    try:
        words = encode_fixed(values, cfg["secure-aggregation-frac-bits"], cfg["num-clients"], rng)
    except FixedPointError as exc:
        raise SecureAggregationError(
            f"partition {partition_id}, round {server_round} ({tag}): {exc}"
        ) from exc
    return mask_words(append_check_words(words), partition_id, keys)


# ------------------------------------------------------------------------------------- server
def summed_arrays(
    uploads: list[np.ndarray], shapes: list[tuple[int, ...]], frac_bits: int, stage: str
) -> list[np.ndarray]:
    """Decode the sum of the clients' masked uploads into arrays of ``shapes``, once its check
    words prove that the masks cancelled.

    Parameters
    ----------
    uploads : list of ndarray of uint64
        One :func:`masked_upload` per client (all of them: a partial sum is noise).
    shapes : list of tuple
        Shapes of the summed arrays, in upload order.
    frac_bits : int
    stage : str
        Which sum, for messages (e.g. ``"round 3, masked 'upload'"``).

    Returns
    -------
    list of ndarray of float64
        The sums over the clients.

    Raises
    ------
    FederationError
        When an upload's size does not match ``shapes``, or the masks did not cancel (naming
        ``stage``).
    """
    sizes = [int(np.prod(s)) for s in shapes]
    try:
        total = split_check_words(sum_words(uploads), len(uploads))
    except MaskIntegrityError as exc:
        raise FederationError(f"secure aggregation, {stage}: the sum is refused: {exc}") from exc
    except ValueError as exc:
        raise FederationError(f"secure aggregation, {stage}: {exc}") from exc
    if total.size != sum(sizes):
        raise FederationError(
            f"secure aggregation, {stage}: uploads hold {total.size} words, expected {sum(sizes)}"
        )
    values = decode_fixed(total, frac_bits)
    out, start = [], 0
    for shape, size in zip(shapes, sizes):
        out.append(values[start : start + size].reshape(shape))
        start += size
    return out


def peers_rider(info: list[dict[str, Scalar]]) -> tuple[dict[str, Scalar], dict[str, Any]]:
    """The peers' keys, from the handshake replies, to ride with the first request after the handshake.

    Parameters
    ----------
    info : list of dict
        Every client's handshake reply, in partition order (each holds its ``secagg-public-key``
        and, with signed keys, ``secagg-signature``).

    Returns
    -------
    rider : dict
        ``secagg-context`` (16 fresh bytes) and every client's ``secagg-public-key-<j>`` (and
        ``secagg-signature-<j>``).
    record : dict
        ``key_agreement_bytes_per_client``: the bytes of the rider (what one client receives).
    """
    rider: dict[str, Scalar] = {"secagg-context": os.urandom(16)}
    for j, answer in enumerate(info):
        rider[f"secagg-public-key-{j}"] = bytes(answer["secagg-public-key"])
        if "secagg-signature" in answer:
            rider[f"secagg-signature-{j}"] = bytes(answer["secagg-signature"])
    relayed = sum(len(v) for v in rider.values() if isinstance(v, bytes))
    return rider, {"key_agreement_bytes_per_client": relayed}
