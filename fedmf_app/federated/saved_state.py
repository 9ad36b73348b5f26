"""A client's state between messages, and what it has answered, both bound to the run.

Flower rebuilds the client object for every message, so what a client keeps goes into
``context.state`` (:func:`load_state`, :func:`save_state`); with a state folder (node config
``state-dir``: the node's own choice, never the run's) it is also kept on disk,
``<state-dir>/<run key>/``, so that a restarted SuperNode or a resumed run finds it.

Beside the state, every client keeps a **ledger** of the run (:class:`Ledger`): the run id that
wrote it, the key-agreement transcript, how often it answered each stage, the run's facts and,
for every training round it answered, the digest of the request. Before it computes anything the
client admits the request against it (:func:`admit`):

* a stage outside the training rounds is answered at most as often as the protocol declares, and
  a stage declared ``before_round_1`` only while no round has been answered;
* a training round is answered once, for the round after the last one answered, whatever the
  broadcast; the one exception is a resumed run asking again, with the identical request, the
  last round the client answered (its server died before it received the replies): the client
  recomputes it from the previous round's state, so the answer is the same as before and tells the
  server nothing new;
* a run continues the saved state (and ledger) of another run only when the node config says so
  (``resume-run-id`` = that run's id); a run with the same run id continues it unless it agreed
  other keys than the run that wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from logging import INFO
from pathlib import Path
from typing import Any

import numpy as np
from flwr.common import ConfigRecord, Context
from flwr.common.logger import log

from fedmf_app.data.sample_ids import sample_id_key
from fedmf_app.federated.alignment import aligned_rows
from fedmf_app.federated.npy import array_record
from fedmf_app.federated.protocol import ProtocolError, Stage

__all__ = [
    "NOT_IDENTIFYING",
    "ClientStateError",
    "Ledger",
    "admit",
    "load_ledger",
    "load_state",
    "record_answer",
    "request_digest",
    "run_key",
    "save_state",
    "state_file",
    "state_folder",
]

#: Run-config keys that do not identify a run (a resumed run may set them differently).
NOT_IDENTIFYING = (
    "resume-from",
    "out-dir",
    "run-name",
    "round-timeout-s",
    "connect-timeout-s",
)

#: ``context.state`` record of the ledger.
_LEDGER = "protocol.ledger"
#: The ledger's count of training rounds answered in this run.
_ROUNDS = "(rounds)"


class ClientStateError(RuntimeError):
    """The client's stored state does not match the round it is asked to run."""


def run_key(cfg: Mapping[str, Any]) -> str:
    """16 hex digits identifying a run by its validated run config (bar :data:`NOT_IDENTIFYING`)."""
    kept = {k: v for k, v in sorted(cfg.items()) if k not in NOT_IDENTIFYING}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def state_folder(context: Context, cfg: Mapping[str, Any]) -> Path | None:
    """``<node config state-dir>/<run key>``, or ``None`` when the node keeps no state on disk."""
    folder = context.node_config.get("state-dir")
    if not folder:
        return None
    return Path(str(folder)).expanduser() / run_key(cfg)


def state_file(context: Context, cfg: Mapping[str, Any], name: str, server_round: int) -> Path | None:
    """Where this client keeps its state after ``server_round`` on disk (``None``: nowhere).

    ``<state-dir>/<run key>/<name>-p<partition>-r<round>.npz``; the last two rounds are kept.
    """
    folder = state_folder(context, cfg)
    if folder is None:
        return None
    return folder / f"{name}-p{context.node_config.get('partition-id')}-r{server_round}.npz"


# ------------------------------------------------------------------------------------ ledger
@dataclass
class Ledger:
    """What this client answered in the run (and in the run whose saved state it continues).

    Attributes
    ----------
    run_id : int
        The run that holds the ledger now.
    transcript : str
        SHA-256 of the run's key agreement (empty before it, or without one).
    last_round : int
        The last training round answered (0: none).
    digests : dict of str to str
        Round -> SHA-256 of the request answered in it (:func:`request_digest`).
    counts : dict of str to int
        Stage -> answers in this run (stages outside the training rounds).
    facts : dict of str to int
        The run's facts, pinned the first time a request stated them.
    continued_from : int or None
        The run whose saved state this run continues (set when the ledger was read from disk).
    """

    run_id: int
    transcript: str = ""
    last_round: int = 0
    digests: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    facts: dict[str, int] = field(default_factory=dict)
    continued_from: int | None = None


