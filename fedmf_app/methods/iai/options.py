"""Run-config keys of paper C's FMVC-IAI (``[tool.flwr.app.config.iai]``).

The typed parameters built from these keys are :mod:`fedmf_app.methods.iai.params`.
"""

from __future__ import annotations

from typing import Any

from fedmf_app.common.neighbour_search import EXACT_SEARCH_ROWS
from fedmf_app.methods.iai.deep_clustering import FUSION_WEIGHTS
from fedmf_app.methods.iai.global_assignment import VIEW_BALANCES
from fedmf_app.methods.iai.params import (
    ATTRIBUTE_SCALES,
    DEVICES,
    FEATURE_SCALINGS,
    GRAPH_UPDATES,
    IMPUTATIONS,
    PSEUDO_LABELS,
    START_TARGETS,
)
from fedmf_app.methods.iai.sample_graphs import START_GRAPHS
from fedmf_app.options.constraints import Boolean, Interval, OneOf, PositiveIntegers
from fedmf_app.options.schema import ConfigError, Family, Option

__all__ = ["FAMILY"]

OPTIONS: tuple[Option, ...] = (
    Option(
        "iai.knn",
        0,
        Interval(int, 0, None, closed="left"),
        "Neighbours k of every kNN graph; 0 ([A]) adapts it to the data: k = clamp(round(n / (2K)), "
        "5, 20), half the mean cluster size, at most paper C's best k = 20 (HW, NoisyMNIST: 20; "
        "ORL, Yale: 5-6).",
    ),
    Option(
        "iai.anchors",
        200,
        Interval(int, 2, None, closed="left", text="an integer >= iai.anchor-neighbours + 1"),
        "Shared anchors r, sample indices drawn once at random by the server ([A] 200; capped at "
        "the number of samples n).",
    ),
    Option(
        "iai.anchor-neighbours",
        0,
        Interval(int, 0, None, closed="left"),
        "Anchors per sample s of the parameter-free anchor graph; 0 ([A]) adapts it: s = "
        "clamp(round(r / (2K)), 3, 10), half the anchors per cluster (HW: 10, ORL: 3).",
    ),
    Option(
        "iai.fp-iterations",
        40,
        Interval(int, 0, None, closed="left"),
        "Feature-propagation steps T (Rossi et al.: 40).",
    ),
    Option(
        "iai.imputation",
        "propagation",
        OneOf(IMPUTATIONS),
        "Missing rows of Z by feature propagation on A_g, or left at zero (ablation M1).",
    ),
    Option(
        "iai.start-graph",
        "rank",
        OneOf(START_GRAPHS),
        "First global graph A_g⁰: per sample, the k best of a Borda count over the clients' lists of "
        "their L = iai.rank-depth nearest observed rows (`rank`, [A]), the k neighbours listed by "
        "most views (`support`), or the union of the clients' kNN graphs (`union`, the literal "
        "reading).",
    ),
    Option(
        "iai.rank-depth",
        0,
        Interval(int, 0, None, closed="left"),
        "Depth L of every view's neighbour list in the rank fusions (`rank` start graph and graph "
        "update); 0 ([A]) adapts it: L = 5 k (HW, NoisyMNIST: 100), at most n - 1.",
    ),
    Option(
        "iai.exact-search-rows",
        EXACT_SEARCH_ROWS,
        Interval(int, 0, None, closed="left"),
        "Largest nearest-neighbour search done exactly ([A] 20,000 rows: every search of the "
        "development sets and NoisyMNIST). A search over more rows (a client's codes, the server's "
        "coordinates) uses an inverted-file index (faiss: 4 sqrt(n) lists, 64 visited per query), whose "
        "cost grows as n^1.5 instead of n^2 and which may miss a neighbour near a list's boundary; 0 "
        "makes every search approximate.",
    ),
    Option(
        "iai.fusion",
        "uniform",
        OneOf(FUSION_WEIGHTS),
        "Weights w_m of the views' votes in the rank-fused A_g and of their anchor graphs in the fused "
        "anchor graph: equal (`uniform`, [A]: EMD-based weights made the rank fusion unstable on "
        "NoisyMNIST), 1/EMD_m normalised (`inverse-emd`, paper C's weighted fusion M2), or "
        "softmax(-EMD/T).",
    ),
    Option(
        "iai.fusion-temperature",
        0.1,
        Interval(float, 0, None, closed="neither"),
        "Temperature T of softmax fusion.",
    ),
    Option(
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
    ),
    Option(
        "iai.view-balance",
        "unit-variance",
        OneOf(VIEW_BALANCES),
        "Each client scales its embedding to unit total variance before its distances are summed "
        "([A] `unit-variance`: no view dominates the global assignment), then weighs it by the root of "
        "its between-cluster variance share under Y (`consensus`), or keeps it (`none`).",
    ),
    Option(
        "iai.mds-dim",
        0,
        Interval(int, 0, None, closed="left"),
        "Landmark-MDS coordinates of `anchor-kmeans` ([A] 0: every positive eigenvalue of the "
        "anchors' double-centred distances, at most r - 1).",
    ),
    Option(
        "iai.graph-update",
        "rank",
        OneOf(GRAPH_UPDATES),
        "A_g of a training round: the rank fusion of the clients' lists of the L nearest samples by "
        "their imputed codes, each view's votes weighted by the fusion weights (`rank`, [A]), the kNN "
        "graph of the fused anchor graph (`fused`, paper C), or its union with the start graph A_g⁰ "
        "(`fused-start`: A_g travels as n x 2k indices).",
    ),
    Option(
        "iai.start-target",
        "none",
        OneOf(START_TARGETS),
        "Target of the first training round: `none` ([A]: no P yet, alpha = 0 in that round) or "
        "`start-labels` (P⁰ = 0.9 one-hot(Y⁰) + 0.1 / K).",
    ),
    Option(
        "iai.feature-scaling",
        "auto",
        OneOf(FEATURE_SCALINGS),
        "Each client z-scores its features on its observed rows before the autoencoder "
        "(`standard`), scales every row to unit l2 norm (`row-l2`), keeps them (`none`), or "
        "`auto` ([A]): row-l2 on sparse nonnegative views (>= 90 % zeros: counts, bag of "
        "words), standard on the others.",
    ),
    Option(
        "iai.ae-hidden",
        "256,128",
        PositiveIntegers(),
        "Autoencoder hidden widths d -> ... -> d_z, mirrored decoder ([A]).",
    ),
    Option("iai.embed-dim", 64, Interval(int, 1, None, closed="left"), "Autoencoder code size d_z ([A] 64)."),
    Option(
        "iai.ae-epochs",
        100,
        Interval(int, 1, None, closed="left"),
        "Autoencoder pre-training epochs, once in round 1 ([A] 100).",
    ),
    Option(
        "iai.ae-lr", 1e-3, Interval(float, 0, None, closed="neither"), "Autoencoder Adam step ([A] 1e-3)."
    ),
    Option(
        "iai.ae-batch-size", 256, Interval(int, 1, None, closed="left"), "Autoencoder mini-batch ([A] 256)."
    ),
    Option(
        "iai.gat-hidden",
        64,
        Interval(int, 1, None, closed="left"),
        "Width per head of the first GAT layer ([A] 64).",
    ),
    Option(
        "iai.gat-heads",
        4,
        Interval(int, 1, None, closed="left"),
        "Heads of the first GAT layer, concatenated ([A] 4).",
    ),
    Option(
        "iai.embedding-dim",
        64,
        Interval(int, 1, None, closed="left"),
        "GAT embedding d_h, second layer with one head, linear ([A] 64).",
    ),
    Option(
        "iai.decoder-hidden",
        256,
        Interval(int, 1, None, closed="left"),
        "Hidden width of the attribute decoder and the structure head ([A] 256).",
    ),
    Option(
        "iai.structure-head",
        "mlp",
        OneOf(("mlp", "identity")),
        "Structure logits <H_s,i, H_s,j> with H_s = MLP_s(H) ([A]) or H.",
    ),
    Option(
        "iai.epochs",
        20,
        Interval(int, 1, None, closed="left"),
        "Full-batch GAE epochs per round ([A] 20; the reference settings say 100, 20 as in the measured "
        "reference reconstruction, 5x cheaper).",
    ),
    Option(
        "iai.warmup-epochs",
        0,
        Interval(int, 0, None, closed="left"),
        "GAE epochs of the first training round, the one without a target P ([A] 0: `iai.epochs`).",
    ),
    Option("iai.lr", 1e-3, Interval(float, 0, None, closed="neither"), "GAE Adam step ([A] 1e-3)."),
    Option(
        "iai.alpha",
        1.0,
        Interval(float, 0.0, None, closed="left"),
        "Weight alpha of the clustering loss KL(P || Q) ([A] 1; 0 in the first "
        "training round, which has no P).",
    ),
    Option(
        "iai.negative-ratio",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "Uniformly sampled non-edges per edge of A_g + I in the structure loss ([A] 1; never an n x n loss).",
    ),
    Option(
        "iai.knn-probes",
        4,
        Interval(int, 1, None, closed="left"),
        "Anchor lists each sample is filed under by the server's kNN search of the fused anchor "
        "graph's rows (A_g): a sample is compared only with those that share a list with it "
        "([A] 4; >= iai.anchors makes the search exact).",
    ),
    Option("iai.attribute-loss", True, Boolean(), "Attribute reconstruction MSE (false: ablation M3)."),
    Option(
        "iai.attribute-scale",
        "none",
        OneOf(ATTRIBUTE_SCALES),
        "Scale of the attribute loss M3: the plain MSE ([A] `none`) or the MSE over the mean squared "
        "deviation of the imputed codes (`variance`: 1 for a decoder that outputs the mean, whatever "
        "the codes' scale).",
    ),
    Option("iai.structure-loss", True, Boolean(), "Structure reconstruction BCE (false: ablation M4)."),
    Option(
        "iai.device",
        "cpu",
        OneOf(DEVICES),
        "Where torch-based clients (fmvc-iai) train; `cuda` falls back to the CPU with a "
        "warning when no GPU is present.",
    ),
)


