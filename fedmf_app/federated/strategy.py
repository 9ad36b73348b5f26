"""Common server-side Flower plumbing for view-federated algorithms (no math here).

Every algorithm of this app federates *views*: client ``p`` holds view ``p`` of the same samples,
and every client takes part in every round. :class:`ViewFederationStrategy` does what is common:

* before round 1: the handshake of :mod:`fedmf_app.federated.handshake` (exactly ``num-clients``
  SuperNodes, each telling its partition id and the shape of its view), when the clients' data
  has sample IDs the alignment of :mod:`fedmf_app.federated.alignment`, the algorithm's checks,
  when the run masks sums (its protocol's ``masks``) the one key agreement of
  :mod:`fedmf_app.federated.secure_sum_flower`, and only then the run folder;
* each round: sends every client the same instructions (the round's stage of the family's
  protocol, :mod:`fedmf_app.federated.protocol`, and the run's facts), maps the replies to
  partition ids, checks every reply against the declaration (count, shapes, dtypes, the scalars;
  finite values in range, :mod:`fedmf_app.federated.replies`; in the clear, every bounded part
  against its bound), hands them to the algorithm's :meth:`~ViewFederationStrategy.aggregate`
  (which reads the round's summed parts only through :meth:`~ViewFederationStrategy.round_sums`:
  decoded from the masked vectors and checked against the bound of ``m`` contributions when the
  round masks, added up otherwise), checks that the update is finite, records the round in
  ``result.json``, writes the checkpoint and logs progress;
* on any client failure, missing or invalid reply, or non-finite update: marks ``result.json``
  failed (keeping the finished rounds and the last good checkpoint) and stops the run with a
  message naming the partitions (for an invalid reply the round and the array; for replies that
  outlived their TTL run config ``round-timeout-s`` and its value,
  :func:`~fedmf_app.federated.timeouts.timeout_advice`), since the algorithms here need every
  view in every round;
* after the last round: asks the algorithm for the predicted cluster of every sample
  (:meth:`~ViewFederationStrategy.final_labels`), scores it against the ground truth the clients
  sent during the run (fmvc-imk's set-up, the other families' round-1 replies; used only to score,
  :meth:`~ViewFederationStrategy.held_truth`) without another exchange, and writes the summary, the
  plots and ``result.json["final"]`` (labels and ACC, NMI, purity, ARI). After a sample-ID alignment
  the end-of-run exchange sends every client the final labels (and brings the truth again).
"""

from __future__ import annotations

import resource
import time
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from logging import ERROR, INFO, WARNING
from typing import Any, NoReturn

