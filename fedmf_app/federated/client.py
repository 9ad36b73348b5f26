"""Common client-side Flower plumbing (no math here).

A client holds one view and answers the server's handshake with its properties. Anything it must
remember between rounds goes into ``context.state`` (Flower rebuilds the client object for every
message, in a fresh process in a deployment), through :func:`load_state` / :func:`save_state`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import resource
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from flwr.client import Client, NumPyClient
from flwr.common import ConfigRecord, Context, Scalar

from fedmf_app.data import ClientView, load_client_view
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.data.preprocess import is_sparse_nonnegative
from fedmf_app.data.sample_ids import sample_id_key
from fedmf_app.federated.alignment import aligned_rows, answer_psi_stage
from fedmf_app.federated.node_policy import check_node_policy
from fedmf_app.federated.npy import array_record
from fedmf_app.federated.secure_sum_flower import SecureAggregationError, answer_key_stage
from fedmf_app.options import Family
from fedmf_app.options.params import shared_params

__all__ = [
    "NOT_IDENTIFYING",
    "ClientStateError",
    "ViewClient",
    "load_state",
    "peak_rss_mb",
    "run_key",
    "save_state",
    "state_file",
    "write_labels_file",
]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class ClientStateError(RuntimeError):
    """The client's stored state does not match the round it is asked to run."""


