"""The protocol of paper C's FMVC-IAI: what its clients may be asked and what they answer (no Flower).

Stages (besides the shared ones, :mod:`fedmf_app.federated.stages`): the set-up round (round 1:
each client's neighbour lists of its observed rows), then one training round per server round.
Fact: the number of clusters ``K``. The sizes that follow from it and the run config (the depth
``L`` of the neighbour lists, the anchors ``r`` of the anchor distances) are capped by the node:
``max-list-depth`` and ``max-anchors``, by default what the method's own defaults need, so a run
config asking for deeper lists (up to the complete ordering of every view's samples) is refused.
"""

from __future__ import annotations

from fedmf_app.federated.protocol import Cap, Part, Sizes, Stage
from fedmf_app.federated.stages import (
    CLUSTERS,
    FIRST_ROUND_TRUTH,
    MAX_CLUSTERS,
    PROCESS_MEMORY,
    family_protocol,
)
from fedmf_app.methods.iai.global_assignment import adaptive_knn
from fedmf_app.methods.iai.params import ANCHOR_DISTANCE_RULES, IAIParams, iai_params
from fedmf_app.methods.iai.rank_fusion import adaptive_rank_depth

__all__ = ["PROTOCOL", "sizes_params"]

#: ``iai.anchors`` by default (the default cap on the anchors).
_DEFAULT_ANCHORS = IAIParams(num_clusters=1).anchors


def sizes_params(sizes: Sizes) -> IAIParams:
    """The run's :class:`~fedmf_app.methods.iai.params.IAIParams` for these sizes (K from the facts)."""
    return iai_params(sizes.cfg, num_clusters=max(sizes.fact("clusters"), 1), num_samples=sizes.n)


def _list_depth(sizes: Sizes) -> int:
    params = sizes_params(sizes)
    return max(params.list_depth, params.rank_depth if params.graph_update == "rank" else 0)


def _distance_width(sizes: Sizes) -> int:
    params = sizes_params(sizes)
    return params.anchors if params.pseudo_labels in ANCHOR_DISTANCE_RULES else params.num_clusters


def _n_index(sizes: Sizes) -> tuple[int, int]:
    return (-1, sizes.n)


MAX_LIST_DEPTH = Cap(
    "max-list-depth",
    "the deepest neighbour list the node sends; default: what the adaptive defaults need at this n and K "
    "(5 k, k = clamp(n / 2K, 5, 20): at most 100)",
    lambda cfg, own, facts: adaptive_rank_depth(
        adaptive_knn(own["n"], max(int(facts.get("clusters", 1)), 1)), own["n"]
    ),
    measure=_list_depth,
    what="neighbour lists of depth L",
)

MAX_ANCHORS = Cap(
    "max-anchors",
    "the most anchors the node measures distances to; default: iai.anchors' default, "
    f"{_DEFAULT_ANCHORS} (at most n)",
    lambda cfg, own, facts: min(_DEFAULT_ANCHORS, own["n"]),
    measure=lambda sizes: sizes_params(sizes).anchors,
    what="distances to r anchors, r",
)


def _secure(sizes: Sizes) -> bool:
    return sizes.secure


SETUP = Stage(
    "setup",
    "fit",
    rounds=(1, 1),
    states_facts=True,
    masked=lambda cfg: False,
    reply=(
        Part(
            "neighbour lists",
            shape=lambda s: (s.n, sizes_params(s).list_depth),
            shape_text="n x L (L = iai.rank-depth, 5 k by default; k with iai.start-graph = knn)",
            kinds="iu",
            index_range=_n_index,
            learns=(
                "each client's L nearest observed rows of every observed row, nearest first, no distances: "
                "an ordering of each view's samples"
            ),
        ),
        Part("kernel_s", learns="the time of its set-up"),
        FIRST_ROUND_TRUTH,
        PROCESS_MEMORY,
    ),
    doc="round 1: the autoencoder and the neighbour lists",
)