import numpy as np
from flwr.common import (
    Code,
    EvaluateIns,
    EvaluateRes,
    FitIns,
    FitRes,
    Parameters,
    Scalar,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.logger import log
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.strategy import Strategy

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.summation import add_up, add_up_scalars
from fedmf_app.federated.alignment import align_samples
from fedmf_app.federated.background_imports import import_in_background
from fedmf_app.federated.checkpoint import write_checkpoint
from fedmf_app.federated.handshake import (
    FederationError,
    ask_all,
    check_view_count,
    collect_properties,
    resolve_num_clusters,
)
from fedmf_app.federated.npy import to_parameters
from fedmf_app.federated.progress import time_left
from fedmf_app.federated.prompt_grid import SuperLinkLost
from fedmf_app.federated.protocol import (
    Protocol,
    ProtocolError,
    Sizes,
    Stage,
    check_reply,
    check_sum,
    reply_layout,
)
from fedmf_app.federated.replies import ReplyError, check_arrays, check_finite_state, check_metrics
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.secure_sum_flower import peers_rider, summed_arrays
from fedmf_app.federated.timeouts import timeout_advice
from fedmf_app.options.shared import shared_params

__all__ = ["ClientReply", "FederationError", "ViewFederationStrategy"]


@dataclass(frozen=True)
class ClientReply:
    """One client's reply to a round, decoded.

    Attributes
    ----------
    partition_id : int
    arrays : list of ndarray
    metrics : dict
    """

    partition_id: int
    arrays: list[np.ndarray]
    metrics: dict[str, Scalar]


def _sent_truth(metrics: Mapping[str, Scalar]) -> np.ndarray | None:
    """The ground truth a reply's ``labels`` carry (little-endian int64 bytes, as
    :meth:`~fedmf_app.federated.client.ViewClient.truth_bytes` writes them), or ``None`` without.

    Returns
    -------
    ndarray of int64, shape (n,), or None
    """
    sent = metrics.get("labels", b"")
    return np.frombuffer(sent, dtype="<i8").copy() if len(sent) > 0 else None


class ViewFederationStrategy(Strategy):
    """Base strategy: full participation of one client per view, results and progress.

    Parameters
    ----------
    cfg : dict
        Validated run config.
    recorder : RunRecorder
        Where the run's results go.

    Attributes
    ----------
    shared : SharedParams
        The shared keys of ``cfg``, typed (:func:`~fedmf_app.options.shared.shared_params`).
    num_clusters : int or None
        Clusters of the final clustering, set before round 1: run config ``num-clusters``, or
        (when that is 0) the number of ground-truth classes the clients report, else ``None``.
    key_agreement : dict
        When the run masks sums (its protocol's ``masks``): the cost of the key agreement before round 1
        (:func:`~fedmf_app.federated.secure_sum_flower.peers_rider`: the bytes each client receives;
        it takes no message of its own); else empty.
    alignment : dict
        When the clients' data has sample IDs: the outcome and cost of the sample-ID alignment
        before round 1 (:func:`~fedmf_app.federated.alignment.align_samples`); else empty.

    Notes
    -----
    Subclasses set :attr:`protocol`, implement :meth:`initial_arrays`, :meth:`aggregate` and may
    override :meth:`check_clients`, :meth:`run_facts`, :meth:`bound_context`, :meth:`summary`,
    :meth:`write_plots`, :meth:`final_labels`, :attr:`progress_keys` and :attr:`later_imports`.
    """

    #: The family's protocol (its ``protocol.py``'s ``PROTOCOL``).
    protocol: Protocol

    #: Record keys shown in the per-round log line, in order.
    progress_keys: tuple[str, ...] = ()

    #: Modules the run needs only once the clients have answered (here: the scores of
    #: :mod:`~fedmf_app.common.metrics`), imported on a thread during the handshake
    #: (:func:`~fedmf_app.federated.background_imports.import_in_background`).
    later_imports: tuple[str, ...] = ("sklearn.metrics", "scipy.optimize")

    #: Attributes saved after every round (``checkpoint.npz``) and restored on resume.
    checkpoint_attrs: tuple[str, ...] = ("num_clusters",)

    #: Classes (other than arrays, numbers, strings, containers and CSR matrices) whose instances
    #: those attributes hold: the only ones a checkpoint may name (their fields are restored).
    checkpoint_types: tuple[type, ...] = ()

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__()
        self.cfg = cfg
        self.shared = shared_params(cfg)
        self.recorder = recorder
        self.num_rounds: int = cfg["num-server-rounds"]
        self.last_round: int = self.num_rounds
        self.done = False
        self.clients: list[ClientProxy] = []
        self.client_info: list[dict[str, Scalar]] = []
        self.num_clusters: int | None = None
        self.key_agreement: dict[str, Any] = {}
        self._peers_rider: dict[str, Scalar] = {}
        self._rider_request: tuple[str, int] | None = None
        self.alignment: dict[str, Any] = {}
        self.round_offset = 0
        self._resume: dict[str, Any] | None = None
        self._round_start = 0.0
        self._broadcast_bytes = 0
        self._run_start = 0.0
        self._summary: dict[str, Any] = {}
        self._final: dict[str, Any] | None = None
        self.label_history: dict[int, np.ndarray] = {}
        self.truth: np.ndarray | None = None
        self.truth_partition = 0
        self.client_peak_rss_mb: float | None = None
        self.broadcast: list[np.ndarray] = []
        self._round_costs: dict[str, float] = {}

    # ----------------------------------------------------------------- hooks for the algorithms
    def expected_clients(self) -> int:
        """Number of clients the run needs (default: ``num-clients``)."""
        return int(self.cfg["num-clients"])

    def check_clients(self, info: list[dict[str, Scalar]]) -> None:
        """Check the handshake replies (in partition order); raise :class:`FederationError`.

        Parameters
        ----------
        info : list of dict
            Each client's properties: ``partition-id``, ``num-samples``, ``num-features``, ...
        """
        samples = {int(i["num-samples"]) for i in info}
        if len(samples) != 1:
            detail = ", ".join(f"partition {i['partition-id']}: {i['num-samples']}" for i in info)
            raise FederationError(f"the views do not have the same number of samples ({detail})")

    def converged(self, record: dict[str, Any]) -> str | None:
        """Whether the run may stop after the round of ``record`` (default: never).

        Parameters
        ----------
        record : dict
            The round's record, as written to ``result.json``.

        Returns
        -------
        str or None
            Why the run stops (for the log and the summary), or ``None`` to go on.
        """
        return None

    def run_facts(self) -> dict[str, int]:
        """The run's facts, stated in every request of the family's own stages (default: the
        number of clusters, 0 when unknown); resolved before round 1."""
        return {"clusters": int(self.num_clusters or 0)}

    def bound_context(self, stage: Stage, server_round: int) -> Any:
        """What the protocol's bounds need for ``stage`` of ``server_round`` (default: nothing)."""
        return None

    def sizes(self, partition: int) -> Sizes:
        """Partition ``partition``'s :class:`~fedmf_app.federated.protocol.Sizes` (from its handshake)."""
        info = self.client_info[partition]
        n = int(info["num-samples"])
        return Sizes(
            self.cfg, n, int(info["num-features"]), int(info.get("num-observed", n)), self.run_facts()
        )

    def stage_config(self, stage: str, **extra: Scalar) -> dict[str, Scalar]:
        """A request's config: its ``stage``, the run's facts (for a stage that states them) and ``extra``.

        When the run masks sums, every request of the first stage and round asked after the handshake
        also carries the peers' keys (:func:`~fedmf_app.federated.secure_sum_flower.peers_rider`)."""
        config: dict[str, Scalar] = {"stage": stage}
        if self.protocol.stage(stage).states_facts:
            config.update({f"fact-{k}": v for k, v in self.run_facts().items()})
        config.update(extra)
        if self._peers_rider:
            request = (stage, int(extra.get("server-round", 0)))
            self._rider_request = self._rider_request or request
            if request == self._rider_request:
                config.update(self._peers_rider)
        return config

    def check_replies(
        self,
        stage: Stage,
        replies: list[tuple[list[np.ndarray], dict[str, Scalar]]],
        request: list[np.ndarray],
        what: str,
        server_round: int = 0,
    ) -> None:
        """Check every partition's reply to ``stage`` against the declaration and, in the clear,
        its bounded parts against their bounds; a failure names the partition.

        Parameters
        ----------
        stage : Stage
        replies : list of (arrays, scalars)
            In partition order.
        request : list of ndarray
            What the server sent (the bounds may depend on it).
        what : str
            The stage, for messages (``"round 3"``).
        server_round : int

        Raises
        ------
        FederationError
        """
        context = self.bound_context(stage, server_round)
        for partition, (arrays, scalars) in enumerate(replies):
            sizes = self.sizes(partition)
            try:
                check_reply(stage, sizes, arrays, scalars)
                summed, clear, clear_scalars = reply_layout(stage, sizes)
                check_arrays(arrays, ["masked sum"] * bool(summed) + [p.name for p in clear])
                check_metrics(scalars)
                bounded = [p for p in clear + clear_scalars if p.bound is not None]
                by_name = {p.name: a for p, a in zip(clear, arrays[1 if summed else 0 :])} | dict(scalars)
                check_sum(
                    bounded, [by_name[p.name] for p in bounded], sizes, request, context, 1, "its reply"
                )
            except (ProtocolError, ReplyError) as exc:
                self._stop(
                    f"{what}: partition {partition} sent an invalid reply: {exc}; the run stops (the "
                    "checkpoint keeps the last good round)"
                )

    def decode_sum(
        self, stage: Stage, uploads: list[np.ndarray], request: list[np.ndarray], what: str, server_round: int
    ) -> dict[str, Any]:
        """Decode the clients' masked uploads of ``stage`` into the sums of its summed parts, and
        check them against the bound of ``m`` contributions.

        Parameters
        ----------
        stage : Stage
        uploads : list of ndarray of uint64
            Every client's masked vector.
        request : list of ndarray
            What the server sent.
        what : str
            The sum, for messages (``"round 3, masked 'upload'"``).
        server_round : int

        Returns
        -------
        dict
            Part name -> the sum (an array, or a float for a scalar).

        Raises
        ------
        FederationError
            When the masks did not cancel, or a sum breaks its bound: the masks hide which client
            sent the upload outside its bound, so no partition is named.
        """
        sizes = self.sizes(0)
        summed, _, _ = reply_layout(stage, sizes)
        shapes = [() if p.shape is None else tuple(p.shape(sizes)) for p in summed]
        sums = summed_arrays(uploads, [s or (1,) for s in shapes], self.shared.frac_bits, what)
        try:
            check_sum(
                summed, sums, sizes, request, self.bound_context(stage, server_round), len(uploads), what
            )
        except ProtocolError as exc:
            self._stop(
                f"secure aggregation, {exc}: some client sent an upload outside the model's bound, and the "
                "masks hide which one, so no partition is named (an honest client checks its own upload "
                "before masking it); the run stops (the checkpoint keeps the last good round)"
            )
        return {p.name: (float(v[0]) if shape == () else v) for p, v, shape in zip(summed, sums, shapes)}

    def round_sums(self, server_round: int, replies: list[ClientReply]) -> dict[str, Any]:
        """The sums over the clients of the round stage's summed parts, masked or not.

        A family's server update reads a round's summed parts only through these sums, so it is
        the same update whether or not the round masks. When the round's stage masks (its
        :attr:`~fedmf_app.federated.protocol.Stage.masked`, from ``secure-aggregation``), the sums
        are decoded from every reply's masked vector (its first array; :meth:`decode_sum`, against
        the round's broadcast), and the round's record gets the cost: ``secagg_server_s`` (the
        decoding) and ``secagg_client_s_max`` (the slowest client's masking). In the clear, the
        parts are added up in partition order (:func:`~fedmf_app.common.summation.add_up` and
        :func:`~fedmf_app.common.summation.add_up_scalars`), so that a sum divided by ``m`` is,
        bit for bit, ``np.mean`` of the parts.

        Parameters
        ----------
        server_round : int
        replies : list of ClientReply
            In partition order, already checked against the declaration.

        Returns
        -------
        dict
            Part name -> the sum over the ``m`` clients (an array of the part's shape, or a float
            for a scalar).
        """
        stage = self.protocol.round_stage(server_round)
        if stage.masked(self.cfg):
            started = time.perf_counter()
            uploads = [r.arrays[0] for r in replies]
            what = f"round {server_round}, masked '{stage.tag}'"
            sums = self.decode_sum(stage, uploads, self.broadcast, what, server_round)
            self._round_costs = {
                "secagg_server_s": time.perf_counter() - started,
                "secagg_client_s_max": max(float(r.metrics[stage.mask_time]) for r in replies),
            }
            return sums
        _, arrays, scalars = reply_layout(stage, self.sizes(0))
        sums: dict[str, Any] = {}
        for index, part in enumerate(arrays):
            if part.summed:
                sums[part.name] = add_up([r.arrays[index] for r in replies])
        for part in scalars:
            if part.summed:
                sums[part.name] = add_up_scalars([float(r.metrics[part.name]) for r in replies])
        return sums

    @abstractmethod
    def initial_arrays(self) -> list[np.ndarray]:
        """Arrays broadcast in round 1 (called after the handshake)."""

    @abstractmethod
    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Combine one round's replies (in partition order).

        Returns
        -------
        arrays : list of ndarray
            Broadcast in the next round.
        record : dict
            JSON-serialisable metrics of this round. The base class adds ``round``, ``wall_s``
            (this round, configure to aggregate), ``elapsed_s``, ``server_s`` (time in
            :meth:`aggregate`), ``client_kernel_s_max``/``_sum`` (from each reply's
            ``kernel_s`` metric, which every client must report), ``bytes_down_per_client`` (the
            broadcast's serialised arrays) and ``bytes_up_per_client_max`` (the largest reply's).
        """

    def held_truth(self) -> tuple[int, np.ndarray] | None:
        """The ground truth the clients sent during the run: :attr:`truth`, from the first partition
        that had one, in its set-up reply (fmvc-imk sets it there) or its round-1 reply (``labels``,
        :data:`~fedmf_app.federated.stages.FIRST_ROUND_TRUTH`, kept by :meth:`aggregate_fit`).

        The final labels are scored against it after the last round, without an end-of-run exchange
        (unless a sample-ID alignment needs the final labels sent back).

        Returns
        -------
        (int, ndarray of int, shape (n,)) or None
            The partition it came from and its labels; ``None`` when no client had labels (nothing
            to score).
        """
        return None if self.truth is None else (self.truth_partition, self.truth)

    def summary(self) -> dict[str, Any]:
        """Summary written when the run completes."""
        return {}

    def final_labels(self) -> np.ndarray | None:
        """Predicted cluster of every sample after the last round (``None``: no clustering).

        Returns
        -------
        ndarray, shape (n,), or None
            Integer cluster ids; called once, after the last round's :meth:`aggregate`.
        """
        return None

    def round_labels(self) -> np.ndarray | None:
        """The clustering after the round just aggregated, kept to be scored when the run ends.

        Every round's clustering is kept (:attr:`label_history`, checkpointed) and scored after the
        last round, against the ground truth the clients sent only to score (:meth:`held_truth`);
        the scores go into that round's record (``acc``, ``nmi``, ``purity``, ``ari``).

        Returns
        -------
        ndarray, shape (n,), or None
            Integer cluster ids, or ``None`` (the default): no per-round scores.
        """
        return None

    def write_plots(self) -> list[str]:
        """Write the run's figures into the run folder; return their file names.

        Called when the run completes, after the final (and per-round) scores are known."""
        return []

    # ------------------------------------------------------------------------ Flower's Strategy
    def initialize_parameters(self, client_manager: ClientManager) -> Parameters | None:
        """Handshake with the clients, then return the round-1 broadcast."""
        self._run_start = time.perf_counter()
        try:
            check_view_count(self.cfg["dataset"], self.expected_clients(), self.cfg["views"])
            loading = import_in_background(self.later_imports)
            try:
                self.clients, self.client_info = collect_properties(
                    client_manager,
                    self.expected_clients(),
                    float(self.cfg["connect-timeout-s"]),
                    float(self.cfg["round-timeout-s"]),
                )
            finally:
                loading.join()
            self._check_handshake()
            self._align_samples()
            self.num_clusters = resolve_num_clusters(int(self.cfg["num-clusters"]), self.client_info)
            self.check_clients(self.client_info)
            if self.protocol.masks(self.cfg):
                self._peers_rider, self.key_agreement = peers_rider(self.client_info)
                log(
                    INFO,
                    "secure aggregation: every client sent its key in the handshake; the peers' keys "
                    "(%d bytes) go with the first request",
                    self.key_agreement["key_agreement_bytes_per_client"],
                )
            arrays = self.initial_arrays() if self._resume is None else self._restore()
            self.broadcast = list(arrays)
        except Exception as exc:
            log(ERROR, "run stopped before round %d: %s", self.round_offset + 1, exc)
            raise
        # the clients as result.json lists them (their keys for the run are bytes, not recorded)
        listed = [{k: v for k, v in i.items() if not isinstance(v, bytes)} for i in self.client_info]
        self.recorder.start(listed)
        log(INFO, "run folder: %s", self.recorder.run_dir)
        return to_parameters(arrays)

    def _align_samples(self) -> None:
        """When the clients' data has sample IDs: align them (:func:`align_samples`), then ask
        every client for its properties again (now those of its aligned view)."""
        with_ids = [int(i.get("sample-ids", 0)) > 0 for i in self.client_info]
        if not any(with_ids):
            return
        if not all(with_ids):
            missing = ", ".join(
                f"partition {i['partition-id']} ({i['source']})"
                for i, has in zip(self.client_info, with_ids)
                if not has
            )
            raise FederationError(
                f"some SuperNodes' data has sample IDs and some has none: {missing} has no ID column (set "
                "run config 'sample-id', or node config 'sample-id' on every SuperNode, to the column or key "
                "holding the IDs)"
            )
        self.alignment = align_samples(self.clients, self.cfg, self.client_info)
        log(
            INFO,
            "sample-ID alignment: %d samples held by every party (IDs per party: %s; %.2f s)",
            self.alignment["num_common"],
            self.alignment["num_ids"],
            self.alignment["seconds"],
        )
        timeout = float(self.cfg["round-timeout-s"])
        self.client_info = ask_all(
            self.clients, lambda p: {"stage": "handshake"}, timeout, "handshake after the alignment"
        )
        self._check_handshake()

    def _check_handshake(self) -> None:
        """Every handshake reply holds exactly the declared properties (their own sizes)."""
        stage = self.protocol.stage("handshake")
        for partition, info in enumerate(self.client_info):
            n, d = int(info.get("num-samples", 0)), int(info.get("num-features", 0))
            try:
                check_reply(stage, Sizes(self.cfg, n, d, n), [], info)
            except ProtocolError as exc:
                raise FederationError(
                    f"handshake: partition {partition} sent an invalid reply: {exc}"
                ) from exc

    # ------------------------------------------------------------------------------- resume
    def resume_from(self, checkpoint: dict[str, Any]) -> None:
        """Continue a run from :func:`~fedmf_app.federated.checkpoint.load_checkpoint`'s output.

        The handshake (and key agreement) run again; then, instead of :meth:`initial_arrays`,
        the attributes in :attr:`checkpoint_attrs` are restored and the broadcast of the last
        finished round ``s`` is sent; Flower's rounds ``1, 2, ...`` become rounds
        ``s + 1, s + 2, ...``.

        Parameters
        ----------
        checkpoint : dict
            ``round``, ``broadcast`` (list of ndarray) and ``state`` (attribute -> value).
        """
        self._resume = checkpoint
        self.round_offset = int(checkpoint["round"])

    def _restore(self) -> list[np.ndarray]:
        self._check_resumed_views()
        for name, value in self._resume["state"].items():
            setattr(self, name, value)
        self.after_restore()
        log(INFO, "resumed after round %d", self.round_offset)
        return list(self._resume["broadcast"])

    def _check_resumed_views(self) -> None:
        """A resumed run's clients must hold the views the run had (samples and features per
        partition, from ``result.json``'s ``clients``); refuse, naming the partition, otherwise."""
        before = {int(c["partition-id"]): c for c in self.recorder.data.get("clients", [])}
        for info in self.client_info:
            p = int(info["partition-id"])
            was = before.get(p)
            if was is None:
                continue
            now = (int(info["num-samples"]), int(info["num-features"]))
            then = (int(was["num-samples"]), int(was["num-features"]))
            if now != then:
                raise FederationError(
                    f"resume: partition {p}'s view is {now[0]} x {now[1]} (samples x features), but the run "
                    f"it continues had {then[0]} x {then[1]} ({was.get('source', '?')}): give each SuperNode "
                    "the data file it had (node config data-file)"
                )

    def after_restore(self) -> None:
        """Rebuild what the checkpoint does not hold (default: nothing)."""

    @classmethod
    def checkpointed(cls) -> tuple[str, ...]:
        """The attributes a checkpoint holds: :attr:`checkpoint_attrs`, the kept rounds' labels, the
        ground truth the clients sent and their processes' peak memory so far."""
        return (*cls.checkpoint_attrs, "label_history", "truth", "truth_partition", "client_peak_rss_mb")

    def _write_checkpoint(self, server_round: int, arrays: list[np.ndarray]) -> None:
        state = {name: getattr(self, name) for name in self.checkpointed()}
        write_checkpoint(self.recorder.run_dir, server_round, arrays, state, self.checkpoint_types)

    def configure_fit(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[ClientProxy, FitIns]]:
        """Every client gets the same broadcast."""
        self._round_start = time.perf_counter()
        self._broadcast_bytes = sum(len(t) for t in parameters.tensors)
        server_round += self.round_offset
        stage = self.protocol.round_stage(server_round)
        ins = FitIns(
            parameters=parameters, config=self.stage_config(stage.name, **{"server-round": server_round})
        )
        return [(proxy, ins) for proxy in self.clients]

    def aggregate_fit(
        self,
        server_round: int,
        results: list[tuple[ClientProxy, FitRes]],
        failures: list[tuple[ClientProxy, FitRes] | BaseException],
    ) -> tuple[Parameters | None, dict[str, Scalar]]:
        """Decode the replies, aggregate, record and log the round."""
        server_round += self.round_offset
        upload_bytes = max((sum(len(t) for t in res.parameters.tensors) for _, res in results), default=0)
        replies = self._decode(server_round, results, failures)
        self._keep_truth_and_memory(replies)
        started = time.perf_counter()
        self._round_costs = {}
        try:
            arrays, record = self.aggregate(server_round, replies)
        except Exception as exc:
            self.recorder.fail(f"round {server_round}: server aggregation failed: {exc}")
            raise
        try:
            check_finite_state(arrays, record)
        except ReplyError as exc:
            self._stop(
                f"round {server_round}: the server's update from the replies is not finite ({exc}); "
                "the run stops (the checkpoint keeps the last good round)"
            )
        now = time.perf_counter()
        kernel = [float(r.metrics["kernel_s"]) for r in replies]
        record = {
            "round": server_round,
            "wall_s": now - self._round_start,
            "elapsed_s": now - self._run_start,
            "server_s": now - started,
            "client_kernel_s_max": max(kernel),
            "client_kernel_s_sum": sum(kernel),
            "bytes_down_per_client": self._broadcast_bytes,
            "bytes_up_per_client_max": upload_bytes,
            **record,
            **self._round_costs,
        }
        if (labels := self.round_labels()) is not None:
            self.label_history[server_round] = np.asarray(labels, dtype=np.int32)
        self.recorder.record_round(record)
        try:
            self._write_checkpoint(server_round, arrays)
        except (OSError, TypeError) as exc:
            self.recorder.fail(f"round {server_round}: writing the checkpoint failed: {exc}")
            raise
        self._log_progress(record)
        if server_round < self.num_rounds and (reason := self.converged(record)) is not None:
            self.last_round = server_round
            log(INFO, "[%s] converged after round %d: %s", self.cfg["algorithm"], server_round, reason)
        if server_round == self.last_round:
            self._summary = self.summary()
            if self.client_peak_rss_mb is not None:
                self._summary["peak_rss_mb_client_max"] = self.client_peak_rss_mb
            if self.last_round < self.num_rounds:
                self._summary["stopped_early"] = {"round": self.last_round, "reason": reason}
            self._summary["wall_s"] = now - self._run_start
            if self.alignment:
                self._summary["alignment"] = self.alignment
            try:
                labels = self.final_labels()
            except Exception as exc:
                self.recorder.fail(f"final clustering failed: {exc}")
                raise
            if labels is None:
                self._complete()
            else:
                self._final = {
                    "labels": [int(c) for c in labels],
                    "num_clusters": int(len(np.unique(labels))),
                }
                if self.alignment:
                    self._final["sample_order"] = (
                        "the samples every party holds, by sample ID (the IDs stay with the clients: "
                        "each writes id,row,cluster to its node config labels-file)"
                    )
                else:
                    held = self.held_truth()
                    self._score_final([] if held is None else [held])
                    self._complete()
        self.broadcast = list(arrays)
        return to_parameters(arrays), {}

    def configure_evaluate(
        self, server_round: int, parameters: Parameters, client_manager: ClientManager
    ) -> list[tuple[ClientProxy, EvaluateIns]]:
        """After the last round of a run with a sample-ID alignment only: send every client the final
        labels (which it maps to its own IDs); the replies bring the ground truth again (to score)."""
        server_round += self.round_offset
        if not self.alignment or server_round != self.last_round or self._final is None:
            return []
        parameters = ndarrays_to_parameters([np.asarray(self._final["labels"], dtype=np.int64)])
        ins = EvaluateIns(
            parameters=parameters, config=self.stage_config("evaluate", **{"server-round": server_round})
        )
        return [(proxy, ins) for proxy in self.clients]

    def aggregate_evaluate(
        self,
        server_round: int,
        results: list[tuple[ClientProxy, EvaluateRes]],
        failures: list[tuple[ClientProxy, EvaluateRes] | BaseException],
    ) -> tuple[float | None, dict[str, Scalar]]:
        """Score the final clustering against the first partition's ground truth (of these replies, or
        the one held since the run's first replies when none came); finish the run."""
        server_round += self.round_offset
        if server_round != self.last_round or self._final is None:
            return None, {}
        partition_of = {p.cid: i for i, p in enumerate(self.clients)}
        sent = (
            (partition_of[proxy.cid], _sent_truth(res.metrics))
            for proxy, res in results
            if res.status.code == Code.OK and proxy.cid in partition_of
        )
        truths = sorted((partition, truth) for partition, truth in sent if truth is not None)
        if failures:
            log(WARNING, "%d client(s) sent no ground truth for the final scores", len(failures))
        self._keep_peak_memory(res.metrics for _, res in results)
        if self.client_peak_rss_mb is not None:
            self._summary["peak_rss_mb_client_max"] = self.client_peak_rss_mb
        held = self.held_truth()
        self._score_final(truths or ([] if held is None else [held]))
        self._complete()
        return None, {}

    def evaluate(self, server_round: int, parameters: Parameters) -> tuple[float, dict[str, Scalar]] | None:
        """No centralised evaluation."""
        return None

    # ---------------------------------------------------------------------------------- helpers
    def _keep_truth_and_memory(self, replies: list[ClientReply]) -> None:
        """Keep what a round's replies bring for the record: the largest ``peak_rss_mb`` so far
        (:attr:`client_peak_rss_mb`, which fmvc-imk's set-up starts) and, from round-1 replies with
        ``labels``, the first partition's ground truth (only to score, :meth:`held_truth`)."""
        self._keep_peak_memory(r.metrics for r in replies)
        if self.truth is not None:
            return
        sent = ((r.partition_id, _sent_truth(r.metrics)) for r in replies)
        truths = [(partition, truth) for partition, truth in sent if truth is not None]
        if truths:
            self.truth_partition, self.truth = truths[0]
            self._warn_disagreeing(truths)

    def _keep_peak_memory(self, metrics: Iterable[Mapping[str, Scalar]]) -> None:
        """Raise :attr:`client_peak_rss_mb` to the largest ``peak_rss_mb`` among ``metrics``."""
        rss = [float(m["peak_rss_mb"]) for m in metrics if "peak_rss_mb" in m]
        if self.client_peak_rss_mb is not None:
            rss.append(self.client_peak_rss_mb)
        if rss:
            self.client_peak_rss_mb = max(rss)

    def _warn_disagreeing(self, truths: list[tuple[int, np.ndarray]]) -> None:
        """Warn about partitions whose ground truth differs from the first of ``truths``."""
        partition, truth = truths[0]
        disagree = [p for p, t in truths[1:] if t.shape != truth.shape or np.any(t != truth)]
        if disagree:
            log(
                WARNING,
                "partitions %s hold ground truth that differs from partition %d's; "
                "scored against partition %d",
                disagree,
                partition,
                partition,
            )

    def _score_final(self, truths: list[tuple[int, np.ndarray]]) -> None:
        """Score the final labels (and the kept rounds' labels) against the first of ``truths``
        (``(partition, labels)`` in partition order); warn about partitions whose truth differs."""
        if not truths:
            return
        predicted = np.asarray(self._final["labels"])
        partition, truth = truths[0]
        if truth.shape != predicted.shape:
            self._final["error"] = (
                f"partition {partition}'s ground truth has {truth.size} labels for {predicted.size} samples"
            )
            return
        self._final.update(clustering_scores(truth, predicted))
        self._final["ground_truth_partition"] = partition
        self._score_rounds(truth)
        self._warn_disagreeing(truths)

    def _score_rounds(self, truth: np.ndarray) -> None:
        """Add each kept round's scores against ``truth`` to its record (:meth:`round_labels`)."""
        for record in self.recorder.data["rounds"]:
            labels = self.label_history.get(int(record["round"]))
            if labels is not None and labels.shape == truth.shape:
                record.update(clustering_scores(truth, labels))

    def _complete(self) -> None:
        self.done = True
        self._summary["plots"] = self.write_plots()
        self._summary["peak_rss_mb_server"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        self.recorder.finish(self._summary, self._final)
        final = self._final or {}
        scores = "  ".join(f"{k}={final[k]:.4f}" for k in ("acc", "nmi", "purity", "ari") if k in final)
        log(INFO, "run completed%s; results in %s", f" ({scores})" if scores else "", self.recorder.path)

    def _decode(
        self,
        server_round: int,
        results: list[tuple[ClientProxy, FitRes]],
        failures: list[tuple[ClientProxy, FitRes] | BaseException],
    ) -> list[ClientReply]:
        """The replies, decoded, in partition order (each reply's bytes freed once decoded); stops the
        run when one is missing or invalid."""
        lost = [f for f in failures if isinstance(f, SuperLinkLost)]
        if lost:
            raise lost[0]  # not the clients' failure: the ServerApp marks the run interrupted
        partition_of = {p.cid: i for i, p in enumerate(self.clients)}
        replies: list[ClientReply] = []
        reasons = [str(f) if isinstance(f, BaseException) else f[1].status.message for f in failures]
        for proxy, res in results:
            if proxy.cid not in partition_of:
                reasons.append(f"reply from unknown node {proxy.cid}")
            elif res.status.code != Code.OK:
                reasons.append(f"partition {partition_of[proxy.cid]}: {res.status.message}")
            else:
                replies.append(
                    ClientReply(
                        partition_id=partition_of[proxy.cid],
                        arrays=parameters_to_ndarrays(res.parameters),
                        metrics=dict(res.metrics),
                    )
                )
                # the reply's bytes go once decoded: Flower's Server keeps a round's results until
                # the next round's are in (fmvc-iai at N = 100,000: 200 MB per client and round)
                res.parameters.tensors.clear()
        replies.sort(key=lambda r: r.partition_id)
        missing = sorted(set(range(len(self.clients))) - {r.partition_id for r in replies})
        if missing or reasons:
            advice = timeout_advice(reasons, self.shared.round_timeout_s, f"partition(s) {missing}")
            self._stop(
                f"round {server_round}: no valid reply from partition(s) {missing} "
                f"(every view is needed in every round){': ' + advice if advice else ''}. "
                f"Errors: {'; '.join(reasons) or 'none reported'}"
            )
        self.check_replies(
            self.protocol.round_stage(server_round),
            [(r.arrays, r.metrics) for r in replies],
            self.broadcast,
            f"round {server_round}",
            server_round,
        )
        return replies

    def _stop(self, message: str) -> NoReturn:
        """Mark the run failed with ``message`` and raise :class:`FederationError`."""
        self.recorder.fail(message)
        log(ERROR, "%s", message)
        raise FederationError(message)

    def _log_progress(self, record: dict[str, Any]) -> None:
        shown = "  ".join(
            f"{key}={record[key]:.3e}" for key in self.progress_keys if record.get(key) is not None
        )
        walls = [r["wall_s"] for r in self.recorder.data["rounds"][self.round_offset :]]
        log(
            INFO,
            "[%s] round %d/%d  %s  (%.2f s%s)",
            self.cfg["algorithm"],
            record["round"],
            self.num_rounds,
            shown,
            record["wall_s"],
            time_left(walls, record["round"], self.num_rounds),
        )