def _check(cfg: dict[str, Any]) -> None:
    """Every sample's anchor graph needs one anchor more than its neighbours; `rank-spectral`
    clusters the rank-fused graph."""
    if cfg["iai.anchor-neighbours"] and cfg["iai.anchors"] < cfg["iai.anchor-neighbours"] + 1:
        raise ConfigError(
            f"run config 'iai.anchors' = {cfg['iai.anchors']} is invalid: must be >= "
            f"'iai.anchor-neighbours' + 1 = {cfg['iai.anchor-neighbours'] + 1}"
        )
    if cfg["iai.pseudo-labels"] == "rank-spectral" and cfg["iai.graph-update"] != "rank":
        raise ConfigError(
            f"run config 'iai.pseudo-labels' = 'rank-spectral' needs 'iai.graph-update' = 'rank' "
            f"(it clusters the rank-fused graph), got {cfg['iai.graph-update']!r}; set "
            "'iai.pseudo-labels' to 'anchor-kmeans' with the fused graph updates"
        )


FAMILY = Family(
    name="iai",
    title="paper C: FMVC-IAI, imputation, graph autoencoders and anchor graphs",
    algorithms=("fmvc-iai",),
    num_server_rounds=6,
    options=OPTIONS,
    check=_check,
    reads_missing_mask=True,
    reads_sparse_views=True,
)