ROUND = Stage(
    "round",
    "fit",
    rounds=(2, None),
    states_facts=True,
    masked=lambda cfg: bool(cfg["secure-aggregation"]),
    tag="e",
    request=(
        Part(
            "A_g neighbours",
            shape=lambda s: (s.n, None),
            shape_text="n x k",
            kinds="iu",
            index_range=_n_index,
            learns="the global graph: every client sees it",
        ),
        Part(
            "Y",
            shape=lambda s: (s.n,),
            shape_text="n",
            kinds="iu",
            index_range=lambda s: (0, max(s.fact("clusters"), 1)),
            learns="the pseudo-labels: every client sees them",
        ),
        Part(
            "P",
            shape=lambda s: (None, max(s.fact("clusters"), 1)),
            shape_text="n x K (0 x K before any)",
            learns="the target distribution: every client sees it",
        ),
        Part(
            "anchors",
            shape=lambda s: (sizes_params(s).anchors,),
            shape_text="r",
            kinds="iu",
            index_range=lambda s: (0, s.n),
            learns="the shared anchor samples: every client sees them",
        ),
    ),
    reply=(
        Part(
            "distances",
            shape=lambda s: (s.n, _distance_width(s)),
            shape_text=(
                "n x r (anchor distances D^(m), the default rules) or n x K (prototype distances E^(m))"
            ),
            summed=True,
            learns=(
                "each client's squared distances from every sample to the anchors in its embedding: "
                "enough to rebuild its embedding up to a rotation and shift (landmark MDS); or to the "
                "K prototypes"
            ),
            learns_summed="their sum only: the geometry of the concatenated embedding",
        ),
        Part(
            "code neighbour lists",
            shape=lambda s: (s.n, sizes_params(s).rank_depth),
            shape_text="n x L",
            kinds="iu",
            index_range=_n_index,
            present=lambda s: sizes_params(s).graph_update == "rank",
            learns=(
                "with iai.graph-update = rank (the default): every sample's L nearest samples by its "
                "imputed code, in rank order"
            ),
        ),
        Part(
            "anchor indices",
            shape=lambda s: (s.n, None),
            shape_text="n x s",
            kinds="iu",
            index_range=lambda s: (0, sizes_params(s).anchors),
            present=lambda s: sizes_params(s).uses_anchor_graphs,
            learns=(
                "with the fused graph updates or anchor-spectral: each client's anchor graph G^(m) "
                "(its support)"
            ),
        ),
        Part(
            "anchor values",
            shape=lambda s: (s.n, None),
            shape_text="n x s",
            present=lambda s: sizes_params(s).uses_anchor_graphs,
            learns="its weights",
        ),
        Part("loss_attribute", summed=True, learns="the attribute loss", learns_summed="the mean only"),
        Part("loss_structure", summed=True, learns="the structure loss", learns_summed="the mean only"),
        Part("loss_clustering", summed=True, learns="the clustering loss", learns_summed="the mean only"),
        Part(
            "emd",
            optional=True,
            learns="EMD(P, Q^(m)) of each client, from round 3 on (the fusion may weigh by it)",
        ),
        Part("kernel_s", learns="the time of its training round"),
        Part("secagg_s", present=_secure, learns="the time of its masking"),
        PROCESS_MEMORY,
    ),
    doc="every training round (rounds 2 and later)",
)

#: Paper C's protocol (``fmvc-iai``).
PROTOCOL = family_protocol(
    "iai",
    (SETUP, ROUND),
    facts=(CLUSTERS,),
    caps=(MAX_CLUSTERS, MAX_LIST_DEPTH, MAX_ANCHORS),
    handshake_extra=(Part("num-observed", kinds="i", learns="how many of its rows it observes"),),
    notes=(
        "The missing-view mask is generated from the run seed, so every party knows which samples each "
        "view lacks. The neighbour lists, anchor graphs and EMDs stay in the clear under secure "
        "aggregation: the rank fusion counts each view's votes."
    ),
)
