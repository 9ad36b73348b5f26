"""Client side of paper B's FMVC-IMK (``algorithm = "fmvc-imk"``): a Flower NumPyClient.

Messages (the server drives them, see :mod:`fedmf_app.methods.imk.strategy`; declared in
:mod:`fedmf_app.methods.imk.protocol`):

* before these, the run's one key agreement (:mod:`fedmf_app.federated.secure_sum_flower`, signed
  if asked): fmvc-imk always masks its graph, so it runs whatever ``secure-aggregation`` says;
* ``fit`` stage ``setup`` (once, before round 1): build this view's graph (its anchor
  graph on the anchor samples the message names, which must be the ones the run seed draws, or its
  kNN graph; with ``imk.missing-graph =
  "observed"`` on the rows the run's missing-view mask says it observes), upload it densely as one
  masked fixed-point vector (:func:`~fedmf_app.federated.secure_sum_flower.masked_upload`, round 0,
  tag ``"graph"``), the initial :math:`H^{(m)}`, when the view has labels, the labels (used by
  the server for scoring only, every round and at the end: no end-of-run exchange follows unless a
  sample-ID alignment needs the final labels sent back), which start it took and its process's
  peak memory;
* ``fit`` stage ``round`` in round ``t``: from the broadcast :math:`H`, one
  :func:`~fedmf_app.methods.imk.client_updates.client_round`; upload :math:`H^{(m)}` and its scalars.

The upload: :math:`H^{(m)}`, :math:`\\|R^{(m)}\\|_F`, the orthogonality term and
:math:`\\|H^{(m)}\\|_F^2`, the server needing only their sums, and in the clear :math:`\\alpha^{(m)}`.
With run config ``secure-aggregation = true`` the four go as one masked vector and
:math:`\\alpha^{(m)}` is not sent (the protocol declares what each mode sends).

The client computes on one thread (the set-up on one thread of every native pool, the rounds on
one BLAS thread: :mod:`fedmf_app.common.threads`), so that its numbers do not depend on the
machine's cores or on the simulation's ``client-resources-num-cpus``: with more threads a BLAS sum
runs in another order, and a view with duplicate rows (BBCSport's) then gets another kNN graph.

Private state in ``context.state`` (never sent): :math:`F^{(m)}, W^{(m)}, H^{(m)}, \\Phi^{(m)},
\\alpha^{(m)}`, the pair keys and the prepared view (standardised and scaled once, in the setup
message, and reused by every round's message).
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

import numpy as np
from flwr.common import ArrayRecord, ConfigRecord, NDArrays, Scalar

from fedmf_app.common.secure_sum_math import CHECK_WORDS, matrix_values, upper_values
from fedmf_app.common.sparse import issparse
from fedmf_app.common.threads import one_blas_thread, single_threaded
from fedmf_app.federated.client import ViewClient, peak_rss_mb
from fedmf_app.federated.npy import array_record
from fedmf_app.federated.protocol import ProtocolError, Stage
from fedmf_app.federated.saved_state import load_state, run_key, save_state
from fedmf_app.methods.imk.client_updates import (
    ClientState,
    client_round,
    init_client,
    preprocess_view,
    resolve_start,
    view_anchor_graph,
    view_knn_graph,
)
from fedmf_app.methods.imk.model import View, anchor_indices, client_rng
from fedmf_app.methods.imk.options import FAMILY
from fedmf_app.methods.imk.params import IMKOptions, imk_options, resolve_graph
from fedmf_app.methods.imk.protocol import PROTOCOL

__all__ = ["CLIENTS", "FMVCIMKClient"]

_NAME = "fmvc-imk"
#: ``context.state`` records of the prepared view: its arrays, and the key it was prepared for.
_VIEW = f"{_NAME}.view"
_VIEW_KEY = f"{_NAME}.view-key"


def _pack(state: ClientState) -> dict[str, np.ndarray]:
    arrays = {"f": state.f, "w": state.w, "h": state.h, "phi": state.phi, "alpha": np.array([state.alpha])}
    if state.h_relaxed is not None and state.h_relaxed is not state.h:
        arrays["h_relaxed"] = state.h_relaxed
    return arrays


def _unpack(arrays: dict[str, np.ndarray]) -> ClientState:
    return ClientState(
        f=arrays["f"],
        w=arrays["w"],
        h=arrays["h"],
        phi=arrays["phi"],
        alpha=float(arrays["alpha"][0]),
        h_relaxed=arrays.get("h_relaxed"),
    )


def _view_key(cfg: dict[str, Any], features: View) -> str:
    """What the prepared view depends on: the run (its config, :func:`run_key`) and the view's shape
    (a view reloaded after a sample-ID alignment has other rows)."""
    return f"{run_key(cfg)}-{features.shape[0]}x{features.shape[1]}"


def _pack_view(x: View) -> ArrayRecord:
    """The prepared view as an ``ArrayRecord`` (a CSR view as its three arrays and its shape)."""
    if issparse(x):
        parts = {"data": x.data, "indices": x.indices, "indptr": x.indptr, "shape": np.array(x.shape)}
    else:
        parts = {"x": x}
    return array_record(parts)


def _unpack_view(record: ArrayRecord) -> View:
    """The inverse of :func:`_pack_view`."""
    if "x" in record:
        return record["x"].numpy()
    import scipy.sparse as sp

    parts = {key: record[key].numpy() for key in ("data", "indices", "indptr", "shape")}
    return sp.csr_matrix((parts["data"], parts["indices"], parts["indptr"]), shape=tuple(parts["shape"]))


class FMVCIMKClient(ViewClient):
    """One view of FMVC-IMK: its graph, its factors and its copy of the indicator."""

    family = FAMILY
    protocol = PROTOCOL

    @cached_property
    def options(self) -> IMKOptions:
        """The run's ``imk.*`` keys, typed (built once per message: Flower rebuilds the client)."""
        return imk_options(self.cfg)

    def _view(self) -> View:
        """This node's view as the method uses it (:func:`preprocess_view`), prepared once per run.

        The first fit message prepares it and keeps it in ``context.state``, under the key of the
        run config and the view's shape (:func:`_view_key`); every later message of the run reuses
        it instead of preparing it again.

        Returns
        -------
        ndarray or csr_matrix, shape (N, d), float64
        """
        key = _view_key(self.cfg, self.view.features)
        stored = self.context.state.config_records.get(_VIEW_KEY)
        if stored is not None and stored["key"] == key:
            return _unpack_view(self.context.state.array_records[_VIEW])
        x = preprocess_view(self.view.features, self.options.standardise, self.options.unit_norm)
        self.context.state.array_records[_VIEW] = _pack_view(x)
        self.context.state.config_records[_VIEW_KEY] = ConfigRecord({"key": key})
        return x

    @property
    def graph_rows(self) -> np.ndarray | None:
        """The rows this view's graph may link: its observed rows (the run's seeded mask, shape
        (n,), bool) under ``imk.missing-graph = "observed"``, else ``None`` (every row)."""
        return self.observed if self.options.missing_graph == "observed" else None

    def _graph_values(self, x: View, config: dict[str, Scalar]) -> np.ndarray:
        """This view's graph as the dense values of the secure sum (float64)."""
        observed = self.graph_rows
        if resolve_graph(self.options.graph, x.shape[0]) == "knn":
            try:
                similarity = view_knn_graph(x, self.options.neighbours, self.options.similarity, observed)
            except ValueError as exc:
                raise ValueError(f"partition {self.partition_id}: {exc}") from exc
            return upper_values(similarity)
        n = x.shape[0]
        anchors = np.frombuffer(bytes(config.get("anchors", b"")), dtype=np.int64)
        drawn = anchor_indices(self.shared.seed, n, self.options.anchors)
        if not np.array_equal(anchors, drawn):
            raise ProtocolError(
                f"partition {self.partition_id}: the setup message names {anchors.size} anchors that are "
                f"not the {drawn.size} the run seed draws; refused"
            )
        if anchors.size <= self.options.neighbours:
            raise ValueError(
                f"partition {self.partition_id}: the run has {anchors.size} anchors; 'imk.neighbours' + 1 "
                "are needed"
            )
        try:
            graph = view_anchor_graph(x, anchors, self.options.neighbours, observed)
        except ValueError as exc:
            raise ValueError(f"partition {self.partition_id}: {exc}") from exc
        return matrix_values(graph)

    def fit_stage(
        self, stage: Stage, parameters: NDArrays, config: dict[str, Scalar]
    ) -> tuple[NDArrays, int, dict[str, Any]]:
        """The set-up (stage ``setup``) or one training round (stage ``round``)."""
        started = time.perf_counter()
        if stage.name == "setup":
            return self._setup(stage, config, started)
        return self._round(stage, parameters, int(config["server-round"]), started)

    def _setup(
        self, stage: Stage, config: dict[str, Scalar], started: float
    ) -> tuple[NDArrays, int, dict[str, Any]]:
        k = self.sizes().fact("clusters")
        m = int(self.shared.num_clients)
        with single_threaded():  # the view's preparation, its graph's neighbour search, the start
            x = self._view()
            values = self._graph_values(x, config)
            start = resolve_start(self.options.start, x)
            state = init_client(
                x,
                k,
                k,
                m,
                self.options.client_init,
                self.options.steps,
                client_rng(self.shared.seed, self.partition_id),
                start,
            )
        self.context.state.array_records[f"{_NAME}.init"] = array_record(_pack(state))
        reply: dict[str, Any] = {
            "graph": values,
            "initial H^(m)": state.h,
            "upload_bytes": int((values.size + CHECK_WORDS) * 8),
            "start": start,
        }
        if self.view.labels is not None:
            reply["ground truth"] = np.asarray(self.view.labels, dtype=np.int64)
        del values
        reply["peak_rss_mb"] = peak_rss_mb()
        reply["kernel_s"] = time.perf_counter() - started
        arrays, metrics = self.reply(stage, reply, [], 0)
        return arrays, x.shape[0], metrics

    def _round(
        self, stage: Stage, parameters: NDArrays, server_round: int, started: float
    ) -> tuple[NDArrays, int, dict[str, Any]]:
        stored = load_state(self.context, self.cfg, _NAME, server_round)
        if server_round == 1:
            stored = {k: v.numpy() for k, v in self.context.state.array_records[f"{_NAME}.init"].items()}
        with one_blas_thread():
            x = self._view()
            state, stats = client_round(
                x, _unpack(stored), parameters[0], self.options.steps, first=server_round == 1
            )
        save_state(self.context, self.cfg, _NAME, server_round, _pack(state))
        values: dict[str, Any] = {
            "H^(m)": state.h,
            "residual": stats.residual,
            "ortho": stats.ortho,
            "h_squared_norm": np.sum(state.h**2),
            "alpha": stats.alpha,
            "kernel_s": time.perf_counter() - started,
        }
        arrays, metrics = self.reply(stage, values, parameters, server_round)
        return arrays, x.shape[0], metrics


#: The family's NumPyClient per run-config ``algorithm`` (read by :func:`fedmf_app.registry.client_class`).
CLIENTS: dict[str, type[FMVCIMKClient]] = {"fmvc-imk": FMVCIMKClient}
