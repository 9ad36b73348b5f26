"""Server side of paper B's FMVC-IMK (``algorithm = "fmvc-imk"``): a Flower Strategy.

Before round 1 (inside :meth:`initialize_parameters`, after the base handshake and the run's one
key agreement, which fmvc-imk always needs: its protocol declares it) the strategy runs
the secure sum of the clients' graphs on the shared path (:mod:`fedmf_app.common.secure_sum_math`,
:mod:`fedmf_app.federated.secure_sum_flower`):

1. ``fit`` stage ``setup`` to every client (with, for ``imk.graph = anchor``, the shared
   anchor sample indices drawn from the run seed): each answers its graph as one masked
   fixed-point vector (dense ``N x a`` anchor graph, or the kNN similarity's upper triangle), its
   initial :math:`H^{(m)}` and (if it has them) its labels;
2. the server adds the masked uploads mod :math:`2^{64}` (only the sum is ever decoded), forms
   :math:`\\tilde L` (:class:`~fedmf_app.methods.imk.server_updates.AnchorLaplacian` of
   :math:`\\sum_m Z^{(m)}/M`, or the sparse :math:`\\sum_m L^{(m)}/(Mp)`) and the first :math:`H`
   (:func:`~fedmf_app.methods.imk.client_updates.initial_global_h`).

With ``secure-aggregation = true`` (keys signed if asked) each round's upload is also one masked
vector whose sum the server decodes. The initial :math:`H^{(m)}` (for
``server-init = kmeans-concat``) and the labels still travel in the clear.

Each round: down :math:`H` (``N x k``); up :math:`H^{(m)}` (``N x k``) and three scalars
(:math:`\\|R^{(m)}\\|_F`, :math:`\\|H^{(m)\\top}H^{(m)} - I\\|_F^2`, :math:`\\|H^{(m)}\\|_F^2`), plus
in the clear :math:`\\alpha^{(m)}`. The server reads them only as sums, masked or not: it keeps
:math:`\\sum_m\\Phi^{(m)}` (the sum of the clients' multiplier steps), solves (20) and records the
objective, the consensus gap and, when the clients sent labels, ACC/NMI/purity/ARI of the labels
extracted from the new :math:`H`. The run stops early
when the objective's relative change has been at most ``imk.tol`` (``imk.spectral-tol`` when every
client's set-up reply says it started from its spectral clustering) for ``imk.stop-patience``
rounds in a row; the remaining Flower rounds are skipped (no client is contacted). The set-up
brought the ground truth, so the run ends without the end-of-run exchange (unless a sample-ID
alignment needs the final labels sent back).
"""

from __future__ import annotations

import concurrent.futures
import time
from functools import partial
from logging import INFO
from typing import Any

