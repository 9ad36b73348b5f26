"""Sample-ID alignment before round 1: private set intersection relayed by the server (no math here).

When every client's data has sample IDs (run or node config ``sample-id``), the base strategy runs,
after the handshake and before anything else (:func:`align_samples`), the ring of
:mod:`fedmf_app.common.psi` with ``get_properties`` messages (their ``stage``):

1. ``psi-blind``: each client draws a secret scalar for this run, hashes its IDs to curve points,
   blinds them and answers them sorted (the order of its rows stays with it);
2. ``psi-relay``, hops ``t = 1 .. m-1``: the server hands the points of party ``q`` to party
   ``q + t (mod m)``, which blinds them again, keeping their order. After ``m - 1`` hops every
   party's points carry every party's scalar;
3. ``psi-keep``: the server intersects the fully blinded sets and tells each client the positions of
   its own points that every party holds. The client maps them to its rows, orders those rows by
   ID (:func:`~fedmf_app.common.psi.aligned_order`: the same order on every party) and keeps them
   in ``context.state``; every later message loads only those rows (:func:`aligned_rows`).

The server sees blinded points only, never an ID or the hash of one. Each stage is answered once
per run. With ``secure-aggregation-signed-keys = true`` (and always on a node with a ``signing-key``,
:func:`~fedmf_app.federated.secure_sum_flower.signs`) every client signs the points it hands on
(:func:`~fedmf_app.common.key_signing.points_statement`, its node config ``signing-key``) and
checks the signature of the party that blinded them before it (node config ``peer-keys``), so the
server cannot have a client blind points of its own choosing.
"""

from __future__ import annotations

import time
from logging import INFO
from typing import Any

import numpy as np
from flwr.common import Array, ArrayRecord, ConfigRecord, Context, Scalar
from flwr.common.logger import log
from flwr.server.client_proxy import ClientProxy

from fedmf_app.common.key_signing import (
    KeyFileError,
    load_private_key,
    points_statement,
    sign,
)
from fedmf_app.common.key_signing import verify as verify_signature
from fedmf_app.common.psi import Blinder, aligned_order, blind_own_ids, common_positions, pack, unpack
from fedmf_app.data import ClientView
from fedmf_app.federated.handshake import FederationError, ask_all
from fedmf_app.federated.secure_sum_flower import node_key_path, peer_public_key, signs

__all__ = ["AlignmentError", "align_samples", "aligned_rows", "answer_psi_stage"]

_STATE = "psi"
_ORDER = "psi.order"
_ROWS = "psi.rows"


class AlignmentError(RuntimeError):
    """A client refuses an alignment message (repeated, out of turn, unsigned or malformed)."""


# ------------------------------------------------------------------------------------- client
def aligned_rows(context: Context) -> np.ndarray | None:
    """The file rows this client keeps after the alignment, in the common order (``None``: none yet)."""
    stored = context.state.array_records.get(_ROWS)
    return None if stored is None else stored["rows"].numpy()


def _sign(context: Context, cfg: dict[str, Any], me: int, origin: int, hop: int, points: bytes) -> bytes:
    try:
        key = load_private_key(node_key_path(context, "signing-key", me))
    except KeyFileError as exc:
        raise AlignmentError(f"partition {me}: node config 'signing-key': {exc}") from exc
    return sign(key, points_statement(context.run_id, me, int(cfg["num-clients"]), origin, hop, points))


def _check_signature(
    context: Context,
    cfg: dict[str, Any],
    me: int,
    signer: int,
    origin: int,
    hop: int,
    points: bytes,
    signature: bytes,
) -> None:
    folder = node_key_path(context, "peer-keys", me)
    try:
        public = peer_public_key(context, me, signer)
    except KeyFileError as exc:
        raise AlignmentError(f"partition {me}: node config 'peer-keys': {exc}") from exc
    statement = points_statement(context.run_id, signer, int(cfg["num-clients"]), origin, hop, points)
    if not verify_signature(public, statement, signature):
        raise AlignmentError(
            f"partition {me}: the blinded points relayed as partition {origin}'s after hop {hop} are not "
            f"signed by partition {signer}'s long-term key ({folder / f'supernode-{signer}.pub'}); refused"
        )


