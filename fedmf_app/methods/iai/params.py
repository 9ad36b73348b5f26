"""Paper C's FMVC-IAI: the parameters, each ``iai.*`` key declared once beside its field; torch-free.

:class:`IAIParams` declares every ``iai.*`` run-config key (default, constraint, help:
:func:`~fedmf_app.options.schema.option`), the graph autoencoder's in its group
:class:`GAEParams`, whose defaults are therefore the run config's. :func:`iai_params` builds it
from a validated run config with the number of clusters and samples, the adaptive sizes (``0``)
resolved; the Flower adapters (:mod:`~fedmf_app.methods.iai.client`,
:mod:`~fedmf_app.methods.iai.strategy`) read it and never the config's ``iai.*`` keys. Every key
marked [A] is an assumption (a choice the paper does not state, see ``docs/iai.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedmf_app.common.neighbour_search import EXACT_SEARCH_ROWS
from fedmf_app.methods.iai.deep_clustering import FUSION_WEIGHTS
from fedmf_app.methods.iai.global_assignment import adaptive_anchor_neighbours, adaptive_knn
from fedmf_app.methods.iai.rank_fusion import adaptive_rank_depth
from fedmf_app.methods.iai.sample_graphs import START_GRAPHS
from fedmf_app.options.constraints import Boolean, Interval, OneOf, PositiveIntegers
from fedmf_app.options.schema import from_run_config, group, option

__all__ = [
    "ANCHOR_DISTANCE_RULES",
    "ATTRIBUTE_SCALES",
    "DEVICES",
    "FEATURE_SCALINGS",
    "GRAPH_UPDATES",
    "GAEParams",
    "IAIParams",
    "IMPUTATIONS",
    "PSEUDO_LABELS",
    "START_TARGETS",
    "iai_params",
]

#: Imputation of the missing rows of Z^(m): feature propagation (M1) or zeros (ablation of M1).
IMPUTATIONS = ("propagation", "zeros")
#: Pseudo-labels Y: spectral clustering of the rank-fused graph, with or without the embedding's
#: neighbour list as one more vote, the more modular on A_g ([A]); k-means on the landmark-MDS
#: coordinates of the securely summed anchor distances ([A]); spectral clustering of the fused anchor
#: graph (P from the same coordinates); argmin of the summed prototype distances; or spectral
#: clustering of A_g.
PSEUDO_LABELS = ("rank-spectral", "anchor-kmeans", "anchor-spectral", "prototype-argmin", "spectral")
#: The pseudo-label rules whose clients upload their squared distances to the shared anchors.
ANCHOR_DISTANCE_RULES = ("rank-spectral", "anchor-kmeans", "anchor-spectral")
#: Scale of the attribute loss M3: plain MSE, or MSE over the imputed codes' variance.
ATTRIBUTE_SCALES = ("none", "variance")
#: A_g of a training round: rank fusion of the views' neighbour lists of their imputed codes ([A]),
#: kNN of the fused anchor graph (paper C), or that joined with A_g⁰.
GRAPH_UPDATES = ("rank", "fused", "fused-start")
#: Target of the first training round: none (alpha = 0 then) or Y⁰ as a smoothed one-hot P⁰.
START_TARGETS = ("none", "start-labels")
#: Per-client scaling of the raw features before the autoencoder.
FEATURE_SCALINGS = ("auto", "standard", "row-l2", "none")
#: Where the client trains its networks.
DEVICES = ("cpu", "cuda")


#: Default most samples a GAE epoch trains on: the largest n trained on the whole graph, and the
#: nodes of a sampled subgraph above it ([A]).
SUBGRAPH_NODES = 20_000


def _widths(text: str) -> tuple[int, ...]:
    """``"256,128"`` -> ``(256, 128)``."""
    return tuple(int(w) for w in text.split(","))


@dataclass(frozen=True)
class GAEParams:
    """Architecture and training of the client's graph autoencoder (the run config's ``iai.*``
    defaults, [A]).

    Attributes
    ----------
    hidden : int
        Width per attention head of the first GAT layer (64).
    heads : int
        Heads of the first layer, concatenated (4).
    out_dim : int
        Embedding d_h (64); the second GAT layer has one head and no activation.
    decoder_hidden : int
        Hidden width of the attribute decoder d_h -> 256 -> d_z and of the structure head.
    epochs : int
        Epochs per round, one optimiser step each (20).
    warmup_epochs : int
        Epochs of the first training round, which has no target P (0: ``epochs``).
    lr : float
        Adam step (1e-3).
    alpha : float
        Weight of the clustering loss (1).
    negative_ratio : float
        Sampled non-edges per edge of A_g + I in the structure loss (1.0, uniform sampling).
    attribute_loss : bool
        Include MSE(Ẑ, Ẑ_rec) (ablation M3 when false).
    attribute_scale : str
        One of :data:`ATTRIBUTE_SCALES`: ``none``, the plain MSE; ``variance``, the MSE divided by
        the mean squared deviation of Ẑ from its column means (1 for a decoder that outputs the mean).
    structure_loss : bool
        Include the BCE on edges and sampled non-edges (ablation M4 when false).
    subgraph_nodes : int
        Most nodes an epoch trains on (20,000): up to that many samples every epoch is one step
        on the whole graph A_g + I; above it, the ``n`` samples are split at random into
        ``ceil(n / subgraph_nodes)`` equal parts and an epoch steps on the subgraph one induces.
    """

    hidden: int = 64
    heads: int = 4
    out_dim: int = 64
    decoder_hidden: int = 256
    epochs: int = option(
        "iai.epochs",
        20,
        Interval(int, 1, None, closed="left"),
        "GAE epochs per round, one optimiser step each (on the whole graph, or above iai.subgraph-nodes "
        "samples on a sampled subgraph) ([A] 20; the reference settings say 100, 20 as in the measured "
        "reference reconstruction, 5x cheaper).",
    )
    warmup_epochs: int = option(
        "iai.warmup-epochs",
        0,
        Interval(int, 0, None, closed="left"),
        "GAE epochs of the first training round, the one without a target P ([A] 0: `iai.epochs`).",
    )
    lr: float = 1e-3
    alpha: float = 1.0
    negative_ratio: float = 1.0
    attribute_loss: bool = option(
        "iai.attribute-loss", True, Boolean(), "Attribute reconstruction MSE (false: ablation M3)."
    )
    attribute_scale: str = "none"
    structure_loss: bool = option(
        "iai.structure-loss", True, Boolean(), "Structure reconstruction BCE (false: ablation M4)."
    )
    subgraph_nodes: int = option(
        "iai.subgraph-nodes",
        SUBGRAPH_NODES,
        Interval(int, 2, None, closed="left"),
        "Most samples a GAE epoch trains on ([A] 20,000: HW, NoisyMNIST and the development sets train "
        "on the whole graph A_g + I). Above it the n samples are split at random into "
        "ceil(n / iai.subgraph-nodes) equal parts (torch-geometric's RandomNodeLoader) and each epoch "
        "takes its one step on the subgraph one part induces, so that an epoch's cost stops growing "
        "with n.",
    )


@dataclass(frozen=True)
class IAIParams:
    """Everything else of FMVC-IAI (the run config's ``iai.*`` defaults; ``knn``,
    ``anchor_neighbours`` and ``rank_depth`` are 0, adaptive, until :func:`iai_params` resolves them).

    Attributes
    ----------
    num_clusters : int
        K.
    knn : int
        Neighbours k of every kNN graph.
    anchors : int
        Shared anchor indices r, drawn once by the server at random (200).
    anchor_neighbours : int
        Anchors per sample s of the parameter-free anchor graph.
    fp_iterations : int
        Feature-propagation steps T (40).
    imputation : str
        One of :data:`IMPUTATIONS` (``propagation``).
    start_graph : str
        ``rank`` (rank fusion of the views' neighbour lists), ``support`` (top-k by supporting
        views) or ``union`` (the literal reading).
    fusion : str
        ``inverse-emd``, ``softmax`` or ``uniform`` (M2 ablation).
    graph_update : str
        One of :data:`GRAPH_UPDATES` (``rank``).
    fusion_temperature : float
        Temperature of ``softmax`` fusion.
    pseudo_labels : str
        One of :data:`PSEUDO_LABELS` (``rank-spectral``).
    view_balance : str
        One of :data:`~fedmf_app.methods.iai.global_assignment.VIEW_BALANCES` (``unit-variance``).
    start_target : str
        One of :data:`START_TARGETS` (``none``).
    mds_dim : int
        Landmark-MDS coordinates kept by ``anchor-kmeans`` (0: every positive eigenvalue).
    feature_scaling : str
        ``standard``: z-score each feature on the client's observed rows; ``row-l2``: every
        row to unit l2 norm; ``none``; ``auto``: ``row-l2`` on a sparse nonnegative view,
        ``standard`` on the others.
    ae_hidden : tuple of int
        Autoencoder widths ((256, 128)).
    embed_dim : int
        d_z (64).
    ae_epochs : int
        Autoencoder epochs (100).
    ae_steps : int
        The most Adam steps of the autoencoder's pre-training (1000).
    ae_lr : float
    ae_batch_size : int
    device : str
        ``cpu`` or ``cuda`` (falls back to the CPU, with a warning, when no GPU is present).
    knn_probes : int
        Anchor lists a sample is filed under by the server's global kNN search (4).
    rank_depth : int
        Depth L of every view's neighbour list in the rank fusions.
    exact_search_rows : int
        Largest neighbour search done exactly; larger ones are approximate
        (:func:`~fedmf_app.common.neighbour_search.ivf_neighbours`).
    gae : GAEParams
    stop_label_change : float
        The run stops once the fraction of samples whose pseudo-label changed between training
        rounds has been at most this for ``stop_patience`` rounds in a row (0: never).
    stop_patience : int
    """

    num_clusters: int
    knn: int = option(
        "iai.knn",
        0,
        Interval(int, 0, None, closed="left"),
        "Neighbours k of every kNN graph; 0 ([A]) adapts it to the data: k = clamp(round(n / (2K)), "
        "5, 20), half the mean cluster size, at most paper C's best k = 20 (HW, NoisyMNIST: 20; "
        "ORL, Yale: 5-6).",
    )
    anchors: int = option(
        "iai.anchors",
        200,
        Interval(int, 2, None, closed="left", text="an integer >= iai.anchor-neighbours + 1"),
        "Shared anchors r, sample indices drawn once at random by the server ([A] 200; capped at "
        "the number of samples n).",
    )
    anchor_neighbours: int = option(
        "iai.anchor-neighbours",
        0,
        Interval(int, 0, None, closed="left"),
        "Anchors per sample s of the parameter-free anchor graph; 0 ([A]) adapts it: s = "
        "clamp(round(r / (2K)), 3, 10), half the anchors per cluster (HW: 10, ORL: 3).",
    )
    fp_iterations: int = 40
    imputation: str = option(
        "iai.imputation",
        "propagation",
        OneOf(IMPUTATIONS),
        "Missing rows of Z by feature propagation on A_g, or left at zero (ablation M1).",
    )
    start_graph: str = option(
        "iai.start-graph",
        "rank",
        OneOf(START_GRAPHS),
        "First global graph A_g⁰: per sample, the k best of a Borda count over the clients' lists of "
        "their L = iai.rank-depth nearest observed rows (`rank`, [A]), the k neighbours listed by "
        "most views (`support`), or the union of the clients' kNN graphs (`union`, the literal "
        "reading).",
    )
    rank_depth: int = option(
        "iai.rank-depth",
        0,
        Interval(int, 0, None, closed="left"),
        "Depth L of every view's neighbour list in the rank fusions (`rank` start graph and graph "
        "update); 0 ([A]) adapts it: L = 5 k (HW, NoisyMNIST: 100), at most n - 1.",
    )
    exact_search_rows: int = EXACT_SEARCH_ROWS
    fusion: str = option(
        "iai.fusion",
        "uniform",
        OneOf(FUSION_WEIGHTS),
        "Weights w_m of the views' votes in the rank-fused A_g and of their anchor graphs in the fused "
        "anchor graph: equal (`uniform`, [A]: EMD-based weights made the rank fusion unstable on "
        "NoisyMNIST), 1/EMD_m normalised (`inverse-emd`, paper C's weighted fusion M2), or "
        "softmax(-EMD/T).",
    )
    fusion_temperature: float = 0.1
    pseudo_labels: str = option(
        "iai.pseudo-labels",
        "rank-spectral",
        OneOf(PSEUDO_LABELS),
        "Global assignment Y and target P: `rank-spectral` ([A]: of the previous Y and the spectral "
        "clusterings of A_g with and without the concatenated embedding's neighbour list as one more "
        "vote, the partition with the highest modularity on A_g; needs iai.graph-update = rank; P "
        "from the coordinates of `anchor-kmeans`), `anchor-kmeans` ([A]: the clients' squared distances to "
        "the shared anchor samples, summed (masked under secure aggregation), placed by landmark MDS, "
        "clustered by k-means with restarts, P sharpened from the k-means centres), "
        "`anchor-spectral` ([A]: Y by spectral clustering of the fused anchor graph G, the bipartite "
        "sample-anchor graph, P sharpened from the same MDS coordinates' distances to Y's cluster "
        "means), `prototype-argmin` ([A]: one federated k-means step, Y = argmin_k of the "
        "summed prototype distances), or `spectral` (spectral clustering of A_g, the literal "
        "reading; collapsed on HW).",
    )
    view_balance: str = "unit-variance"
    mds_dim: int = 0
    graph_update: str = option(
        "iai.graph-update",
        "rank",
        OneOf(GRAPH_UPDATES),
        "A_g of a training round: the rank fusion of the clients' lists of the L nearest samples by "
        "their imputed codes, each view's votes weighted by the fusion weights (`rank`, [A]), the kNN "
        "graph of the fused anchor graph (`fused`, paper C), or its union with the start graph A_g⁰ "
        "(`fused-start`: A_g travels as n x 2k indices).",
    )
    start_target: str = "none"
    feature_scaling: str = option(
        "iai.feature-scaling",
        "auto",
        OneOf(FEATURE_SCALINGS),
        "Each client z-scores its features on its observed rows before the autoencoder "
        "(`standard`), scales every row to unit l2 norm (`row-l2`), keeps them (`none`), or "
        "`auto` ([A]): row-l2 on sparse nonnegative views (>= 90 % zeros: counts, bag of "
        "words), standard on the others.",
    )
    ae_hidden: tuple[int, ...] = option(
        "iai.ae-hidden",
        "256,128",
        PositiveIntegers(),
        "Autoencoder hidden widths d -> ... -> d_z, mirrored decoder ([A]).",
        convert=_widths,
    )
    embed_dim: int = option(
        "iai.embed-dim", 64, Interval(int, 1, None, closed="left"), "Autoencoder code size d_z ([A] 64)."
    )
    ae_epochs: int = option(
        "iai.ae-epochs",
        100,
        Interval(int, 1, None, closed="left"),
        "Autoencoder pre-training epochs, once in round 1 ([A] 100), at most `iai.ae-steps` Adam steps.",
    )
    ae_steps: int = option(
        "iai.ae-steps",
        1000,
        Interval(int, 1, None, closed="left"),
        "At most this many Adam steps of autoencoder pre-training ([A] 1000): the epochs stop once "
        "they are taken. 100 epochs of 256-row batches take fewer on up to 2,560 observed rows "
        "(every development set); on more rows the pre-training's cost no longer grows with n.",
    )
    ae_lr: float = 1e-3
    ae_batch_size: int = 256
    gae: GAEParams = group(GAEParams)
    knn_probes: int = 4
    stop_label_change: float = option(
        "iai.stop-label-change",
        2e-3,
        Interval(float, 0, 1, closed="both"),
        "Stop rule: the run ends once the fraction of samples whose pseudo-label changed from one "
        "training round to the next has been <= this for iai.stop-patience rounds in a row ([A] "
        "2e-3; 0: run all rounds; see docs/rounds.md).",
    )
    stop_patience: int = option(
        "iai.stop-patience",
        3,
        Interval(int, 1, None, closed="left"),
        "Training rounds in a row whose label change is <= iai.stop-label-change before the run "
        "stops ([A] 3).",
    )
    device: str = option(
        "iai.device",
        "cpu",
        OneOf(DEVICES),
        "Where torch-based clients (fmvc-iai) train; `cuda` falls back to the CPU with a "
        "warning when no GPU is present.",
    )

    @property
    def uses_anchor_graphs(self) -> bool:
        """Whether the clients upload their anchor graphs G^(m) (the fused graph A_g or Y needs them)."""
        return self.graph_update != "rank" or self.pseudo_labels == "anchor-spectral"

    @property
    def list_depth(self) -> int:
        """Depth of the set-up round's neighbour lists: L for the rank-fused start graph, else k."""
        return self.rank_depth if self.start_graph == "rank" else self.knn

    @property
    def keeps_setup_lists(self) -> bool:
        """Whether a client keeps its set-up lists for the training rounds: they are the observed
        rows' lists of ``graph_update = "rank"`` (same codes, same depth), so no round recomputes
        them."""
        return self.graph_update == "rank" and self.list_depth == self.rank_depth


