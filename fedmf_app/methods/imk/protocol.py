"""The protocol of paper B's FMVC-IMK: what its clients may be asked and what they answer (no Flower).

Stages (besides the shared ones, :mod:`fedmf_app.federated.stages`): the set-up before round 1
(every client's graph, always as a masked sum, its initial indicator and its ground truth), then
one training round per server round. Every run masks (the graph sum), so every run agrees keys.
Fact: the number of clusters ``k``, the width of every indicator; the anchors of the set-up are
drawn from the run seed, so a client checks the ones it is sent.
"""

from __future__ import annotations

from typing import Any

from fedmf_app.common.secure_sum_math import triu_size
from fedmf_app.federated.protocol import Bound, Part, Sizes, Stage
from fedmf_app.federated.stages import CLUSTERS, MAX_CLUSTERS, family_protocol
from fedmf_app.methods.imk.params import resolve_graph

__all__ = ["PROTOCOL", "graph_size"]


def graph_size(sizes: Sizes) -> int:
    """Values of one client's graph in the secure sum: ``n a`` (anchor graph), ``n(n-1)/2`` (kNN)."""
    if resolve_graph(sizes.cfg["imk.graph"], sizes.n) == "anchor":
        return sizes.n * min(int(sizes.cfg["imk.anchors"]), sizes.n)
    return triu_size(sizes.n)


def _nk(sizes: Sizes) -> tuple[int, int]:
    return (sizes.n, sizes.fact("clusters"))


def _graph_bound(sizes: Sizes, request: Any, context: Any) -> Bound:
    return Bound(
        low=0.0, high=1.0, why="an anchor graph's rows lie on the simplex; a kNN similarity is in [0, 1]"
    )


def _secure(sizes: Sizes) -> bool:
    return sizes.secure


SETUP = Stage(
    "setup",
    "fit",
    before_round_1=True,
    states_facts=True,
    masked=lambda cfg: True,
    tag="graph",
    mask_time="mask_s",
    request_config=("anchors",),
    reply=(
        Part(
            "graph",
            shape=lambda s: (graph_size(s),),
            shape_text="n x a (anchor graph Z^(m), dense) or n(n-1)/2 (kNN similarity S^(m))",
            summed=True,
            bound=_graph_bound,
            learns="(never in the clear: always masked)",
            learns_summed="the sum of the graphs only",
        ),
        Part(
            "initial H^(m)",
            shape=_nk,
            shape_text="n x k",
            learns=(
                "each client's initial indicator (a clustering of its view, imk.start: by default "
                "spectral on a dense view of up to 5000 samples, k-means otherwise; the server's "
                "initial H, k-means on their concatenation, needs each)"
            ),
        ),
        Part(
            "ground truth",
            shape=lambda s: (s.n,),
            shape_text="n",
            kinds="iu",
            optional=True,
            learns=(
                "its ground-truth labels, if it has any: they travel at set-up, and every round is "
                "scored against them"
            ),
        ),
        Part("kernel_s", learns="the time of its set-up"),
        Part("mask_s", learns="the time of its masking"),
        Part("upload_bytes", kinds="i", learns="the size of its masked graph"),
        Part(
            "start",
            kinds="s",
            learns=(
                "which clustering its initial H^(m) indicates (kmeans or spectral; under imk.start "
                "= auto, whether its view looks like counts, which the handshake tells already); the "
                "server stops by imk.spectral-tol when every client started spectral"
            ),
        ),
        Part("peak_rss_mb", learns="the peak memory of its process, after building its graph"),
    ),
    doc="before round 1: the graph sum (anchors from the run seed, imk.graph = anchor)",
)

ROUND = Stage(
    "round",
    "fit",
    rounds=(1, None),
    states_facts=True,
    masked=lambda cfg: bool(cfg["secure-aggregation"]),
    tag="h",
    request=(
        Part("H", shape=_nk, shape_text="n x k", learns="the global indicator H: every client sees it"),
    ),
    reply=(
        Part(
            "H^(m)",
            shape=_nk,
            shape_text="n x k",
            summed=True,
            learns="each client's indicator H^(m)",
            learns_summed="sum_m H^(m) only",
        ),
        Part("residual", summed=True, learns="||R^(m)||_F", learns_summed="the sum only"),
        Part(
            "ortho",
            summed=True,
            learns="the orthogonality term ||H^(m)T H^(m) - I||^2",
            learns_summed="the sum only",
        ),
        Part(
            "h_squared_norm",
            summed=True,
            learns="||H^(m)||^2 (which H^(m) gives anyway)",
            learns_summed="sum_m ||H^(m)||^2 (the consensus gap); with m = 2 it gives ||H^1 - H^2||",
        ),
        Part("alpha", present=lambda s: not s.secure, learns="the view weight alpha^(m)"),
        Part("kernel_s", learns="the time of its local work"),
        Part("secagg_s", present=_secure, learns="the time of its masking"),
    ),
    doc="every training round",
)

#: Paper B's protocol (``fmvc-imk``).
PROTOCOL = family_protocol(
    "imk",
    (SETUP, ROUND),
    facts=(CLUSTERS,),
    caps=(MAX_CLUSTERS,),
    masks=lambda cfg: True,
    notes="The server keeps only sum_m Phi^(m), masked or not: it reads every round through its sums.",
)