def load_state(context: Context, cfg: dict[str, Any], name: str, server_round: int) -> dict[str, np.ndarray]:
    """Arrays stored by this client after round ``server_round - 1`` (empty in round 1).

    Parameters
    ----------
    context : Context
    cfg : dict
        Validated run config (``context.run_config``'s).
    name : str
        Namespace (the algorithm).
    server_round : int
        Round about to run.

    Returns
    -------
    dict of ndarray

    Raises
    ------
    ClientStateError
        When the stored state is not from the previous round (a missed round, or a SuperNode that
        restarted and lost its state): the algorithms here need every client in every round; or
        when the node's data has sample IDs but it holds no alignment (it would train on rows in
        its file's order).

    Notes
    -----
    With a state folder (node config ``state-dir``, else run config ``client-state-dir``) the
    state is also kept on disk (:func:`save_state`), and a client whose ``context.state`` is empty
    after round 1 (a restarted SuperNode, a resumed run) reads it from there.
    """
    pid = context.node_config.get("partition-id")
    if sample_id_key(context.run_config, context.node_config) and aligned_rows(context) is None:
        raise ClientStateError(
            f"partition {pid}: asked for round {server_round} but holds no sample-ID alignment (a "
            "SuperNode that restarted after the alignment loses it); start the run again"
        )
    stored = context.state.config_records.get(f"{name}.meta")
    if stored is None and server_round > 1:
        stored = _load_from_disk(context, cfg, name, server_round - 1)
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
    context: Context, cfg: dict[str, Any], name: str, server_round: int, arrays: dict[str, np.ndarray]
) -> None:
    """Store this client's arrays after round ``server_round``.

    Parameters
    ----------
    context : Context
    cfg : dict
        Validated run config (``context.run_config``'s).
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
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        old = state_file(context, cfg, name, server_round - 2)
        if old is not None and old.exists():
            old.unlink()


def state_file(context: Context, cfg: dict[str, Any], name: str, server_round: int) -> Path | None:
    """Where this client keeps its state after ``server_round`` on disk (``None``: nowhere).

    ``<state folder>/<run key>/<name>-p<partition>-r<round>.npz``: the folder is node config
    ``state-dir`` or else run config ``client-state-dir`` (empty: no file); the run key is a
    digest of the run config without the keys that may change on resume (:func:`run_key`). The
    last two rounds are kept.

    Parameters
    ----------
    context : Context
    cfg : dict
        Validated run config (``context.run_config``'s).
    name : str
    server_round : int

    Returns
    -------
    Path or None
    """
    folder = context.node_config.get("state-dir") or context.run_config.get("client-state-dir")
    if not folder:
        return None
    pid = context.node_config.get("partition-id")
    key = run_key(cfg)
    return Path(str(folder)).expanduser() / key / f"{name}-p{pid}-r{server_round}.npz"


#: Run-config keys that do not identify a run (a resumed run may set them differently).
NOT_IDENTIFYING = (
    "resume-from",
    "out-dir",
    "run-name",
    "round-timeout-s",
    "connect-timeout-s",
    "reply-poll-s",
)


def run_key(cfg: dict[str, Any]) -> str:
    """16 hex digits identifying a run by its validated run config (bar :data:`NOT_IDENTIFYING`)."""
    kept = {k: v for k, v in sorted(cfg.items()) if k not in NOT_IDENTIFYING}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def _load_from_disk(
    context: Context, cfg: dict[str, Any], name: str, server_round: int
) -> ConfigRecord | None:
    path = state_file(context, cfg, name, server_round)
    if path is None or not path.exists():
        return None
    with np.load(path, allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    context.state.array_records[f"{name}.arrays"] = array_record(arrays)
    meta = ConfigRecord({"round": server_round})
    context.state.config_records[f"{name}.meta"] = meta
    return meta


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
        The shared keys of ``cfg``, typed (:func:`~fedmf_app.options.params.shared_params`).
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

    #: The method family of this client (its ``options.py``'s ``FAMILY``): what the client needs
    #: from the data layer (:meth:`~fedmf_app.options.Family.data_needs`), for a view reloaded
    #: after a sample-ID alignment.
    family: ClassVar[Family]

    #: Whether this method fills the rows its view misses with public values (zeros, or the mean
    #: of its observed rows: every method but fmvc-iai). Its contribution to a summed row it does not
    #: observe then follows from what the server knows (up to one offset per view with the mean), so
    #: a masked sum over a sample that one view alone observes releases that view's row.
    fills_missing_rows: bool = True

    def masks_uploads(self) -> bool:
        """Whether this client's uploads are masked sums (default: ``secure-aggregation``)."""
        return bool(self.cfg["secure-aggregation"])

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
        if not (self.fills_missing_rows and cfg["missing-rate"] > 0 and self.masks_uploads()):
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

    def to_client(self) -> Client:
        """This client as Flower's ``Client``, for one message, once this node's policy accepts the
        run (:func:`~fedmf_app.federated.node_policy.check_node_policy`) and no masked sum would
        release one client's row (:meth:`check_sum_contributors`); Flower and the in-process
        federation call it for every message.

        Raises
        ------
        fedmf_app.federated.node_policy.NodePolicyError
            When the run asks less than the node config's policy.
        SecureAggregationError
            From :meth:`check_sum_contributors`.
        """
        check_node_policy(
            self.cfg,
            self.context.node_config,
            f"SuperNode {self.context.node_id} (partition {self.partition_id})",
            aligns=bool(sample_id_key(self.context.run_config, self.context.node_config)),
        )
        self.check_sum_contributors()
        return super().to_client()

    def get_properties(self, config: dict[str, Scalar]) -> dict[str, Scalar]:
        """Handshake: who this client is and the shape of its view (``sample-ids``: how many IDs
        its data has, 0 for none; ``sparse-counts``: 1 when the view looks like counts or bag of
        words, :func:`~fedmf_app.data.preprocess.is_sparse_nonnegative`); or a secure-aggregation
        key stage (``secagg-stage`` in ``config``:
        :func:`~fedmf_app.federated.secure_sum_flower.answer_key_stage`); or a sample-ID alignment
        stage (``psi-stage``:
        :func:`~fedmf_app.federated.alignment.answer_psi_stage`; after its last stage this
        client's view holds only the aligned rows)."""
        if "secagg-stage" in config:
            return answer_key_stage(self.context, self.cfg, self.partition_id, config)
        if "psi-stage" in config:
            answer = answer_psi_stage(self.context, self.cfg, self.partition_id, self.view, config)
            if config["psi-stage"] == "keep":
                self.view = load_client_view(
                    self.cfg,
                    self.partition_id,
                    self.context.node_config,
                    rows=aligned_rows(self.context),
                    needs=self.family.data_needs(self.cfg),
                )
            return answer
        n, d = self.view.features.shape
        props: dict[str, Scalar] = {
            "partition-id": self.partition_id,
            "num-samples": int(n),
            "num-features": int(d),
            "source": self.view.source,
            "num-classes": 0 if self.view.labels is None else int(self.view.labels.max()) + 1,
            "sample-ids": 0 if self.view.ids is None else int(self.view.ids.size),
            "sparse-counts": int(is_sparse_nonnegative(self.view.features)),
        }
        if self.num_partitions is not None:
            props["num-partitions"] = self.num_partitions
        return props

    def evaluate(
        self, parameters: list[np.ndarray], config: dict[str, Scalar]
    ) -> tuple[float, int, dict[str, Scalar]]:
        """End of run: hand the ground truth to the server, only to score the final clustering.

        After a sample-ID alignment the server sends the final labels (``parameters[0]``, one per
        aligned sample); a node with node config ``labels-file`` writes them there as CSV
        (``id,row,cluster``: its own IDs, its file's rows), :func:`write_labels_file`.

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
        if parameters and self.view.ids is not None and self.view.rows is not None:
            target = self.context.node_config.get("labels-file")
            if target:
                write_labels_file(Path(str(target)), self.view, parameters[0])
        labels = b"" if self.view.labels is None else np.asarray(self.view.labels, "<i8").tobytes()
        return (
            0.0,
            int(self.view.features.shape[0]),
            {"partition-id": self.partition_id, "labels": labels, "peak_rss_mb": peak_rss_mb()},
        )


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