def iai_params(cfg: Mapping[str, Any], num_clusters: int, num_samples: int | None = None) -> IAIParams:
    """Parameters of FMVC-IAI (paper C) from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.
    num_clusters : int
        K.
    num_samples : int, optional
        n; when given, the anchors are capped at n ([A]: a data set smaller than
        ``iai.anchors`` uses every sample as an anchor rather than failing). Needed when
        ``iai.knn = 0`` or ``iai.rank-depth = 0`` (the adaptive sizes).

    Returns
    -------
    IAIParams
        With the adaptive sizes (``0``) resolved.

    Raises
    ------
    ValueError
        When an adaptive size is asked for and ``num_samples`` is not given.
    """
    anchors = cfg["iai.anchors"] if num_samples is None else min(cfg["iai.anchors"], num_samples)
    knn = cfg["iai.knn"]
    if knn == 0:
        if num_samples is None:
            raise ValueError("iai.knn = 0 (adaptive) needs the number of samples")
        knn = adaptive_knn(num_samples, num_clusters)
    s = cfg["iai.anchor-neighbours"] or adaptive_anchor_neighbours(anchors, num_clusters)
    depth = cfg["iai.rank-depth"]
    if depth == 0:
        if num_samples is None:
            raise ValueError("iai.rank-depth = 0 (adaptive) needs the number of samples")
        depth = adaptive_rank_depth(knn, num_samples)
    elif num_samples is not None:
        depth = max(1, min(depth, num_samples - 1))
    return from_run_config(
        IAIParams,
        cfg,
        num_clusters=num_clusters,
        knn=knn,
        anchors=anchors,
        anchor_neighbours=s,
        rank_depth=depth,
    )