def answer_psi_stage(
    context: Context,
    cfg: dict[str, Any],
    partition_id: int,
    view: ClientView,
    stage: str,
    config: dict[str, Scalar],
) -> dict[str, Scalar]:
    """A client's answer to one alignment message (see the module docstring).

    Parameters
    ----------
    context : Context
        The secret, the order of the first message and the kept rows go into ``context.state``.
    cfg : dict
        Validated run config.
    partition_id : int
    view : ClientView
        This client's view as read from its file (with ``ids``).
    stage : {"psi-blind", "psi-relay", "psi-keep"}
    config : dict
        The message; for ``"psi-relay"``: ``psi-origin``, ``psi-hop``, ``psi-points`` (and
        ``psi-signature``); for ``"psi-keep"``: ``psi-positions`` (int64 little-endian bytes).

    Returns
    -------
    dict
        ``"psi-blind"`` and ``"psi-relay"``: ``psi-points`` (and ``psi-signature``); ``"psi-keep"``:
        ``psi-kept``, the number of common samples.

    Raises
    ------
    AlignmentError
        Naming this partition and what is wrong.
    """
    m = int(cfg["num-clients"])
    records = context.state.config_records
    me = f"partition {partition_id}"
    if view.ids is None:
        raise AlignmentError(f"{me}: asked to align its samples but its data has no sample IDs")
    if stage == "psi-blind":
        if _STATE in records:
            raise AlignmentError(f"{me}: asked to blind its IDs a second time in this run; refused")
        blinder = Blinder()
        points, order = blind_own_ids(list(view.ids), blinder)
        packed = pack(points)
        records[_STATE] = ConfigRecord({"secret": blinder.secret, "hops": [0]})
        context.state.array_records[_ORDER] = ArrayRecord({"order": Array(order)})
        answer: dict[str, Scalar] = {"psi-points": packed}
        if signs(context, cfg):
            answer["psi-signature"] = _sign(context, cfg, partition_id, partition_id, 0, packed)
        return answer
    stored = records.get(_STATE)
    if stored is None:
        raise AlignmentError(f"{me}: sent an alignment stage {stage!r} before blinding its own IDs; refused")
    if stage == "psi-relay":
        origin, hop = int(config["psi-origin"]), int(config["psi-hop"])
        hops = [int(h) for h in stored["hops"]]
        if not 1 <= hop < m or (partition_id - hop) % m != origin or hop in hops:
            raise AlignmentError(
                f"{me}: asked to blind partition {origin}'s points at hop {hop} (at hop t = 1..{m - 1} "
                f"it blinds only partition ({partition_id} - t) mod {m}'s points, once); refused"
            )
        points = bytes(config["psi-points"])
        if signs(context, cfg):
            signer = (partition_id - 1) % m
            signature = bytes(config.get("psi-signature", b""))
            _check_signature(context, cfg, partition_id, signer, origin, hop - 1, points, signature)
        try:
            blinded = pack(Blinder(bytes(stored["secret"])).blind(unpack(points)))
        except ValueError as exc:
            raise AlignmentError(
                f"{me}: partition {origin}'s points at hop {hop} are malformed ({exc})"
            ) from exc
        records[_STATE] = ConfigRecord({"secret": bytes(stored["secret"]), "hops": [*hops, hop]})
        answer = {"psi-points": blinded}
        if signs(context, cfg):
            answer["psi-signature"] = _sign(context, cfg, partition_id, origin, hop, blinded)
        return answer
    if stage != "psi-keep":
        raise AlignmentError(f"{me}: unknown alignment stage {stage!r}")
    if _ROWS in context.state.array_records:
        raise AlignmentError(f"{me}: sent the common samples a second time in this run; refused")
    order = context.state.array_records[_ORDER]["order"].numpy()
    positions = np.frombuffer(bytes(config["psi-positions"]), dtype="<i8")
    if (
        positions.size == 0
        or np.any(np.diff(positions) <= 0)
        or positions[0] < 0
        or positions[-1] >= order.size
    ):
        raise AlignmentError(f"{me}: the positions of the common samples are malformed; refused")
    rows = order[positions]
    rows = rows[aligned_order(list(view.ids[rows]))].astype(np.int64)
    context.state.array_records[_ROWS] = ArrayRecord({"rows": Array(rows)})
    log(
        INFO,
        "%s: %d of its %d samples are held by every party; %d left out (sample-id alignment)",
        me,
        rows.size,
        order.size,
        order.size - rows.size,
    )
    return {"psi-kept": int(rows.size)}