def _ledger_file(context: Context, cfg: Mapping[str, Any]) -> Path | None:
    folder = state_folder(context, cfg)
    if folder is None:
        return None
    return folder / f"p{context.node_config.get('partition-id')}.ledger.json"


def load_ledger(context: Context, cfg: Mapping[str, Any], me: str) -> Ledger:
    """This run's ledger: from ``context.state``; on a run's first message, from the state folder
    when the node config lets this run continue it, else a fresh one.

    Parameters
    ----------
    context : Context
    cfg : mapping
        Validated run config.
    me : str
        The client, for messages (e.g. ``"partition 2"``).

    Returns
    -------
    Ledger
    """
    stored = context.state.config_records.get(_LEDGER)
    if stored is not None:
        return Ledger(**json.loads(str(stored["json"])))
    fresh = Ledger(run_id=int(context.run_id))
    path = _ledger_file(context, cfg)
    if path is None or not path.exists():
        return fresh
    try:
        saved = Ledger(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise ClientStateError(f"{me}: its saved ledger cannot be read ({type(exc).__name__})") from exc
    allowed = context.node_config.get("resume-run-id")
    if saved.run_id == int(context.run_id) or (allowed not in (None, "") and int(allowed) == saved.run_id):
        saved.continued_from = saved.run_id
        saved.counts = {}
        return saved
    return fresh


def save_ledger(context: Context, cfg: Mapping[str, Any], ledger: Ledger, to_disk: bool) -> None:
    """Keep ``ledger`` in ``context.state`` and, with ``to_disk`` and a state folder, on disk
    (atomically; only when a training round is answered: until then the folder keeps the ledger of
    the run whose state it holds)."""
    text = json.dumps(asdict(ledger), sort_keys=True)
    context.state.config_records[_LEDGER] = ConfigRecord({"json": text})
    path = _ledger_file(context, cfg)
    if to_disk and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def request_digest(stage: str, config: Mapping[str, Any], arrays: Sequence[np.ndarray]) -> str:
    """SHA-256 of a request: its stage, config and arrays (dtype, shape and bytes)."""
    digest = hashlib.sha256(stage.encode() + b"\0")
    for key in sorted(config):
        value = config[key]
        digest.update(
            key.encode() + b"=" + (value if isinstance(value, bytes) else repr(value).encode()) + b"\0"
        )
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode() + array.tobytes())
    return digest.hexdigest()


def admit(
    ledger: Ledger, stage: Stage, cfg: Mapping[str, Any], server_round: int, digest: str, me: str
) -> None:
    """Refuse a request the ledger does not allow (module docstring).

    Parameters
    ----------
    ledger : Ledger
    stage : Stage
    cfg : mapping
        Validated run config.
    server_round : int
        The request's round (training-round stages), else ignored.
    digest : str
        :func:`request_digest` of the request.
    me : str
        The client, for messages.

    Raises
    ------
    ProtocolError
        Naming the client, the stage and the declared bound.
    """
    if stage.rounds is not None:
        last = ledger.last_round
        if server_round == last + 1:
            if server_round > int(cfg["num-server-rounds"]):
                raise ProtocolError(
                    f"{me}: asked for round {server_round} of a run of {cfg['num-server-rounds']} "
                    "rounds; refused"
                )
            return
        repeat = (
            ledger.continued_from is not None and server_round == last and ledger.counts.get(_ROUNDS, 0) == 0
        )
        if repeat and ledger.digests.get(str(server_round)) == digest:
            return
        if server_round <= last:
            raise ProtocolError(
                f"{me}: asked for round {server_round}, but it answered round {last} already (a round is "
                "answered once, whatever the broadcast); refused"
            )
        raise ProtocolError(
            f"{me}: asked for round {server_round}, but the last round it answered is {last}; refused"
        )
    if stage.before_round_1 and ledger.last_round > 0:
        raise ProtocolError(
            f"{me}: stage {stage.name!r} comes before round 1, but this run (or the run it continues) "
            f"answered round {ledger.last_round} already; refused"
        )
    limit = stage.max_times(cfg)
    if ledger.counts.get(stage.name, 0) >= limit:
        raise ProtocolError(
            f"{me}: stage {stage.name!r} is answered at most {limit} time(s) per run, and it was; refused"
        )


