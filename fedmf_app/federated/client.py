"""Common client-side Flower plumbing (no math here).

A client holds one view and answers only what its family's protocol declares
(:mod:`fedmf_app.federated.protocol`): every request names its stage; before computing anything the
client checks the stage against the declaration (is it part of this run, does its config and do its
arrays have the declared keys, shapes and dtypes), pins the run's facts and checks them and the
sizes they imply against its node's caps, and admits the request against its ledger of what it has
answered in the run (:mod:`fedmf_app.federated.saved_state`); a stage riding with the request (the
peers' keys, :attr:`~fedmf_app.federated.protocol.Stage.rides`) is taken out of it and answered
first, through the same checks. It lays its reply out as declared
(:meth:`ViewClient.reply`: the summed parts masked into one vector when the stage masks, each
bounded part checked first against the model's bound), checks it, records the answer and only
then lets it leave the node. A refusal or failure reaches the server as a
:class:`~fedmf_app.federated.node_errors.NodeError` naming the stage and the cause, never a path
or key of the node.
"""

from __future__ import annotations

import csv
import os
import resource
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from flwr.client import Client, NumPyClient
from flwr.common import Context, NDArrays, Scalar

from fedmf_app.data import ClientView, load_client_view
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.data.preprocess import is_sparse_nonnegative
from fedmf_app.data.sample_ids import sample_id_key
from fedmf_app.federated.alignment import aligned_rows, answer_psi_stage
from fedmf_app.federated.node_errors import refusal
from fedmf_app.federated.node_policy import check_node_policy
from fedmf_app.federated.protocol import (
    Protocol,
    ProtocolError,
    Sizes,
    Stage,
    check_reply,
    check_request,
    check_sum,
    reply_layout,
    split_rider,
)
from fedmf_app.federated.saved_state import (
    ClientStateError,
    Ledger,
    admit,
    load_ledger,
    record_answer,
    request_digest,
)
from fedmf_app.federated.secure_sum_flower import (
    SecureAggregationError,
    answer_peers,
    key_transcript,
    masked_upload,
    own_key,
)
from fedmf_app.options import Family
from fedmf_app.options.shared import shared_params