# ------------------------------------------------------------------------------------- server
def align_samples(
    proxies: list[ClientProxy], cfg: dict[str, Any], info: list[dict[str, Scalar]]
) -> dict[str, Any]:
    """Run the alignment with every client (partition order); the server only relays and intersects.

    Parameters
    ----------
    proxies : list of ClientProxy
        In partition order.
    cfg : dict
        Validated run config.
    info : list of dict
        The handshake replies (for messages: each view's ``source``).

    Returns
    -------
    dict
        ``num_common`` (samples every party holds), ``num_ids`` (IDs per party), ``seconds`` and
        ``bytes_to_server`` (what the server received).

    Raises
    ------
    FederationError
        When a client refuses a stage (naming the SuperNode and partition), or no sample is
        common to every party.
    """
    started = time.perf_counter()
    timeout = float(cfg["round-timeout-s"])
    m = len(proxies)
    received = 0

    def stage(config_of) -> list[dict[str, Scalar]]:
        nonlocal received
        answers = ask_all(proxies, config_of, timeout, "sample-ID alignment")
        received += sum(len(v) for a in answers for v in a.values() if isinstance(v, bytes))
        return answers

    current = stage(lambda p: {"stage": "psi-blind"})  # current[q]: party q's points, latest hop
    for hop in range(1, m):

        def relay(p: int, hop: int = hop, latest: list[dict[str, Scalar]] = current) -> dict[str, Scalar]:
            origin = (p - hop) % m
            message: dict[str, Scalar] = {
                "stage": "psi-relay",
                "psi-origin": origin,
                "psi-hop": hop,
                "psi-points": latest[origin]["psi-points"],
            }
            if "psi-signature" in latest[origin]:
                message["psi-signature"] = latest[origin]["psi-signature"]
            return message

        answers = stage(relay)
        current = [answers[(q + hop) % m] for q in range(m)]
    sets = [unpack(bytes(c["psi-points"])) for c in current]
    try:
        positions = common_positions(sets)
    except ValueError as exc:
        raise FederationError(f"sample-ID alignment: {exc}") from exc
    num_common = int(positions[0].size)
    if num_common == 0:
        detail = "; ".join(
            f"partition {i['partition-id']}: {i['source']}, {len(s)} IDs" for i, s in zip(info, sets)
        )
        raise FederationError(
            f"sample-ID alignment (run config or node config 'sample-id'): no sample ID is held by every "
            f"party, so there is nothing to train on ({detail})"
        )
    kept = stage(lambda p: {"stage": "psi-keep", "psi-positions": positions[p].astype("<i8").tobytes()})
    counts = sorted({int(k["psi-kept"]) for k in kept})
    if counts != [num_common]:
        raise FederationError(
            f"sample-ID alignment: the clients kept {counts} samples, expected {num_common}"
        )
    return {
        "num_common": num_common,
        "num_ids": [len(s) for s in sets],
        "seconds": time.perf_counter() - started,
        "bytes_to_server": received,
    }