def record_answer(
    context: Context, cfg: Mapping[str, Any], ledger: Ledger, stage: Stage, server_round: int, digest: str
) -> None:
    """Note that this client answers ``stage`` (of ``server_round``) and keep the ledger, before the
    reply leaves the node."""
    if stage.rounds is not None:
        ledger.last_round = server_round
        ledger.digests = {k: v for k, v in ledger.digests.items() if int(k) >= server_round - 1}
        ledger.digests[str(server_round)] = digest
        ledger.counts[_ROUNDS] = ledger.counts.get(_ROUNDS, 0) + 1
    else:
        ledger.counts[stage.name] = ledger.counts.get(stage.name, 0) + 1
    ledger.run_id = int(context.run_id)
    save_ledger(context, cfg, ledger, to_disk=stage.rounds is not None)


# ------------------------------------------------------------------------------ state arrays
def load_state(
    context: Context, cfg: Mapping[str, Any], name: str, server_round: int
) -> dict[str, np.ndarray]:
    """Arrays stored by this client after round ``server_round - 1`` (empty in round 1).

    Parameters
    ----------
    context : Context
    cfg : mapping
        Validated run config.
    name : str
        Namespace (the algorithm).
    server_round : int
        Round about to run (admitted by the ledger).

    Returns
    -------
    dict of ndarray

    Raises
    ------
    ClientStateError
        When the stored state is not from the previous round (a missed round, or a SuperNode that
        restarted and lost its state without a state folder); or when the node's data has sample
        IDs but it holds no alignment (it would train on rows in its file's order).

    Notes
    -----
    A client whose ``context.state`` holds no state for ``server_round - 1`` (a restarted SuperNode,
    a resumed run, or a resumed run asking the last answered round again) reads it from its state
    folder, which its ledger has bound to this run (:func:`load_ledger`).
    """
    pid = context.node_config.get("partition-id")
    if sample_id_key(context.run_config, context.node_config) and aligned_rows(context) is None:
        raise ClientStateError(
            f"partition {pid}: asked for round {server_round} but holds no sample-ID alignment (a "
            "SuperNode that restarted after the alignment loses it); start the run again"
        )
    stored = context.state.config_records.get(f"{name}.meta")
    if server_round > 1 and (stored is None or int(stored["round"]) != server_round - 1):
        stored = _load_from_disk(context, cfg, name, server_round - 1) or stored
    last = int(stored["round"]) if stored is not None else 0
    if last != server_round - 1:
        raise ClientStateError(
            f"partition {pid}: asked for round {server_round} but its stored state is from round "
            f"{last}; every client must take part in every round"
        )
    if last == 0:
        return {}
    return {k: v.numpy() for k, v in context.state.array_records[f"{name}.arrays"].items()}


def save_state(
    context: Context, cfg: Mapping[str, Any], name: str, server_round: int, arrays: dict[str, np.ndarray]
) -> None:
    """Store this client's arrays after round ``server_round``.

    Parameters
    ----------
    context : Context
    cfg : mapping
        Validated run config.
    name : str
    server_round : int
    arrays : dict of ndarray
    """
    # One RecordDict namespace holds records of every type: keep the two names distinct.
    context.state.array_records[f"{name}.arrays"] = array_record(arrays)
    context.state.config_records[f"{name}.meta"] = ConfigRecord({"round": server_round})
    path = state_file(context, cfg, name, server_round)
    if path is not None:
        # keep this round's and the previous round's: a server that died during round s + 1
        # resumes from round s, which some clients may already have finished
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        tmp = path.with_name(path.name + ".tmp.npz")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, path)
        old = state_file(context, cfg, name, server_round - 2)
        if old is not None and old.exists():
            old.unlink()


def _load_from_disk(
    context: Context, cfg: Mapping[str, Any], name: str, server_round: int
) -> ConfigRecord | None:
    path = state_file(context, cfg, name, server_round)
    ledger = context.state.config_records.get(_LEDGER)
    if path is None or not path.exists() or ledger is None:
        return None
    if json.loads(str(ledger["json"])).get("continued_from") is None and int(server_round) > 0:
        # this run's ledger did not come from the folder: the files there are another run's
        return None
    with np.load(path, allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    context.state.array_records[f"{name}.arrays"] = array_record(arrays)
    meta = ConfigRecord({"round": server_round})
    context.state.config_records[f"{name}.meta"] = meta
    log(
        INFO,
        "partition %s: continues from its saved state after round %d",
        context.node_config.get("partition-id"),
        server_round,
    )
    return meta