__all__ = ["ViewClient", "peak_rss_mb", "write_labels_file"]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class ViewClient(NumPyClient):
    """A client holding one view.

    Parameters
    ----------
    context : Context
        This node's context (its ``state`` persists across rounds).
    cfg : dict
        Validated run config.
    partition_id : int
    num_partitions : int or None
        As declared in the node config.
    view : ClientView

    Attributes
    ----------
    shared : SharedParams
        The shared keys of ``cfg``, typed (:func:`~fedmf_app.options.shared.shared_params`).

    Notes
    -----
    A family's client sets :attr:`family` and :attr:`protocol`, and implements :meth:`fit_stage`
    (its ``fit`` stages) and, when its protocol has ``get_properties`` stages of its own,
    :meth:`answer_properties`.
    """

    def __init__(
        self,
        context: Context,
        cfg: dict[str, Any],
        partition_id: int,
        num_partitions: int | None,
        view: ClientView,
    ) -> None:
        self.context = context
        self.cfg = cfg
        self.shared = shared_params(cfg)
        self.partition_id = partition_id
        self.num_partitions = num_partitions
        self.view = view
        self._facts: dict[str, int] = {}
        self._own: tuple[ClientView, dict[str, int]] | None = None

    #: The method family of this client (its ``options.py``'s ``FAMILY``): what the client needs
    #: from the data layer (:meth:`~fedmf_app.options.Family.data_needs`), for a view reloaded
    #: after a sample-ID alignment.
    family: ClassVar[Family]

    #: The family's protocol (its ``protocol.py``'s ``PROTOCOL``).
    protocol: ClassVar[Protocol]

    #: Whether this method fills the rows its view misses with public values (zeros, or the mean
    #: of its observed rows: every method but fmvc-iai). Its contribution to a summed row it does not
    #: observe then follows from what the server knows (up to one offset per view with the mean), so
    #: a masked sum over a sample that one view alone observes releases that view's row.
    fills_missing_rows: bool = True

    @property
    def me(self) -> str:
        """This client, for messages."""
        return f"SuperNode {self.context.node_id} (partition {self.partition_id})"

    def check_sum_contributors(self) -> None:
        """Refuse to take part in masked sums that some sample's row would enter alone.

        Under missing views (the run's public, seeded mask), a sample observed by one view only
        has one real contributor to every row-wise sum; with :attr:`fills_missing_rows` the masked
        sum would give the server that client's row. Such a run is refused, by every client, before
        anything is answered.

        Raises
        ------
        SecureAggregationError
            Naming the partition, the number of such samples and the run-config keys.
        """
        cfg = self.cfg
        if not (self.fills_missing_rows and cfg["missing-rate"] > 0 and self.protocol.masks(cfg)):
            return
        n = self.view.features.shape[0]
        mask = missing_view_mask(
            n, cfg["num-clients"], cfg["missing-rate"], cfg["seed"], cfg["missing-views-dropped"]
        )
        alone = int(np.count_nonzero(mask.sum(axis=1) < 2))
        if alone:
            raise SecureAggregationError(
                f"partition {self.partition_id} refuses this run: with missing-rate = {cfg['missing-rate']} "
                f"and missing-views-dropped = {cfg['missing-views-dropped']}, {alone} of {n} samples are "
                f"observed by one view only, so the masked sums of {cfg['algorithm']} would release "
                "those samples' rows from one client alone (no sum over fewer than two contributors "
                "is released); keep at least two views per sample (missing-views-dropped <= "
                "num-clients - 2)"
            )

    @property
    def observed(self) -> np.ndarray:
        """Which rows of this view are observed (the run's seeded missing-view mask), shape (n,),
        bool; all of them when ``missing-rate`` is 0.

        A property: the view changes after a sample-ID alignment."""
        cfg = self.cfg
        n = self.view.features.shape[0]
        return missing_view_mask(
            n, cfg["num-clients"], cfg["missing-rate"], cfg["seed"], cfg["missing-views-dropped"]
        )[:, self.partition_id]

    def own_data(self) -> dict[str, int]:
        """What this node knows of its own data: ``n``, ``d``, ``observed`` and ``classes`` (its
        ground truth's class count, 0 without one); kept for the message (the view it describes)."""
        if self._own is None or self._own[0] is not self.view:
            n, d = self.view.features.shape
            classes = 0 if self.view.labels is None else int(self.view.labels.max()) + 1
            own = {"n": int(n), "d": int(d), "observed": int(self.observed.sum()), "classes": classes}
            self._own = (self.view, own)
        return self._own[1]

    def sizes(self) -> Sizes:
        """This client's :class:`~fedmf_app.federated.protocol.Sizes`, with the facts pinned so far."""
        own = self.own_data()
        return Sizes(self.cfg, own["n"], own["d"], own["observed"], dict(self._facts))

    def to_client(self) -> Client:
        """This client as Flower's ``Client``, for one message, once this node's policy accepts the
        run (:func:`~fedmf_app.federated.node_policy.check_node_policy`) and no masked sum would
        release one client's row (:meth:`check_sum_contributors`); Flower and the in-process
        federation call it for every message.

        Raises
        ------
        fedmf_app.federated.node_errors.NodeError
            When the run asks less than the node config's policy, or a masked sum would release a
            row (the cause inside, no path of the node).
        """
        try:
            check_node_policy(
                self.cfg,
                self.context.node_config,
                self.me,
                aligns=bool(sample_id_key(self.context.run_config, self.context.node_config)),
            )
            self.check_sum_contributors()
        except Exception as exc:
            raise refusal(self.me, None, exc) from exc
        return super().to_client()

    # ------------------------------------------------------------------------ the protocol
    def _admit(
        self, message: str | None, config: Mapping[str, Scalar], arrays: NDArrays
    ) -> tuple[Stage, Ledger, str, int]:
        """Check a request against the declaration, the facts, the caps and the ledger (``message``
        ``None``: a riding stage's keys, taken out of the request they travel with)."""
        name = str(config.get("stage", ""))
        stage = self.protocol.stage(name)
        if stage.rides != (message is None):
            raise ProtocolError(
                f"stage {name!r} travels only inside another request"
                if stage.rides
                else f"stage {name!r} cannot ride inside another request"
            )
        if message is not None and stage.message != message:
            raise ProtocolError(f"stage {name!r} is declared for {stage.message}, not {message}")
        ledger = load_ledger(self.context, self.cfg, self.me)
        self._facts = dict(ledger.facts)
        if stage.states_facts:
            self._pin_facts(config)
        sizes = self.sizes()
        check_request(self.protocol, stage, sizes, config, arrays)
        if stage.states_facts:
            self._check_caps(sizes)
        server_round = int(config.get("server-round", 0))
        digest = request_digest(name, config, arrays)
        admit(ledger, stage, self.cfg, server_round, digest, f"partition {self.partition_id}")
        ledger.facts = dict(self._facts)
        return stage, ledger, digest, server_round

    def _pin_facts(self, config: Mapping[str, Scalar]) -> None:
        """Pin the facts the request states; refuse a changed one, or one the node cannot accept."""
        stated: dict[str, int] = {}
        for fact in self.protocol.facts:
            key = f"fact-{fact.name}"
            if key not in config:
                raise ProtocolError(f"the request does not state the run's {fact.name!r} ({key})")
            stated[fact.name] = int(config[key])
            pinned = self._facts.get(fact.name)
            if pinned is not None and pinned != stated[fact.name]:
                raise ProtocolError(
                    f"the request states {fact.name} = {stated[fact.name]}, but this run stated "
                    f"{pinned} before; a fact is stated once per run"
                )
        own = self.own_data()
        caps = self.protocol.caps_of(self.cfg, own, stated, self.context.node_config)
        for fact in self.protocol.facts:
            problem = fact.check(self.cfg, own, stated, caps)
            if problem:
                raise ProtocolError(f"the request states {fact.name} = {stated[fact.name]}: {problem}")
        self._facts = stated

    def _check_caps(self, sizes: Sizes) -> None:
        """Refuse a run whose sizes exceed this node's caps (node config, else the defaults)."""
        caps = self.protocol.caps_of(self.cfg, self.own_data(), self._facts, self.context.node_config)
        for cap in self.protocol.caps:
            if cap.key not in caps or cap.measure is None:
                continue
            size = cap.measure(sizes)
            if size > caps[cap.key]:
                source = "its node config" if cap.key in self.context.node_config else "its default"
                raise ProtocolError(
                    f"this run would send {cap.what} = {size}, above the node's cap '{cap.key}' = "
                    f"{caps[cap.key]} ({source})"
                )

    def _answer(
        self,
        message: str,
        config: Mapping[str, Scalar],
        arrays: NDArrays,
        compute: Callable[[Stage], tuple[NDArrays, dict[str, Scalar], Any]],
    ) -> Any:
        """Admit, compute, check and record one answer; any failure reaches the server as a
        :class:`~fedmf_app.federated.node_errors.NodeError`."""
        own, rider = split_rider(self.protocol, config)
        stage_name = str(rider.get("stage", own.get("stage", "?")))
        try:
            if rider:
                self._answer_rider(rider)
                stage_name = str(own.get("stage", "?"))
            stage, ledger, digest, server_round = self._admit(message, own, arrays)
            sent_arrays, sent_scalars, result = compute(stage)
            check_reply(stage, self.sizes(), sent_arrays, sent_scalars)
            ledger.facts = dict(self._facts)
            record_answer(self.context, self.cfg, ledger, stage, server_round, digest)
            return result
        except Exception as exc:
            raise refusal(self.me, stage_name, exc) from exc

    def _answer_rider(self, rider: dict[str, Scalar]) -> None:
        """Answer the stage riding with a request (the peers' keys), before the request's own stage."""
        stage, ledger, digest, server_round = self._admit(None, rider, [])
        answer_peers(self.context, self.cfg, self.partition_id, rider)
        self._bind_keys(ledger, rider)
        record_answer(self.context, self.cfg, ledger, stage, server_round, digest)

    def _bind_keys(self, ledger: Ledger, config: Mapping[str, Scalar]) -> None:
        """Bind the ledger to this run's key agreement; refuse a second one under the same run id."""
        transcript = key_transcript(config, int(self.cfg["num-clients"]))
        if (
            ledger.transcript
            and ledger.continued_from == int(self.context.run_id)
            and ledger.transcript != transcript
        ):
            raise ProtocolError(
                f"run {self.context.run_id} agreed other keys before (its saved state is bound to "
                "them); refused"
            )
        ledger.transcript = transcript

    def reply(
        self,
        stage: Stage,
        values: Mapping[str, Any],
        request: NDArrays,
        server_round: int,
        bound_context: Any = None,
    ) -> tuple[NDArrays, dict[str, Scalar]]:
        """Lay a reply out as the stage declares it.

        The summed parts go, when the stage masks, into one masked fixed-point vector
        (:func:`~fedmf_app.federated.secure_sum_flower.masked_upload`, tag :attr:`Stage.tag`), after
        this client has checked them against the model's bounds (it refuses to send an upload of
        its own that breaks one); the other arrays follow in order; the scalars become metrics.

        Parameters
        ----------
        stage : Stage
        values : mapping
            Every present part's value, by part name (a scalar as a number); a declared part that
            this run's mode leaves out (its :attr:`~fedmf_app.federated.protocol.Part.present`) is
            not sent.
        request : list of ndarray
            The request's arrays (the bounds may depend on them).
        server_round : int
            For the masks (0 before round 1).
        bound_context : any
            What the family's bounds need (:attr:`~fedmf_app.federated.protocol.Part.bound`).

        Returns
        -------
        arrays : list of ndarray
        metrics : dict
        """
        undeclared = set(values) - {p.name for p in stage.reply}
        if undeclared:
            raise ProtocolError(f"stage {stage.name!r} declares no part {sorted(undeclared)}: not sent")
        sizes = self.sizes()
        summed, arrays, scalars = reply_layout(stage, sizes)
        own = f"partition {self.partition_id}'s own upload"
        clear = [p for p in arrays + scalars if p.bound is not None]
        check_sum(clear, [values[p.name] for p in clear], sizes, request, bound_context, 1, own)
        out: NDArrays = []
        metrics: dict[str, Scalar] = {}
        if summed:
            parts = [np.asarray(values[p.name], dtype=np.float64) for p in summed]
            check_sum(summed, parts, sizes, request, bound_context, 1, own)
            started = time.perf_counter()
            out.append(
                masked_upload(self.context, self.cfg, self.partition_id, parts, server_round, stage.tag)
            )
            if any(p.name == stage.mask_time for p in scalars):
                metrics[stage.mask_time] = time.perf_counter() - started
        out += [values[p.name] for p in arrays if p.name in values]
        for part in scalars:
            if part.name in values and part.name not in metrics:
                metrics[part.name] = values[part.name]
        return out, metrics

    # -------------------------------------------------------------------------- the messages
    def get_properties(self, config: dict[str, Scalar]) -> dict[str, Scalar]:
        """Answer a ``get_properties`` stage: the handshake (:meth:`handshake_properties`; with this
        client's key for the run when it masks sums,
        :func:`~fedmf_app.federated.secure_sum_flower.own_key`), the sample-ID alignment
        (:func:`~fedmf_app.federated.alignment.answer_psi_stage`; after its last stage this client's
        view holds only the aligned rows) or a family stage (:meth:`answer_properties`)."""

        def compute(stage: Stage) -> tuple[NDArrays, dict[str, Scalar], dict[str, Scalar]]:
            if stage.name == "handshake":
                answer = self.handshake_properties()
                if self.protocol.masks(self.cfg):
                    answer.update(own_key(self.context, self.cfg, self.partition_id))
            elif stage.name.startswith("psi-"):
                answer = answer_psi_stage(
                    self.context, self.cfg, self.partition_id, self.view, stage.name, config
                )
                if stage.name == "psi-keep":
                    self.view = load_client_view(
                        self.cfg,
                        self.partition_id,
                        self.context.node_config,
                        rows=aligned_rows(self.context),
                        needs=self.family.data_needs(self.cfg),
                    )
            else:
                answer = self.answer_properties(stage, config)
            summed, _, _ = reply_layout(stage, self.sizes())
            scalars = dict(answer)
            arrays = [np.frombuffer(scalars.pop(summed[0].name), dtype=np.uint64)] if summed else []
            return arrays, scalars, answer

        return self._answer("get_properties", config, [], compute)

    def handshake_properties(self) -> dict[str, Scalar]:
        """Who this client is and the shape of its view (``sample-ids``: how many IDs its data has,
        0 for none; ``sparse-counts``: 1 when the view looks like counts or bag of words,
        :func:`~fedmf_app.data.preprocess.is_sparse_nonnegative`; ``source``: the data set's view,
        or the name of the node's data file without its folder)."""
        n, d = self.view.features.shape
        props: dict[str, Scalar] = {
            "partition-id": self.partition_id,
            "num-samples": int(n),
            "num-features": int(d),
            "source": public_source(self.view.source, self.context.node_config),
            "num-classes": 0 if self.view.labels is None else int(self.view.labels.max()) + 1,
            "sample-ids": 0 if self.view.ids is None else int(self.view.ids.size),
            "sparse-counts": int(is_sparse_nonnegative(self.view.features)),
        }
        if self.num_partitions is not None:
            props["num-partitions"] = self.num_partitions
        return props

    def answer_properties(self, stage: Stage, config: dict[str, Scalar]) -> dict[str, Scalar]:
        """A family's own ``get_properties`` stage (default: the family has none)."""
        raise ProtocolError(f"stage {stage.name!r} has no answer in this client")

    def fit(self, parameters: NDArrays, config: dict[str, Scalar]) -> tuple[NDArrays, int, dict[str, Scalar]]:
        """Answer a ``fit`` stage (a set-up or a training round) through :meth:`fit_stage`."""

        def compute(stage: Stage) -> tuple[NDArrays, dict[str, Scalar], Any]:
            arrays, num_examples, metrics = self.fit_stage(stage, parameters, config)
            return arrays, metrics, (arrays, num_examples, metrics)

        return self._answer("fit", config, parameters, compute)

    def fit_stage(
        self, stage: Stage, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Scalar]]:
        """One ``fit`` stage of the family (admitted; the reply is checked after it)."""
        raise NotImplementedError

    def truth_bytes(self) -> bytes:
        """This view's ground-truth labels as little-endian int64 bytes (empty when it has none):
        the ``labels`` of a round-1 reply (``FIRST_ROUND_TRUTH``) or of the end of run, only to score."""
        return b"" if self.view.labels is None else np.asarray(self.view.labels, "<i8").tobytes()

    def round_record(self, server_round: int) -> dict[str, Scalar]:
        """What a family's training reply adds for the server's record: ``peak_rss_mb``, and in
        round 1 the ground truth when this view has one (:meth:`truth_bytes`), declared as
        :data:`~fedmf_app.federated.stages.PROCESS_MEMORY` and
        :data:`~fedmf_app.federated.stages.FIRST_ROUND_TRUTH`.

        Parameters
        ----------
        server_round : int

        Returns
        -------
        dict
        """
        record: dict[str, Scalar] = {"peak_rss_mb": peak_rss_mb()}
        if server_round == 1 and self.view.labels is not None:
            record["labels"] = self.truth_bytes()
        return record

    def evaluate(
        self, parameters: list[np.ndarray], config: dict[str, Scalar]
    ) -> tuple[float, int, dict[str, Scalar]]:
        """End of run, only after a sample-ID alignment: hand the ground truth to the server again,
        only to score the final clustering (it came in round 1 or with the set-up as well).

        The server sends the final labels (``parameters[0]``, one per aligned sample); a node with
        node config ``labels-file`` writes them there as CSV (``id,row,cluster``: its own IDs, its
        file's rows), :func:`write_labels_file`.

        Returns
        -------
        loss : float
            Always 0 (nothing is evaluated here).
        num_examples : int
            Samples n.
        metrics : dict
            ``partition-id``, ``labels`` (the labels as little-endian int64 bytes, empty when this
            client has none) and ``peak_rss_mb`` (peak resident memory of this client's process).
        """

        def compute(stage: Stage) -> tuple[NDArrays, dict[str, Scalar], Any]:
            if parameters and self.view.ids is not None and self.view.rows is not None:
                target = self.context.node_config.get("labels-file")
                if target:
                    write_labels_file(Path(str(target)), self.view, parameters[0])
            metrics: dict[str, Scalar] = {
                "partition-id": self.partition_id,
                "labels": self.truth_bytes(),
                "peak_rss_mb": peak_rss_mb(),
            }
            return [], metrics, (0.0, int(self.view.features.shape[0]), metrics)

        return self._answer("evaluate", config, parameters, compute)


def public_source(source: str, node_config: Mapping[str, Any]) -> str:
    """``source`` with the node's data file named without its folder (the handshake's ``source``)."""
    data_file = node_config.get("data-file")
    if data_file and str(data_file) in source:
        return source.replace(str(data_file), Path(str(data_file)).name)
    return source


def write_labels_file(path: Path, view: ClientView, clusters: np.ndarray) -> None:
    """Write ``id,row,cluster`` for every aligned sample of ``view`` (atomically).

    Parameters
    ----------
    path : Path
        Node config ``labels-file``.
    view : ClientView
        Aligned (``ids`` and ``rows`` set).
    clusters : ndarray of int, shape (n,)
        The final cluster of every aligned sample, in the aligned order.

    Raises
    ------
    ClientStateError
        When the number of labels is not this view's number of samples.
    """
    if clusters.shape != view.ids.shape:
        raise ClientStateError(f"{path}: {clusters.size} final labels for {view.ids.size} aligned samples")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "row", "cluster"])
        writer.writerows(zip(view.ids.tolist(), view.rows.tolist(), np.asarray(clusters).tolist()))
    os.replace(tmp, path)
