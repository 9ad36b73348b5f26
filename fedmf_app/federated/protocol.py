"""Each family's protocol, declared once: what a client may be asked, and what it may answer (no Flower).

A run is a sequence of **stages** (the handshake, the sample-ID alignment, the key agreement, a
family's set-up and start, its training rounds, the end of run). For every stage a family's
:class:`Protocol` declares

* the message that carries it (``get_properties``, ``fit`` or ``evaluate``) and whether the run has
  it at all (:attr:`Stage.when`, a function of the run config);
* how often a client answers it: ``times`` per run, or once per training round in
  :attr:`Stage.rounds`;
* what the server sends (:attr:`Stage.request`: config keys and arrays) and what leaves the node
  (:attr:`Stage.reply`: arrays and scalars, each a :class:`Part` with its shape and dtype as a
  function of the run's :class:`Sizes`, whether it is **summed**, i.e. travels inside the masked
  sum when the stage masks, and, where the model bounds one client's contribution, that bound);
* in words, what the server learns from each part, with and without secure aggregation (the
  tables of docs/privacy.md are generated from these words, :func:`protocol_table`).

The sizes the shapes depend on are the run config, the node's own data (``n``, ``d_p``, observed
rows) and a few **facts** the server resolves before round 1 and states in every request (the
number of clusters, paper A's rank): a client pins each fact the first time it sees it, checks it
against the run config, its own data and its node's caps (:class:`Fact`), and refuses a request
that states another value later. The client checks every request against the declaration before
it computes anything (:func:`check_request`) and its own reply before it sends it
(:func:`check_reply`); the server checks every reply against the same declaration
(:func:`check_reply`), and every decoded masked sum against the bound of ``m`` contributions
(:func:`check_sum`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "CHECK_WORDS",
    "Bound",
    "Cap",
    "Fact",
    "Part",
    "Protocol",
    "ProtocolError",
    "Sizes",
    "Stage",
    "check_reply",
    "check_request",
    "check_sum",
    "masked_size",
    "protocol_table",
    "reply_layout",
    "shared_table",
    "split_rider",
]

#: Check words appended to every masked upload (:mod:`fedmf_app.common.secure_sum_math`).
CHECK_WORDS = 4


class ProtocolError(RuntimeError):
    """A request or a reply outside the declared protocol (the message names stage and bound)."""


@dataclass(frozen=True)
class Sizes:
    """What the shapes of one partition's messages depend on.

    Attributes
    ----------
    cfg : mapping
        The validated run config.
    n : int
        Samples of the run (after a sample-ID alignment, the common ones).
    d : int
        Features of this partition's view.
    observed : int
        Rows this partition's view observes (``n`` without missing views).
    facts : mapping of str to int
        The run's facts (:class:`Fact`), as the server stated them.
    """

    cfg: Mapping[str, Any]
    n: int
    d: int
    observed: int
    facts: Mapping[str, int] = field(default_factory=dict)

    @property
    def m(self) -> int:
        """Clients of the run."""
        return int(self.cfg["num-clients"])

    @property
    def secure(self) -> bool:
        """Run config ``secure-aggregation``."""
        return bool(self.cfg["secure-aggregation"])

    def fact(self, name: str) -> int:
        """A stated fact (:class:`ProtocolError` when the request did not state it)."""
        if name not in self.facts:
            raise ProtocolError(f"the request does not state the run's {name!r}")
        return int(self.facts[name])


def _always(sizes: Sizes) -> bool:
    return True


@dataclass(frozen=True)
class Bound:
    """What the model bounds one client's contribution to, for a part that is summed.

    Attributes
    ----------
    norm : float or None
        Frobenius norm of one contribution (a sum of ``m``: ``m`` times this).
    low, high : float or None
        Range of every entry of one contribution (a sum of ``m``: ``m`` times each end).
    why : str
        The model's reason, for messages and docs.
    """

    norm: float | None = None
    low: float | None = None
    high: float | None = None
    why: str = ""


@dataclass(frozen=True)
class Part:
    """One array or scalar of a message.

    Attributes
    ----------
    name : str
        Its name: a metric's key, or an array's label in messages.
    shape : callable or None
        ``Sizes -> tuple`` (``None`` in an entry: any length); ``None`` for a scalar.
    shape_text : str
        The shape in words, for docs (e.g. ``"r x n"``).
    kinds : str
        Allowed ``numpy.dtype.kind`` values (``"f"``, ``"iu"``); ``"s"`` a string, ``"b"`` bytes.
    summed : bool
        The server needs only the sum over the clients: when the stage masks
        (:attr:`Stage.masked`), the part travels inside the masked sum.
    present : callable
        ``Sizes -> bool``: whether the run's message holds this part.
    index_range : callable, optional
        ``Sizes -> (low, high)`` for an array of indices.
    bound : callable, optional
        ``(Sizes, request arrays, context) -> Bound or None`` for a summed part (the context is
        what the family keeps to compute it, e.g. the previous round's bound).
    learns : str
        What the server learns from this part in the clear.
    learns_summed : str
        What it learns when the part travels masked (empty: "the sum only").
    optional : bool
        Whether a message may leave this part out (trailing arrays; any scalar).
    """

    name: str
    shape: Callable[[Sizes], tuple[int | None, ...]] | None = None
    shape_text: str = "scalar"
    kinds: str = "f"
    summed: bool = False
    present: Callable[[Sizes], bool] = _always
    index_range: Callable[[Sizes], tuple[int, int]] | None = None
    bound: Callable[[Sizes, Sequence[np.ndarray], Any], Bound | None] | None = None
    learns: str = ""
    learns_summed: str = ""
    optional: bool = False

    @property
    def scalar(self) -> bool:
        """Whether this part is one value (a metric or property)."""
        return self.shape is None


@dataclass(frozen=True)
class Fact:
    """A size the server resolves before round 1 and states in every request of the run.

    Attributes
    ----------
    name : str
        Its config key in a request is ``fact-<name>``.
    doc : str
        What it is and how a client checks it, for docs.
    check : callable
        ``(cfg, own, facts, caps) -> str or None``: why a client refuses the value stated in
        ``facts[name]`` (``None``: accepted); ``own`` is what the node knows of its own data (``n``,
        ``d``, ``observed``, ``classes``: its ground truth's class count or 0), ``facts`` every fact
        the request states, ``caps`` the node's caps.
    """

    name: str
    doc: str
    check: Callable[[Mapping[str, Any], Mapping[str, int], Mapping[str, int], Mapping[str, int]], str | None]


@dataclass(frozen=True)
class Cap:
    """A node-config cap on a size the run config or the server could otherwise raise.

    Attributes
    ----------
    key : str
        The node-config key (e.g. ``"max-list-depth"``).
    doc : str
        What it caps and its default, for docs.
    default : callable
        ``(cfg, own, facts) -> int or None``: the cap when the node config does not set it (what
        the method's own defaults need); ``None``: no cap.
    measure : callable, optional
        ``Sizes -> int``: the size of this run that the cap bounds (``None``: a fact's own check
        reads the cap).
    what : str
        That size, in words (for messages).
    """

    key: str
    doc: str
    default: Callable[[Mapping[str, Any], Mapping[str, int], Mapping[str, int]], int | None]
    measure: Callable[[Sizes], int] | None = None
    what: str = ""


@dataclass(frozen=True)
class Stage:
    """One stage of a run, as a client answers it.

    Attributes
    ----------
    name : str
        Sent as config ``stage`` with every request.
    message : {"get_properties", "fit", "evaluate", "any"}
        The message that carries it (``"any"``: a riding stage, below).
    when : callable
        ``cfg -> bool``: whether a run with this run config has the stage.
    times : int or callable
        Answers per run (stages outside the training rounds); a callable takes the run config.
    times_text : str
        How often, in words, where ``times`` is a callable (for docs).
    before_round_1 : bool
        Answered only while no training round has been answered (in this run, or in the run whose
        saved state this one continues).
    rounds : tuple of (int, int or None), or None
        For a training-round stage: the first round and the last (``None``: every later one);
        such a stage is answered once per round, for the round after the last one answered.
    request_config : tuple of str
        Config keys the request may hold besides ``stage``, ``server-round`` and the facts (a
        trailing ``*`` stands for any ending, e.g. ``"secagg-public-key-*"``).
    request : tuple of Part
        Arrays the server sends (``fit`` parameters, ``evaluate`` parameters).
    reply : tuple of Part
        What leaves the node: arrays (``fit``) or properties/metrics, in order.
    masked : callable
        ``cfg -> bool``: whether the summed parts travel as one masked sum.
    tag : str
        The masked sum's tag (its masks are drawn for ``(round, tag)``, once per run).
    mask_time : str
        The scalar that reports the client's masking time (when the stage declares it).
    states_facts : bool
        Whether the request states the run's facts (a family's own stages).
    rides : bool
        The stage has no message of its own: its config keys travel inside the first request after
        the handshake, whatever that request's stage, and the client answers it (with no reply of
        its own) before that stage; :func:`split_rider` takes them apart.
    doc : str
        When and why the stage runs, for docs.
    """

    name: str
    message: str
    when: Callable[[Mapping[str, Any]], bool] = lambda cfg: True
    times: int | Callable[[Mapping[str, Any]], int] = 1
    times_text: str = ""
    before_round_1: bool = False
    rounds: tuple[int, int | None] | None = None
    request_config: tuple[str, ...] = ()
    request: tuple[Part, ...] = ()
    reply: tuple[Part, ...] = ()
    masked: Callable[[Mapping[str, Any]], bool] = lambda cfg: False
    tag: str = ""
    mask_time: str = "secagg_s"
    states_facts: bool = False
    rides: bool = False
    doc: str = ""

    def max_times(self, cfg: Mapping[str, Any]) -> int:
        """Answers per run for this run config."""
        return int(self.times(cfg) if callable(self.times) else self.times)

    def declares_config(self, key: str) -> bool:
        """Whether :attr:`request_config` names the config key ``key`` (a trailing ``*`` standing
        for any ending)."""
        return any(key == k or (k.endswith("*") and key.startswith(k[:-1])) for k in self.request_config)

    def in_round(self, server_round: int) -> bool:
        """Whether this training-round stage serves ``server_round``."""
        if self.rounds is None:
            return False
        first, last = self.rounds
        return server_round >= first and (last is None or server_round <= last)


@dataclass(frozen=True)
class Protocol:
    """A family's whole protocol: its stages, facts and caps.

    Attributes
    ----------
    family : str
    stages : tuple of Stage
        In the order a run meets them (the shared stages included).
    facts : tuple of Fact
    caps : tuple of Cap
    masks : callable
        ``cfg -> bool``: whether the run sends masked sums (and so agrees keys before round 1).
    notes : str
        Further words for the docs.
    """

    family: str
    stages: tuple[Stage, ...]
    facts: tuple[Fact, ...] = ()
    caps: tuple[Cap, ...] = ()
    masks: Callable[[Mapping[str, Any]], bool] = lambda cfg: bool(cfg["secure-aggregation"])
    notes: str = ""

    def stage(self, name: str) -> Stage:
        """The stage called ``name`` (:class:`ProtocolError` when undeclared)."""
        for stage in self.stages:
            if stage.name == name:
                return stage
        known = ", ".join(s.name for s in self.stages)
        raise ProtocolError(f"stage {name!r} is not in the {self.family} protocol (its stages: {known})")

    def round_stage(self, server_round: int) -> Stage:
        """The training-round stage that serves ``server_round``."""
        for stage in self.stages:
            if stage.in_round(server_round):
                return stage
        raise ProtocolError(f"no stage of the {self.family} protocol serves round {server_round}")

    def caps_of(
        self,
        cfg: Mapping[str, Any],
        own: Mapping[str, int],
        facts: Mapping[str, int],
        node: Mapping[str, Any],
    ) -> dict[str, int]:
        """The node's caps: its node config's value of each :class:`Cap`, else the default.

        Raises
        ------
        ProtocolError
            When a node-config cap is not a positive integer.
        """
        caps: dict[str, int] = {}
        for cap in self.caps:
            if cap.key in node:
                raw = node[cap.key]
                try:
                    value = int(raw)
                except (TypeError, ValueError):
                    value = 0
                if value < 1 or str(raw).strip() not in (str(value), f"{value}.0"):
                    raise ProtocolError(f"node config '{cap.key}' = {raw!r} must be a positive integer")
                caps[cap.key] = value
            else:
                default = cap.default(cfg, own, facts)
                if default is not None:
                    caps[cap.key] = int(default)
        return caps


# ------------------------------------------------------------------------------- layouts
def reply_layout(stage: Stage, sizes: Sizes) -> tuple[list[Part], list[Part], list[Part]]:
    """How a stage's reply travels for these sizes.

    Returns
    -------
    summed : list of Part
        The parts inside the masked sum, in order (empty when the stage does not mask).
    arrays : list of Part
        The arrays sent as they are, in order (after the masked sum, when there is one).
    scalars : list of Part
        The scalars sent as metrics or properties.
    """
    masked = stage.masked(sizes.cfg)
    present = [p for p in stage.reply if p.present(sizes)]
    summed = [p for p in present if masked and p.summed]
    arrays = [p for p in present if not p.scalar and p not in summed]
    scalars = [p for p in present if p.scalar and p not in summed]
    return summed, arrays, scalars


def _shape(part: Part, sizes: Sizes) -> tuple[int | None, ...]:
    return () if part.shape is None else tuple(part.shape(sizes))


def masked_size(parts: Sequence[Part], sizes: Sizes) -> int:
    """Words of the masked vector holding ``parts`` (their values, then the check words)."""
    return sum(math.prod(_shape(p, sizes)) for p in parts) + CHECK_WORDS


# -------------------------------------------------------------------------------- checks
def _array_problem(part: Part, array: Any, sizes: Sizes) -> str | None:
    array = np.asarray(array)
    if array.dtype.kind not in part.kinds:
        return f"has dtype {array.dtype}, declared kind {part.kinds!r}"
    want = _shape(part, sizes)
    if array.ndim != len(want) or any(w is not None and h != w for h, w in zip(array.shape, want)):
        declared = "(" + ", ".join("any" if w is None else str(w) for w in want) + ")"
        return f"has shape {array.shape}, declared {declared} ({part.shape_text})"
    if part.index_range is not None and array.size:
        low, high = part.index_range(sizes)
        if int(array.min()) < low or int(array.max()) >= high:
            return f"holds indices {int(array.min())}..{int(array.max())}, declared {low}..{high - 1}"
    return None


def check_request(
    protocol: Protocol,
    stage: Stage,
    sizes: Sizes,
    config: Mapping[str, Any],
    arrays: Sequence[np.ndarray],
) -> None:
    """A client's check of one request before it computes anything.

    Parameters
    ----------
    protocol : Protocol
    stage : Stage
        The stage the request names.
    sizes : Sizes
        This client's sizes, with the facts the request stated (already pinned and checked).
    config : mapping
        The request's config.
    arrays : sequence of ndarray
        The request's arrays.

    Raises
    ------
    ProtocolError
        Naming the stage and what is outside the declaration (an undeclared key, an array of another
        shape or dtype, a stage this run does not have).
    """
    if not stage.when(sizes.cfg):
        raise ProtocolError(f"stage {stage.name!r} is not part of this run's {protocol.family} protocol")
    allowed = {"stage", "server-round", *(f"fact-{f.name}" for f in protocol.facts)}
    extra = sorted(k for k in config if k not in allowed and not stage.declares_config(k))
    if extra:
        raise ProtocolError(f"stage {stage.name!r}: the request holds undeclared key(s) {extra}")
    declared = [p for p in stage.request if p.present(sizes)]
    _check_count(stage, "the request holds", arrays, declared)
    for part, array in zip(declared, arrays):
        problem = _array_problem(part, array, sizes)
        if problem:
            raise ProtocolError(f"stage {stage.name!r}: the request's array {part.name!r} {problem}")


def split_rider(protocol: Protocol, config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Take a riding stage's keys out of a request (:attr:`Stage.rides`).

    Parameters
    ----------
    protocol : Protocol
    config : mapping
        A request's config.

    Returns
    -------
    own : dict
        The request's config without the rider's keys.
    rider : dict
        The rider's keys with its ``stage``; empty when the request carries none.
    """
    for stage in protocol.stages:
        if not stage.rides or config.get("stage") == stage.name:
            continue
        keys = [k for k in config if stage.declares_config(k)]
        if keys:
            own = {k: v for k, v in config.items() if k not in keys}
            return own, {"stage": stage.name, **{k: config[k] for k in keys}}
    return dict(config), {}


def _check_count(stage: Stage, what: str, arrays: Sequence[Any], declared: Sequence[Part]) -> None:
    required = len(declared) - sum(1 for _ in _trailing_optional(declared))
    if not required <= len(arrays) <= len(declared):
        names = ", ".join(p.name for p in declared) or "none"
        wanted = str(len(declared)) if required == len(declared) else f"{required} to {len(declared)}"
        raise ProtocolError(
            f"stage {stage.name!r}: {what} {len(arrays)} array(s), declared {wanted} ({names})"
        )


def _trailing_optional(parts: Sequence[Part]) -> list[Part]:
    tail: list[Part] = []
    for part in reversed(parts):
        if not part.optional:
            break
        tail.append(part)
    return tail


def check_reply(
    stage: Stage,
    sizes: Sizes,
    arrays: Sequence[np.ndarray],
    scalars: Mapping[str, Any],
) -> None:
    """Check one reply (the client before sending it, the server before using it).

    Parameters
    ----------
    stage : Stage
    sizes : Sizes
    arrays : sequence of ndarray
        The arrays as sent (the masked vector first when the stage masks).
    scalars : mapping
        The metrics or properties as sent.

    Raises
    ------
    ProtocolError
        Naming the array or scalar: undeclared, of the wrong shape or dtype, missing.
    """
    summed, declared, declared_scalars = reply_layout(stage, sizes)
    rest = list(arrays)
    if summed:
        if not rest:
            raise ProtocolError(f"stage {stage.name!r}: the masked sum is missing")
        vector = np.asarray(rest.pop(0))
        size = masked_size(summed, sizes)
        if vector.dtype != np.uint64 or vector.shape != (size,):
            raise ProtocolError(
                f"stage {stage.name!r}: the masked sum has dtype {vector.dtype} and shape {vector.shape}, "
                f"declared uint64 ({size},) ({' + '.join(p.name for p in summed)} + {CHECK_WORDS} check "
                "words)"
            )
    _check_count(stage, "the reply holds", rest, declared)
    for part, array in zip(declared, rest):
        problem = _array_problem(part, array, sizes)
        if problem:
            raise ProtocolError(f"stage {stage.name!r}: array {part.name!r} {problem}")
    names = {p.name for p in declared_scalars}
    extra = sorted(set(scalars) - names)
    if extra:
        raise ProtocolError(f"stage {stage.name!r}: undeclared scalar(s) {extra}")
    missing = sorted(names - set(scalars) - {p.name for p in declared_scalars if p.optional})
    if missing:
        raise ProtocolError(f"stage {stage.name!r}: declared scalar(s) {missing} missing")
    for part in declared_scalars:
        if part.name not in scalars:
            continue
        value = scalars[part.name]
        kind = {str: "s", bytes: "b", bool: "b"}.get(type(value), "i" if isinstance(value, int) else "f")
        if kind not in part.kinds and not (kind == "i" and "f" in part.kinds):
            raise ProtocolError(f"stage {stage.name!r}: scalar {part.name!r} is {type(value).__name__}")


def check_sum(
    parts: Sequence[Part],
    values: Sequence[np.ndarray],
    sizes: Sizes,
    request: Sequence[np.ndarray],
    context: Any,
    contributions: int,
    what: str,
) -> None:
    """Check arrays against ``contributions`` times their parts' bounds.

    With ``contributions = 1`` this is one client's own upload (checked by the client before it
    masks it, or by the server on a reply in the clear); with ``m``, a decoded sum.

    Parameters
    ----------
    parts : sequence of Part
    values : sequence of ndarray
        One value per part (a scalar as a 0-d or 1-element array).
    sizes : Sizes
    request : sequence of ndarray
        The request the reply answers (the bounds may depend on it).
    context : any
        What the family keeps to compute the bounds (passed to :attr:`Part.bound`).
    contributions : int
    what : str
        The start of the message (e.g. ``"partition 2's own upload"``).

    Raises
    ------
    ProtocolError
        Naming the part, the bound and the model's reason.
    """
    for part, value in zip(parts, values):
        if part.bound is None:
            continue
        bound = part.bound(sizes, request, context)
        if bound is None:
            continue
        value = np.asarray(value, dtype=np.float64)
        reason = f" ({bound.why})" if bound.why else ""
        if bound.norm is not None:
            norm = float(np.linalg.norm(value))
            limit = contributions * bound.norm
            if not norm <= limit:
                raise ProtocolError(
                    f"{what}: {part.name!r} has norm {norm:.6g}, above the bound {limit:.6g} of "
                    f"{contributions} contribution(s){reason}"
                )
        if bound.low is not None and value.size and not float(value.min()) >= contributions * bound.low:
            raise ProtocolError(
                f"{what}: {part.name!r} holds {float(value.min()):.6g}, below the bound "
                f"{contributions * bound.low:.6g} of {contributions} contribution(s){reason}"
            )
        if bound.high is not None and value.size and not float(value.max()) <= contributions * bound.high:
            raise ProtocolError(
                f"{what}: {part.name!r} holds {float(value.max()):.6g}, above the bound "
                f"{contributions * bound.high:.6g} of {contributions} contribution(s){reason}"
            )


# ---------------------------------------------------------------------------------- docs
def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("|", "\\|")).strip() or "-"


