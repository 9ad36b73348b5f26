"""Server side of FMVC-IAI (paper C, ``algorithm = "fmvc-iai"``): a Flower Strategy.

Round 1 is the set-up round: each client pre-trains its autoencoder and uploads the neighbour
lists of its observed rows (``n x L`` indices); the server builds A_g⁰, draws the shared anchors
and computes Y⁰. Rounds 2..``num-server-rounds`` are training rounds (so R =
``num-server-rounds`` - 1): the server receives E^(m) (or the anchor distances D^(m)), the
neighbour lists of the imputed codes (``iai.graph-update = rank``) and/or the row-sparse anchor
graph G^(m), and EMD_m, and broadcasts the global graph A_g (as ``n x k`` neighbour indices), the
pseudo-labels Y, the target P and the anchor indices. The math is in
:mod:`fedmf_app.methods.iai.server_updates`. The final clustering is the last Y. The run ends
before ``num-server-rounds`` once the pseudo-labels have settled: at most
``iai.stop-label-change`` of the samples changed label in each of the last ``iai.stop-patience``
training rounds (no client is contacted for the remaining rounds).

The server reads the E^(m) (with the anchor-distance rules, the default among them: the anchor
distances D^(m)) and the losses only as their sums (the global assignment needs nothing else);
with ``secure-aggregation = true`` those sums are all it receives. The neighbour lists, the anchor
graphs G^(m) and the EMD_m travel in the clear (the fusion weights each view by its EMD).
"""

from __future__ import annotations

from logging import INFO, WARNING
from pathlib import Path
from typing import Any

import numpy as np
from flwr.common.logger import log

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.common.stopping import settled
from fedmf_app.data.missing_views import views_dropped
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.strategy import ClientReply, FederationError, ViewFederationStrategy
from fedmf_app.methods.iai import server_updates as iai_server
from fedmf_app.methods.iai.params import GAEParams, IAIParams, iai_params
from fedmf_app.methods.iai.protocol import PROTOCOL
from fedmf_app.methods.iai.server_updates import ServerState

__all__ = ["STRATEGIES", "FMVCIAIStrategy"]


