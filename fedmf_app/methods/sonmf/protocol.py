"""The protocol of paper A's family: what its clients may be asked and what they answer (no Flower).

Stages (besides the shared ones, :mod:`fedmf_app.federated.stages`): the sketch start before
round 1 (``sonmf.start = "sketch"``: every client's share of the sketch, always as a masked sum),
then one training round per server round. Facts: the number of clusters and the rank ``r``, which a
client checks against the run config's rule (``sonmf.rank``, or the auto rule
``sonmf.rank-per-cluster`` times the clusters) and against its node's cap ``max-rank``: the rank
sets the width of every upload and of the sketch (``l = min(r + 10, n)``), the sizes a server
would raise to learn more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT, planted_rank
from fedmf_app.federated.protocol import Bound, Cap, Fact, Part, Sizes, Stage
from fedmf_app.federated.stages import (
    CLUSTERS,
    FIRST_ROUND_TRUTH,
    MAX_CLUSTERS,
    PROCESS_MEMORY,
    family_protocol,
)
from fedmf_app.methods.sonmf.params import SONMFOptions, start
from fedmf_app.methods.sonmf.start import OVERSAMPLING
from fedmf_app.methods.sonmf.upload_bounds import UploadBounds, gradient_bound, loss_bound

__all__ = ["PROTOCOL", "bounded", "sketch_width", "unit_views"]

#: The auto rule's components per cluster with the default options (the default cap's factor).
_DEFAULT_RANK_PER_CLUSTER = SONMFOptions().rank_per_cluster


def sketch_width(rank: int, n: int) -> int:
    """Columns ``l = min(r + OVERSAMPLING, n)`` of the sketch's test matrix."""
    return min(rank + OVERSAMPLING, n)


def unit_views(cfg: Mapping[str, Any]) -> bool:
    """Whether every view is scaled to unit Frobenius norm: ``view-normalisation = "frobenius"`` on
    data read from a file (the synthetic generator's views are not prepared)."""
    return cfg["view-normalisation"] == "frobenius" and cfg["dataset"] != "synthetic"


def bounded(cfg: Mapping[str, Any]) -> bool:
    """Whether the model bounds a client's uploads in this run: unit-norm views (:func:`unit_views`);
    a run's ``U`` solver is the assignment ascent, whose ``U_p`` has exactly orthonormal or zero
    columns."""
    return unit_views(cfg)


def _rank_rule(cfg: Mapping[str, Any], clusters: int, rank_per_cluster: int) -> int:
    """The largest rank the auto rule gives (before the cap at the views' dimensions)."""
    if cfg["dataset"] == "synthetic":
        return planted_rank(cfg["sonmf.rank"])
    return rank_per_cluster * clusters if clusters else AUTO_RANK_DEFAULT


def _rank_problem(
    cfg: Mapping[str, Any], own: Mapping[str, int], facts: Mapping[str, int], caps: Mapping[str, int]
) -> str | None:
    rank = int(facts["rank"])
    if rank < 1:
        return "a rank is at least 1"
    if cfg["sonmf.rank"] > 0:
        if rank != cfg["sonmf.rank"]:
            return f"the run config says sonmf.rank = {cfg['sonmf.rank']}"
    elif rank > (rule := _rank_rule(cfg, int(facts["clusters"]), cfg["sonmf.rank-per-cluster"])):
        return f"the run config's auto rank is at most {rule}"
    if "max-rank" in caps and rank > caps["max-rank"]:
        return f"above the node's cap 'max-rank' = {caps['max-rank']} (every upload has r rows)"
    return None


RANK = Fact(
    "rank",
    "paper A's rank r: sonmf.rank, or the auto rule (sonmf.rank-per-cluster times K, 6 when K is "
    "unknown, the planted rank on synthetic data); every upload is r x n and the sketch n x (r + 10)",
    _rank_problem,
)

MAX_RANK = Cap(
    "max-rank",
    "the largest rank the node accepts (it also caps the sketch at r + 10 columns); default: what the "
    f"default auto rule needs, {_DEFAULT_RANK_PER_CLUSTER} per cluster (6 when K is unknown, the "
    "planted rank on synthetic data)",
    lambda cfg, own, facts: _rank_rule(cfg, int(facts.get("clusters", 0)), _DEFAULT_RANK_PER_CLUSTER),
)


def _rn(sizes: Sizes) -> tuple[int, int]:
    return (sizes.fact("rank"), sizes.n)


def _diagnostics(sizes: Sizes) -> bool:
    return bool(sizes.cfg["sonmf.diagnostics"])


def _secure(sizes: Sizes) -> bool:
    return sizes.secure