import numpy as np
from flwr.common import (
    FitIns,
    Scalar,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.logger import log
from flwr.server.client_proxy import ClientProxy

from fedmf_app.common.graphs import laplacian
from fedmf_app.common.secure_sum_math import matrix_from_values, upper_from_values
from fedmf_app.common.stopping import plateau
from fedmf_app.federated.handshake import exchange
from fedmf_app.federated.results import RunRecorder
from fedmf_app.federated.strategy import ClientReply, FederationError, ViewFederationStrategy
from fedmf_app.methods.imk.model import anchor_indices, label_rng, multiplier_step, relaxed, server_rng
from fedmf_app.methods.imk.params import imk_options, resolve_graph, stop_tolerance
from fedmf_app.methods.imk.protocol import PROTOCOL
from fedmf_app.methods.imk.server_updates import (
    AnchorLaplacian,
    ServerSolver,
    WoodburySolver,
    consensus_gap,
    extract_labels,
    initial_global_h,
    make_solver,
    normalised_laplacian_sum,
    objective,
)

__all__ = ["STRATEGIES", "FMVCIMKStrategy"]


class FMVCIMKStrategy(ViewFederationStrategy):
    """FMVC-IMK server: secure graph sum, the ``H`` update (20), multipliers, stopping rule.

    Built from ``cfg`` and ``recorder`` as
    :class:`~fedmf_app.federated.strategy.ViewFederationStrategy` is.

    Attributes
    ----------
    h : ndarray, shape (N, k)
        The global indicator :math:`H`.
    laplacian : scipy.sparse.csr_matrix or AnchorLaplacian, shape (N, N)
        :math:`\\tilde L` (known only as the sum over clients).
    """

    protocol = PROTOCOL
    progress_keys = ("objective", "consensus", "acc")
    later_imports = (
        *ViewFederationStrategy.later_imports,
        "sklearn.cluster",
        "fedmf_app.methods.imk.plots",
    )
    checkpoint_attrs = (
        "num_clusters",
        "k",
        "h",
        "laplacian",
        "phi_sum",
        "h_sum",
        "setup",
        "converged_round",
    )
    checkpoint_types = (AnchorLaplacian,)

    def __init__(self, cfg: dict[str, Any], recorder: RunRecorder) -> None:
        super().__init__(cfg, recorder)
        self.options = imk_options(cfg)
        self.params = self.options.steps
        self.k = 0
        self.h: np.ndarray | None = None
        self.laplacian = None
        self.num_samples = 0
        self.graph = ""
        self.solver: ServerSolver | WoodburySolver | None = None
        self.phi_sum: np.ndarray | None = None
        self.h_sum: np.ndarray | None = None
        self.setup: dict[str, Any] = {}
        self.converged_round: int | None = None

    # ------------------------------------------------------------------------------ handshake
    def check_clients(self, info: list[dict[str, Scalar]]) -> None:
        """Same samples everywhere, and more samples (kNN) or anchors (anchor graph) than neighbours."""
        super().check_clients(info)
        n = int(info[0]["num-samples"])
        self.num_samples = n
        self.graph = resolve_graph(self.options.graph, n)
        if self.graph == "anchor":
            a = min(self.options.anchors, n)
            if not self.options.neighbours < a:
                raise FederationError(
                    f"run config 'imk.neighbours' = {self.options.neighbours} must be below the "
                    f"number of anchors (min('imk.anchors', N) = {a})"
                )
        elif not self.options.neighbours < n:
            raise FederationError(
                f"run config 'imk.neighbours' = {self.options.neighbours} must be below the "
                f"number of samples ({n})"
            )

    def initial_arrays(self) -> list[np.ndarray]:
        """Secure sum of the graphs, initial ``H`` (see the module docstring)."""
        if self.num_clusters is None:
            raise FederationError(
                "fmvc-imk needs the number of clusters: set run config 'num-clusters' (the clients "
                "have no ground truth to take it from)"
            )
        self.k = self.num_clusters
        started = time.perf_counter()
        anchors = None
        extra: dict[str, Scalar] = {}
        if self.graph == "anchor":
            anchors = anchor_indices(self.shared.seed, self.num_samples, self.options.anchors)
            extra["anchors"] = anchors.tobytes()
        config = self.stage_config("setup", **extra)
        log(INFO, "fmvc-imk set-up 1/2: each client builds its %s graph and masks it", self.graph)
        replies = self._parallel(lambda p: self._fit_stage(p, config))
        log(INFO, "fmvc-imk set-up 2/2: the server sums the masked graphs and prepares its solver")
        n = self.num_samples
        stage = self.protocol.stage("setup")
        self.check_replies(stage, replies, [], "set-up")
        m = len(replies)
        sum_started = time.perf_counter()
        summed = self.decode_sum(
            stage, [arrays[0] for arrays, _ in replies], [], "fmvc-imk set-up, masked graph", 0
        )["graph"]
        if anchors is None:
            total = upper_from_values(summed, n)
            self.laplacian = normalised_laplacian_sum(laplacian(total), m, self.options.neighbours)
            edges = int(total.nnz // 2)
        else:
            total = matrix_from_values(summed, (n, anchors.size))
            self.laplacian = AnchorLaplacian(total / m)
            edges = int(total.nnz)
        del summed
        self.solver = make_solver(self.laplacian, m, self.params, self.options.server_solver)
        sum_s = time.perf_counter() - sum_started
        h_inits = [arrays[1] for arrays, _ in replies]
        self.h = initial_global_h(h_inits, self.options.server_init, server_rng(self.shared.seed))
        self.phi_sum = np.zeros_like(self.h)
        truths = [(p, arrays[2]) for p, (arrays, _) in enumerate(replies) if len(arrays) > 2]
        self.truth_partition, self.truth = truths[0] if truths else (0, None)
        for reply in replies:
            reply[0].clear()  # drop the masked uploads (N a or N^2/2 words each)
        self.setup = {
            "graph": self.graph,
            "upload_bytes_per_client": int(replies[0][1]["upload_bytes"]),
            "client_mask_s_max": max(float(r[1]["mask_s"]) for r in replies),
            "client_setup_s_max": max(float(r[1]["kernel_s"]) for r in replies),
            "client_setup_peak_rss_mb_max": max(float(r[1]["peak_rss_mb"]) for r in replies),
            "starts": [str(r[1]["start"]) for r in replies],
            "server_sum_s": sum_s,
            "setup_s": time.perf_counter() - started,
            "graph_edges": edges,
            "num_anchors": 0 if anchors is None else int(anchors.size),
            "num_clusters": self.k,
        }
        self.client_peak_rss_mb = self.setup["client_setup_peak_rss_mb_max"]
        log(INFO, "fmvc-imk setup: %s", self.setup)
        return [self.h]

    def after_restore(self) -> None:
        """Resume: rebuild the solver of (20) from the restored Laplacian."""
        m = len(self.client_info)
        self.solver = make_solver(self.laplacian, m, self.params, self.options.server_solver)

    # ---------------------------------------------------------------------------------- rounds
    def converged(self, record: dict[str, Any]) -> str | None:
        """The stop rule: the objective's relative change at most the run's tolerance
        (:func:`~fedmf_app.methods.imk.params.stop_tolerance` of the starts the clients' set-up
        replies name) for ``imk.stop-patience`` rounds in a row."""
        key, tol = stop_tolerance(self.options, self.setup["starts"])
        patience = self.options.stop_patience
        if not plateau([r["objective"] for r in self.recorder.data["rounds"]], tol, patience):
            return None
        self.converged_round = record["round"]
        return f"objective's relative change <= {key} = {tol:g} for {patience} rounds (imk.stop-patience)"

    def aggregate(
        self, server_round: int, replies: list[ClientReply]
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """The multipliers' sum, (20), the objective, the consensus gap and the scores, from sums.

        (20) needs only :math:`\\sum_m(\\Phi^{(m)} + \\rho H^{(m)})`, and the clients' multiplier
        steps sum to :math:`\\sum_m\\Phi^{(m)} \\mathrel{+}= \\rho(\\sum_m H^{(m)} - MH)`; the consensus
        gap is :math:`\\sum_m\\|H^{(m)}\\|^2 - 2\\langle\\sum_m H^{(m)}, H\\rangle + M\\|H\\|^2`. So the
        server reads the replies only through their sums
        (:meth:`~fedmf_app.federated.strategy.ViewFederationStrategy.round_sums`), masked or not;
        in the clear the clients' view weights are recorded too. With ``imk.relaxation`` = :math:`a`
        the update and the next multiplier step read the over-relaxed sum
        :math:`a\\sum_m H^{(m)} + (1 - a)MH` (kept as ``h_sum``), the sum of the clients' relaxed
        copies.
        """
        m = len(replies)
        sums = self.round_sums(server_round, replies)
        h_sum = sums["H^(m)"]
        if server_round > 1:
            self.phi_sum = multiplier_step(self.phi_sum, self.h_sum, m * self.h, self.params.rho)
        self.h_sum = relaxed(h_sum, m * self.h, self.params.relaxation)
        self.h = self.solver.update(self.phi_sum, self.h_sum, self.h)
        record: dict[str, Any] = objective(
            sums["residual"], sums["ortho"], self.h, self.laplacian, self.params
        )
        record["consensus"] = consensus_gap(sums["h_squared_norm"], h_sum, self.h, m)
        if all("alpha" in r.metrics for r in replies):
            record["alpha"] = [float(r.metrics["alpha"]) for r in replies]
        if self.truth is not None:
            record.update(self._scores(self._labels(server_round)))
        return [self.h], record

    def _labels(self, server_round: int) -> np.ndarray:
        return extract_labels(self.h, self.options.labels, label_rng(self.shared.seed, server_round))

    def _scores(self, labels: np.ndarray) -> dict[str, float]:
        from fedmf_app.common.metrics import clustering_scores

        return clustering_scores(self.truth, labels)

    def final_labels(self) -> np.ndarray | None:
        """Labels of the final global ``H`` (``imk-labels`` rule; the last round's labels)."""
        return self._labels(self.recorder.data["rounds"][-1]["round"])

    def summary(self) -> dict[str, Any]:
        """Setup costs, rounds run, convergence and the final objective and scores."""
        last = self.recorder.data["rounds"][-1]
        out = {
            "setup": self.setup,
            "rounds_run": last["round"],
            "converged_round": self.converged_round,
            "objective": last["objective"],
        }
        for key in ("acc", "nmi", "purity", "ari"):
            if key in last:
                out[key] = last[key]
        return out

    def write_plots(self) -> list[str]:
        """Objective and ACC against rounds (the paper's Fig. 2)."""
        from fedmf_app.methods.imk.plots import plot_convergence  # see later_imports

        title = f"{self.shared.algorithm}: {self.shared.dataset}, seed={self.shared.seed}"
        plot_convergence(self.recorder.data, self.recorder.run_dir / "convergence.png", title)
        return ["convergence.png"]

    # ---------------------------------------------------------------------------------- helpers
    def _parallel(self, call) -> list[Any]:
        """``call(proxy)`` for every client at once; results in partition order."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.clients)) as pool:
            return list(pool.map(call, self.clients))

    def _fit_stage(self, proxy: ClientProxy, config: dict[str, Scalar]) -> tuple[list[np.ndarray], dict]:
        ins = FitIns(parameters=ndarrays_to_parameters([]), config=config)
        timeout = float(self.shared.round_timeout_s)
        send = partial(proxy.fit, ins, timeout=timeout, group_id=0)
        res = exchange(send, f"SuperNode {proxy.cid} failed the setup", timeout)
        return parameters_to_ndarrays(res.parameters), dict(res.metrics)


#: The family's Strategy per run-config ``algorithm`` (read by :func:`fedmf_app.registry.strategy_class`).
STRATEGIES: dict[str, type[FMVCIMKStrategy]] = {"fmvc-imk": FMVCIMKStrategy}