class FMVCIAIStrategy(ViewFederationStrategy):
    """Federated multi-view graph clustering with incomplete attribute imputation (server).

    Built from ``cfg`` and ``recorder`` as
    :class:`~fedmf_app.federated.strategy.ViewFederationStrategy` is.

    Attributes
    ----------
    state : ServerState or None
        The latest broadcast (A_g, Y, P, anchors); ``None`` before round 1's replies.
    """

    protocol = PROTOCOL
    progress_keys = ("emd_mean", "label_change", "components")
    later_imports = (
        *ViewFederationStrategy.later_imports,
        "scipy.sparse.linalg",
        "fedmf_app.methods.iai.plots",
    )
    checkpoint_attrs = ("num_clusters", "state", "params")
    checkpoint_types = (ServerState, IAIParams, GAEParams)

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.state: ServerState | None = None
        self.params: IAIParams | None = None

    def initial_arrays(self) -> list[np.ndarray]:
        """Nothing: round 1 is the clients' set-up round.

        Raises
        ------
        FederationError
            When the number of clusters is unknown, or the data cannot hold the missing views.
        """
        if self.num_clusters is None:
            raise FederationError(
                "fmvc-iai needs the number of clusters: set run config 'num-clusters', or give "
                "the clients ground-truth labels (their class count is used)"
            )
        n = int(self.client_info[0]["num-samples"])
        self.params = iai_params(self.cfg, self.num_clusters, num_samples=n)
        if self.params.anchors == n:
            log(
                INFO,
                "fmvc-iai: every one of the %d samples is an anchor (run config 'iai.anchors' >= %d)",
                n,
                n,
            )
        if self.shared.missing_rate > 0:
            try:
                views_dropped(len(self.client_info), self.shared.missing_views_dropped)
            except ValueError as exc:
                raise FederationError(str(exc)) from exc
        log(INFO, "fmvc-iai round 1, the set-up: each client trains its autoencoder, finds neighbours")
        return []

    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Round 1: set up A_g⁰, Y⁰ and the anchors; later: A_g, Y and P."""
        assert self.params is not None
        seed = int(self.shared.seed)
        record: dict[str, Any]
        if server_round == 1:
            self.state = iai_server.server_setup(
                [r.arrays[0] for r in replies], self.params, rng_for(seed, Stream.IAI_SERVER), seed
            )
            record = {"phase": "setup", "components": self.state.components}
        else:
            assert self.state is not None
            has_emd = all("emd" in r.metrics for r in replies)
            emd = [float(r.metrics["emd"]) for r in replies] if has_emd else None
            previous = self.state.labels
            sums = self.round_sums(server_round, replies)
            keys = ("loss_attribute", "loss_structure", "loss_clustering")
            losses = {key: sums[key] / len(replies) for key in keys}
            rank = self.params.graph_update == "rank"
            self.state, weights, info = iai_server.server_round(
                self.state,
                sums["distances"],
                [(r.arrays[-2], r.arrays[-1]) for r in replies] if self.params.uses_anchor_graphs else None,
                [r.arrays[1] for r in replies] if rank else None,
                emd,
                self.params,
                seed + server_round,
            )
            record = {
                "phase": "train",
                "components": self.state.components,
                "label_change": float(np.mean(self.state.labels != previous)),
                "emd": emd,
                "emd_mean": None if emd is None else float(np.mean(emd)),
                "weights": weights.tolist(),
                **info,
                **losses,
            }
        state = self.state
        if self.params.pseudo_labels == "spectral" and state.components > self.params.num_clusters:
            log(
                WARNING,
                "round %d: the global graph A_g has %d connected components for %d "
                "clusters; spectral pseudo-labels will follow the components (consider "
                "iai-pseudo-labels = prototype-argmin or a larger iai-knn)",
                server_round,
                state.components,
                self.params.num_clusters,
            )
        target = state.target if state.target is not None else np.zeros((0, self.params.num_clusters))
        return [state.neighbours, state.labels, target, state.anchors], record

    def converged(self, record: dict[str, Any]) -> str | None:
        """The stop rule: the pseudo-labels changed for at most ``iai.stop-label-change`` of the
        samples in each of the last ``iai.stop-patience`` training rounds."""
        assert self.params is not None
        tol, patience = self.params.stop_label_change, self.params.stop_patience
        changes = [r.get("label_change") for r in self.recorder.data["rounds"]]
        if not settled(changes, tol, patience):
            return None
        return (
            f"pseudo-labels changed for <= {tol:g} of the samples for {patience} rounds "
            "(iai.stop-label-change, iai.stop-patience)"
        )

    def final_labels(self) -> np.ndarray | None:
        """The last pseudo-labels Y (the method's output)."""
        return None if self.state is None else self.state.labels

    def round_labels(self) -> np.ndarray | None:
        """This round's pseudo-labels Y (Y⁰ after the set-up round), scored when the run ends."""
        return self.final_labels()

    def write_plots(self) -> list[str]:
        """Scores, training losses and connected components of A_g against rounds."""
        from fedmf_app.methods.iai.plots import plot_rounds  # see later_imports

        shared = self.shared
        title = (
            f"{shared.algorithm}: {Path(shared.dataset).name}, missing-rate={shared.missing_rate}, "
            f"seed={shared.seed}"
        )
        plot_rounds(self.recorder.data, self.recorder.run_dir / "convergence.png", title)
        return ["convergence.png"]

    def summary(self) -> dict[str, Any]:
        """Training rounds and the last graph's connectivity."""
        return {
            "training_rounds": self.last_round - 1,
            "components": None if self.state is None else self.state.components,
        }


#: The family's Strategy per run-config ``algorithm`` (read by :func:`fedmf_app.registry.strategy_class`).
STRATEGIES: dict[str, type[FMVCIAIStrategy]] = {"fmvc-iai": FMVCIAIStrategy}
