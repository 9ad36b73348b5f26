"""Paper C's FMVC-IAI: the parameters, typed, built from the validated run config; torch-free.

:func:`iai_params` turns the ``iai.*`` keys of a validated run config, with the number of clusters
and samples, into one :class:`IAIParams`; the Flower adapters (:mod:`~fedmf_app.methods.iai.client`,
:mod:`~fedmf_app.methods.iai.strategy`) read it and never the config's ``iai.*`` keys. Every field
marked [A] is an assumption (a choice the paper does not state, see ``docs/iai.md``), exposed as a
run-config option (:mod:`fedmf_app.methods.iai.options`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fedmf_app.common.neighbour_search import EXACT_SEARCH_ROWS
from fedmf_app.methods.iai.global_assignment import adaptive_anchor_neighbours, adaptive_knn
from fedmf_app.methods.iai.rank_fusion import adaptive_rank_depth

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


@dataclass(frozen=True)
class GAEParams:
    """Architecture and training of the client's graph autoencoder ([A] defaults).

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
    structure_head : str
        ``mlp``: H_s = MLP_s(H) (d_h -> decoder_hidden -> d_h); ``identity``: H_s = H.
    epochs : int
        Full-batch epochs per round (100).
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
    """

    hidden: int = 64
    heads: int = 4
    out_dim: int = 64
    decoder_hidden: int = 256
    structure_head: str = "mlp"
    epochs: int = 100
    warmup_epochs: int = 0
    lr: float = 1e-3
    alpha: float = 1.0
    negative_ratio: float = 1.0
    attribute_loss: bool = True
    attribute_scale: str = "none"
    structure_loss: bool = True


@dataclass(frozen=True)
class IAIParams:
    """Everything else of FMVC-IAI.

    Attributes
    ----------
    num_clusters : int
        K.
    knn : int
        Neighbours k of every kNN graph (20).
    anchors : int
        Shared anchor indices r, drawn once by the server at random (200).
    anchor_neighbours : int
        Anchors per sample s of the parameter-free anchor graph (10).
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
    ae_lr : float
    ae_batch_size : int
    device : str
        ``cpu`` or ``cuda`` (falls back to the CPU, with a warning, when no GPU is present).
    knn_probes : int
        Anchor lists a sample is filed under by the server's global kNN search (4).
    rank_depth : int
        Depth L of every view's neighbour list in the rank fusions (``5 k``).
    exact_search_rows : int
        Largest neighbour search done exactly; larger ones are approximate
        (:func:`~fedmf_app.common.neighbour_search.ivf_neighbours`).
    gae : GAEParams
    """

    num_clusters: int
    knn: int = 20
    anchors: int = 200
    anchor_neighbours: int = 10
    fp_iterations: int = 40
    imputation: str = "propagation"
    start_graph: str = "rank"
    fusion: str = "uniform"
    graph_update: str = "rank"
    fusion_temperature: float = 0.1
    pseudo_labels: str = "rank-spectral"
    view_balance: str = "unit-variance"
    start_target: str = "none"
    mds_dim: int = 0
    feature_scaling: str = "auto"
    ae_hidden: tuple[int, ...] = (256, 128)
    embed_dim: int = 64
    ae_epochs: int = 100
    ae_lr: float = 1e-3
    ae_batch_size: int = 256
    device: str = "cpu"
    knn_probes: int = 4
    rank_depth: int = 100
    exact_search_rows: int = EXACT_SEARCH_ROWS
    gae: GAEParams = field(default_factory=GAEParams)

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
    return IAIParams(
        num_clusters=num_clusters,
        knn=knn,
        anchors=anchors,
        anchor_neighbours=s,
        fp_iterations=cfg["iai.fp-iterations"],
        imputation=cfg["iai.imputation"],
        start_graph=cfg["iai.start-graph"],
        fusion=cfg["iai.fusion"],
        graph_update=cfg["iai.graph-update"],
        fusion_temperature=cfg["iai.fusion-temperature"],
        pseudo_labels=cfg["iai.pseudo-labels"],
        view_balance=cfg["iai.view-balance"],
        mds_dim=cfg["iai.mds-dim"],
        start_target=cfg["iai.start-target"],
        feature_scaling=cfg["iai.feature-scaling"],
        ae_hidden=tuple(int(w) for w in cfg["iai.ae-hidden"].split(",")),
        embed_dim=cfg["iai.embed-dim"],
        ae_epochs=cfg["iai.ae-epochs"],
        ae_lr=cfg["iai.ae-lr"],
        ae_batch_size=cfg["iai.ae-batch-size"],
        device=cfg["iai.device"],
        knn_probes=cfg["iai.knn-probes"],
        rank_depth=depth,
        exact_search_rows=cfg["iai.exact-search-rows"],
        gae=GAEParams(
            hidden=cfg["iai.gat-hidden"],
            heads=cfg["iai.gat-heads"],
            out_dim=cfg["iai.embedding-dim"],
            decoder_hidden=cfg["iai.decoder-hidden"],
            structure_head=cfg["iai.structure-head"],
            epochs=cfg["iai.epochs"],
            warmup_epochs=cfg["iai.warmup-epochs"],
            lr=cfg["iai.lr"],
            alpha=cfg["iai.alpha"],
            negative_ratio=cfg["iai.negative-ratio"],
            attribute_loss=cfg["iai.attribute-loss"],
            attribute_scale=cfg["iai.attribute-scale"],
            structure_loss=cfg["iai.structure-loss"],
        ),
    )
