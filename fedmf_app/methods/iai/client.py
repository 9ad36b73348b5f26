"""FMVC-IAI client (paper C): Flower plumbing around :mod:`fedmf_app.methods.iai.client_updates`.

Messages (every array is a plain ndarray, the sparse ones as index/value pairs; declared in
:mod:`fedmf_app.methods.iai.protocol`):

* round 1 (stage ``setup``), down: nothing (K is the run's fact ``clusters``); up: ``[neighbour indices
  (n, L) int32]`` of the client's observed rows, nearest first (L = ``iai.rank-depth`` for the rank-fused
  start graph, else k).
* round s >= 2 (stage ``round``), down: ``[A_g neighbours (n, k) int32, Y (n,) int64, P (n, K) or (0, K),
  anchors (r,) int64]``; up: ``[E^(m) (n, K) (with the anchor-distance rules, the default
  ``iai.pseudo-labels = rank-spectral`` among them: the anchor distances D^(m) (n, r))]``, then with
  ``iai.graph-update = rank`` (the default) ``[code neighbours (n, L) int32]`` and, when the server fuses
  anchor graphs (``fused``, ``fused-start``, ``anchor-spectral``), ``[G^(m) column indices (n, s) int32,
  G^(m) values (n, s)]``, and the scalar ``emd`` as a metric. With run config ``secure-aggregation =
  true``, E^(m) and the three losses travel as one masked vector (the server needs only their sums); the
  neighbour lists, G^(m) and ``emd`` stay in the clear (the EMD-weighted fusion needs each).

The autoencoder (trained once, in round 1), the graph autoencoder's weights and, with the
rank-fused graphs, the set-up round's neighbour lists (the observed rows' lists of every training
round, whose codes do not change) stay in ``context.state``; nothing else is kept. The client
reads only the rows of its view that the run's missing-view mask marks observed. torch and the
networks are imported by a training stage only (:meth:`FMVCIAIClient.fit_stage`): a deployed
SuperNode runs every message in a fresh process, and the handshake's then starts without them
(about 4 s of CPU less). Its kernels run on one thread
(torch's and every native pool: :func:`~fedmf_app.common.threads.single_threaded`), so that its
numbers do not depend on the machine's cores or on the simulation's ``client-resources-num-cpus``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from logging import WARNING
from typing import Any

import numpy as np
from flwr.common import Scalar
from flwr.common.logger import log

from fedmf_app.common.threads import single_threaded
from fedmf_app.federated.client import ViewClient
from fedmf_app.federated.protocol import Stage
from fedmf_app.federated.saved_state import load_state, save_state
from fedmf_app.methods.iai.options import FAMILY
from fedmf_app.methods.iai.params import iai_params
from fedmf_app.methods.iai.protocol import PROTOCOL

__all__ = ["CLIENTS", "FMVCIAIClient"]

_NAME = "fmvc-iai"
#: State key of the set-up round's neighbour lists (kept when ``params.keeps_setup_lists``).
_SETUP_LISTS = "setup-lists"


def _device(requested: str) -> str:
    """The run config's device, or the CPU when CUDA is asked for but absent."""
    import torch

    if requested == "cuda" and not torch.cuda.is_available():
        log(WARNING, "run config device = 'cuda' but no GPU is present: training on the CPU")
        return "cpu"
    return requested


class FMVCIAIClient(ViewClient):
    """One view of FMVC-IAI.

    Parameters
    ----------
    context, cfg, partition_id, num_partitions, view
        See :class:`~fedmf_app.federated.client.ViewClient`.
    """

    family = FAMILY
    protocol = PROTOCOL

    #: fmvc-iai imputes a missing row from the view's own observed neighbours (private), not
    #: from public values (what a sum then shows: docs/privacy.md).
    fills_missing_rows = False

    def handshake_properties(self) -> dict[str, Scalar]:
        """Handshake, plus how many of this view's rows are observed."""
        return {**super().handshake_properties(), "num-observed": int(self.observed.sum())}

    def fit_stage(
        self, stage: Stage, parameters: list[np.ndarray], config: dict[str, Scalar]
    ) -> tuple[list[np.ndarray], int, dict[str, Scalar]]:
        """Round 1 (stage ``setup``): autoencoder and neighbour lists; later rounds (stage
        ``round``): one training round."""
        import torch

        from fedmf_app.methods.iai.client_updates import client_round, client_seed, client_setup

        torch.set_num_threads(1)
        seed = client_seed(self.shared.seed, self.partition_id)
        server_round = int(config["server-round"])
        state = load_state(self.context, self.cfg, _NAME, server_round)
        started = time.perf_counter()
        x = self.view.features
        k = self.sizes().fact("clusters")
        if server_round == 1:
            params = iai_params(self.cfg, num_clusters=k, num_samples=x.shape[0])
            with single_threaded():
                neighbours, ae_state = client_setup(x, self.observed, params, seed)
            kept = {f"ae.{k}": v for k, v in ae_state.items()}
            if params.keeps_setup_lists:
                kept[_SETUP_LISTS] = neighbours
            save_state(self.context, self.cfg, _NAME, server_round, kept)
            values = {
                "neighbour lists": neighbours,
                "kernel_s": time.perf_counter() - started,
                **self.round_record(server_round),
            }
            arrays, metrics = self.reply(stage, values, parameters, server_round)
            return arrays, int(self.observed.sum()), metrics
        neighbours, labels, target, anchors = parameters
        params = iai_params(self.cfg, num_clusters=target.shape[1], num_samples=x.shape[0])
        params = replace(params, device=_device(params.device))
        ae_state = {k[3:]: v for k, v in state.items() if k.startswith("ae.")}
        gae_state = {k[4:]: v for k, v in state.items() if k.startswith("gae.")} or None
        setup_lists = state.get(_SETUP_LISTS)
        with single_threaded():
            upload = client_round(
                x,
                self.observed,
                ae_state,
                gae_state,
                neighbours,
                labels,
                target if target.shape[0] else None,
                anchors,
                params,
                seed + server_round,
                setup_lists,
            )
        save_state(
            self.context,
            self.cfg,
            _NAME,
            server_round,
            {
                **{f"ae.{k}": v for k, v in ae_state.items()},
                **{f"gae.{k}": v for k, v in upload.gae_state.items()},
                **({} if setup_lists is None else {_SETUP_LISTS: setup_lists}),
            },
        )
        values: dict[str, Any] = {
            "distances": upload.distances,
            "kernel_s": time.perf_counter() - started,
            "loss_attribute": upload.losses.attribute,
            "loss_structure": upload.losses.structure,
            "loss_clustering": upload.losses.clustering,
            **self.round_record(server_round),
        }
        if upload.emd is not None:
            values["emd"] = upload.emd
        if upload.code_neighbours is not None:
            values["code neighbour lists"] = upload.code_neighbours
        if upload.anchor_indices is not None:
            values.update({"anchor indices": upload.anchor_indices, "anchor values": upload.anchor_values})
        arrays, metrics = self.reply(stage, values, parameters, server_round)
        return arrays, int(self.observed.sum()), metrics


#: The family's NumPyClient per run-config ``algorithm`` (read by :func:`fedmf_app.registry.client_class`).
CLIENTS: dict[str, type[FMVCIAIClient]] = {"fmvc-iai": FMVCIAIClient}