def _upload_bound(sizes: Sizes, request: Any, context: UploadBounds | None) -> Bound | None:
    if context is None or context.upload is None or not bounded(sizes.cfg):
        return None
    low = 0.0 if sizes.cfg["algorithm"] == "fedmavg" else None
    return Bound(
        norm=context.upload, low=low, why="the local steps from V^s on a unit-norm view, orthonormal U_p"
    )


def _gradient_bound(sizes: Sizes, request: Any, context: UploadBounds | None) -> Bound | None:
    if context is None or not bounded(sizes.cfg):
        return None
    return Bound(norm=gradient_bound(context.v_norm), why="2(||V^s|| + ||X_p||) with ||X_p||_F = 1")


def _loss_bound(sizes: Sizes, request: Any, context: UploadBounds | None) -> Bound | None:
    if context is None or not bounded(sizes.cfg):
        return None
    return Bound(low=0.0, high=loss_bound(context.v_norm), why="(||X_p|| + ||V^s||)^2 with ||X_p||_F = 1")


def _sketch_bound(sizes: Sizes, request: Any, context: float | None) -> Bound | None:
    if context is None or not unit_views(sizes.cfg):
        return None
    return Bound(norm=context, why="||X_p^T X_p Omega|| <= ||X_p||_F^2 ||Omega||_F on a unit-norm view")


SKETCH = Stage(
    "sketch",
    "get_properties",
    when=lambda cfg: start(cfg) == "sketch",
    before_round_1=True,
    states_facts=True,
    masked=lambda cfg: True,
    tag="sonmf-sketch",
    reply=(
        Part(
            "sketch",
            shape=lambda s: (s.n, sketch_width(s.fact("rank"), s.n)),
            shape_text="n x l, l = min(r + 10, n)",
            summed=True,
            bound=_sketch_bound,
            learns="(never in the clear: the share is always masked)",
            learns_summed=(
                "the sum (sum_p X_p^T X_p) Omega only: the stacked views' sample Gram matrix in l random "
                "directions (Omega follows from the run seed); never one view's"
            ),
        ),
    ),
    doc="before round 1, when sonmf.start is sketch (the default on real data with m >= 2)",
)

ROUND = Stage(
    "round",
    "fit",
    rounds=(1, None),
    states_facts=True,
    masked=lambda cfg: bool(cfg["secure-aggregation"]),
    tag="upload",
    request=(
        Part(
            "broadcast V",
            shape=_rn,
            shape_text="r x n",
            learns="V-bar^s (fedsonmf, fedmgs) or V^s (fedmavg, fedvra-u): every client sees it",
        ),
    ),
    reply=(
        Part(
            "upload",
            shape=_rn,
            shape_text="r x n",
            summed=True,
            bound=_upload_bound,
            learns=(
                "each client's array: fedsonmf its pre-proximal copy V-hat_p (about U_p^T X_p: r "
                "combinations of its features per sample; in a view narrower than r, its features "
                "themselves), the server-only variant and fedmgs G_p, fedmavg V_p, fedvra-u "
                "V_p + Lambda_p/rho"
            ),
            learns_summed="their mean only",
        ),
        Part(
            "gradient",
            shape=_rn,
            shape_text="r x n",
            summed=True,
            present=_diagnostics,
            bound=_gradient_bound,
            learns=(
                "with sonmf.diagnostics: grad_V f_p = 2(U_p^T U_p V^s - U_p^T X_p), so with V^s "
                "known U_p^T X_p exactly"
            ),
            learns_summed="the mean gradient only: sum_p U_p^T X_p",
        ),
        Part(
            "loss",
            summed=True,
            present=_diagnostics,
            bound=_loss_bound,
            learns="with diagnostics: f_p = ||X_p - U_p V^s||^2",
            learns_summed="the mean only",
        ),
        Part(
            "basis_residual",
            summed=True,
            present=_diagnostics,
            learns="with diagnostics: the U step's residual R_U",
            learns_summed="the mean only",
        ),
        Part("partition-id", kinds="i", learns="its partition id"),
        Part("kernel_s", learns="the time of its local work"),
        Part("secagg_s", present=_secure, learns="the time of its masking"),
        FIRST_ROUND_TRUTH,
        PROCESS_MEMORY,
    ),
    doc="every training round",
)

#: Paper A's protocol (``fedsonmf``, ``fedmavg``, ``fedmgs``, ``fedvra-u``).
PROTOCOL = family_protocol(
    "sonmf",
    (SKETCH, ROUND),
    facts=(CLUSTERS, RANK),
    caps=(MAX_CLUSTERS, MAX_RANK),
    masks=lambda cfg: bool(cfg["secure-aggregation"]) or start(cfg) == "sketch",
    notes=(
        "The sketch start sends nothing down: every party draws Omega from the seed, and the clients "
        "receive only V^1, computed from the sum, like every later broadcast. Its masked sum needs "
        "m >= 2: with one client the start is random."
    ),
)