def _how_often(stage: Stage) -> str:
    if stage.rounds is None:
        if callable(stage.times):
            return stage.times_text
        return "once per run" if stage.times == 1 else f"at most {stage.times} times per run"
    first, last = stage.rounds
    if last == first:
        return f"round {first} only"
    return "every round" if first == 1 and last is None else f"rounds {first}-{last or 'end'}"


def protocol_table(protocol: Protocol) -> str:
    """The Markdown of what a family's clients may be asked and send, generated from its declaration.

    Parameters
    ----------
    protocol : Protocol

    Returns
    -------
    str
        A table with one row per array the server sends and per part that leaves a node (its
        stage, shape, how often it travels, what the server learns in the clear and when the
        stage's sums are masked, and whether the model bounds it), then the run's facts and the
        node's caps.
    """
    lines = [
        "| stage | when | part | shape | how often | in the clear, the server sees "
        "| masked (secure aggregation) |",
        "|---|---|---|---|---|---|---|",
    ]
    for stage in protocol.stages:
        if stage.name in _SHARED_IN_DOCS:
            continue
        for part in stage.request:
            lines.append(
                f"| `{stage.name}` | {_cell(stage.doc)} | down: {_cell(part.name)} | "
                f"{_cell(part.shape_text)} | "
                f"{_how_often(stage)} | {_cell(part.learns)} | the same |"
            )
        for part in stage.reply:
            masked_words = part.learns_summed or "the sum over the clients only"
            if not part.summed:
                masked_words = "the same (not summed)"
            bound = ". Bounded: checked by the client and on the sum" if part.bound is not None else ""
            lines.append(
                f"| `{stage.name}` | {_cell(stage.doc)} | up: {_cell(part.name)} | "
                f"{_cell(part.shape_text)} | "
                f"{_how_often(stage)} | {_cell(part.learns)} | {_cell(masked_words + bound)} |"
            )
    lines.append("")
    lines += [f"- Fact `{f.name}`: {_cell(f.doc)}." for f in protocol.facts]
    lines += [f"- Node cap `{c.key}`: {_cell(c.doc)}." for c in protocol.caps]
    if protocol.notes:
        lines += ["", _cell(protocol.notes)]
    return "\n".join(lines)


#: Stages every family shares, documented once (:func:`shared_table`), not in each family's table.
_SHARED_IN_DOCS = ("handshake", "psi-blind", "psi-relay", "psi-keep", "peers", "evaluate")


def shared_table(protocol: Protocol) -> str:
    """The Markdown table of the stages every family shares (taken from ``protocol``)."""
    lines = ["| stage | when | how often | what leaves a node |", "|---|---|---|---|"]
    for stage in protocol.stages:
        if stage.name not in _SHARED_IN_DOCS:
            continue
        parts = "; ".join(f"{p.name}: {p.learns}" for p in stage.reply) or "nothing of its own"
        down = "".join(f" (down: {p.name}: {p.learns})" for p in stage.request)
        lines.append(f"| `{stage.name}` | {_cell(stage.doc)} | {_how_often(stage)} | {_cell(parts + down)} |")
    return "\n".join(lines)
