"""Run-config keys of paper B's FMVC-IMK (``[tool.flwr.app.config.imk]``): defaults, constraints,
help; the typed parameters built from them are :mod:`fedmf_app.methods.imk.params`."""

from __future__ import annotations

from typing import Any

from fedmf_app.common.graphs import SIMILARITIES
from fedmf_app.methods.imk.params import (
    CLIENT_INITS,
    GRAPHS,
    LABEL_RULES,
    MISSING_GRAPHS,
    ORTHO_PLACEMENTS,
    SERVER_INITS,
    SERVER_SOLVERS,
    STANDARDISATIONS,
)
from fedmf_app.options.constraints import Boolean, Interval, OneOf
from fedmf_app.options.schema import ConfigError, Family, Option

__all__ = ["FAMILY"]

OPTIONS: tuple[Option, ...] = (
    Option(
        "imk.lambda",
        1.0,
        Interval(float, 0.0, None, closed="left"),
        "Weight lambda of the graph term Tr(H^T L H) (0: no graph, ablation case 2; [A] 1, the "
        "best mean rank over the six development sets, see docs/quality.md).",
    ),
    Option(
        "imk.mu",
        0.1,
        Interval(float, 0.0, None, closed="left"),
        "Weight mu of the orthogonality penalty ||H^T H - I||^2.",
    ),
    Option(
        "imk.rho",
        2.0,
        Interval(float, 0, None, closed="neither"),
        "ADMM penalty rho of H^(m) = H ([A] 2: the copies agree in a third of the rounds that 5 "
        "needs; the literal 1 reaches the labels faster still but then drifts away from them, see "
        "docs/imk.md).",
    ),
    Option("imk.beta", 1.0, Interval(float, 0, None, closed="neither"), "Step beta on Delta H^(m) [P]."),
    Option(
        "imk.sigma",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "CoCoA curvature sigma' (1; the literal reading is the number of clients).",
    ),
    Option(
        "imk.latent-dim",
        0,
        Interval(int, 0, None, closed="left"),
        "Latent dimension c ([A] 0: c = k); a view with fewer features uses d_m.",
    ),
    Option(
        "imk.graph",
        "auto",
        OneOf(GRAPHS),
        "Graph of the graph term: `anchor`, each client's anchor graph Z^(m) (N x a) on shared "
        "anchor samples drawn from the run seed, L = D - Z Lambda^-1 Z^T of the mean Z, O(N a) "
        "secure sum and memory; `knn`, the exact kNN Laplacians (N(N-1)/2 words per client); or "
        "`auto` ([A]): knn up to 5000 samples, anchor above.",
    ),
    Option(
        "imk.anchors",
        256,
        Interval(int, 2, None, closed="left"),
        "Anchors a of the anchor graph, sample indices drawn from the run seed (at most N are "
        "used) ([A] 256).",
    ),
    Option(
        "imk.neighbours",
        5,
        Interval(int, 1, None, closed="left"),
        "Neighbours p of each client's kNN graph, or anchors per sample s of its anchor graph ([A] 5).",
    ),
    Option(
        "imk.similarity",
        "binary",
        OneOf(SIMILARITIES),
        "KNN edge weights, 0/1 or the heat kernel exp(-d^2/t), t = mean squared kNN distance "
        "(`knn` graph only; anchor graphs use SFMC's parameter-free weights) ([A] binary).",
    ),
    Option(
        "imk.missing-graph",
        "filled",
        OneOf(MISSING_GRAPHS),
        "Under missing-rate > 0, the rows each client's graph links: every row, the filled "
        "missing rows included ([A] filled; mean-filled rows are identical, so a kNN graph links "
        "them to each other), or `observed`: only the rows the view observes (the run's mask): "
        "kNN among them, or their nearest observed anchors, a missing row without edges in that "
        "view. The data term uses the filled view either way; no effect at missing-rate 0 (see "
        "docs/imk.md).",
    ),
    Option(
        "imk.ortho-placement",
        "local",
        OneOf(ORTHO_PLACEMENTS),
        "Orthogonality penalty on each H^(m) (clients) or on the global H (server, "
        "linearised at the previous H) ([A] local).",
    ),
    Option(
        "imk.nonneg",
        False,
        Boolean(),
        "Project H^(m) onto H >= 0 after each step, as FedMVL's code ([A] false).",
    ),
    Option(
        "imk.client-init",
        "normalised-indicator",
        OneOf(CLIENT_INITS),
        "Initial H^(m) from k-means on the view, entries 1/sqrt(n_j) or FedMVL's "
        "one-hot + 0.2 ([A] normalised-indicator).",
    ),
    Option(
        "imk.server-init",
        "kmeans-concat",
        OneOf(SERVER_INITS),
        "Initial H from k-means on the concatenated initial H^(m), or their mean ([A] kmeans-concat).",
    ),
    Option(
        "imk.labels",
        "kmeans",
        OneOf(LABEL_RULES),
        "Labels from H by k-means on its normalised rows or by argmax_j H_ij ([A] "
        "kmeans: H is only defined up to a rotation unless imk.nonneg is on).",
    ),
    Option(
        "imk.standardise",
        "auto",
        OneOf(STANDARDISATIONS),
        "Per-view preprocessing, per-feature z-score, per-sample l2 (text) or none; `auto` "
        "([A]): row-l2 on sparse nonnegative views (>= 90 % zeros: counts, bag of words), "
        "zscore on the others.",
    ),
    Option("imk.unit-norm", True, Boolean(), "Scale each preprocessed view to ||X^(m)||_F = 1."),
    Option(
        "imk.tol",
        5e-4,
        Interval(float, 0.0, None, closed="left"),
        "Stop once |F_t - F_{t-1}| <= tol |F_{t-1}| for imk.stop-patience rounds in a row "
        "(0: run all rounds) ([A] 5e-4).",
    ),
    Option(
        "imk.stop-patience",
        3,
        Interval(int, 1, None, closed="left"),
        "Rounds in a row whose objective change is <= imk.tol before the run stops ([A] 3).",
    ),
    Option(
        "imk.server-solver",
        "cg",
        OneOf(SERVER_SOLVERS),
        "Server solve of (2 lambda L + M rho I) H = rhs by warm-started conjugate "
        "gradients or a sparse LU made once (`knn` graph; an anchor graph is solved exactly by "
        "the Woodbury identity).",
    ),
)


def _check(cfg: dict[str, Any]) -> None:
    """The masked graph sum needs two clients."""
    if cfg["num-clients"] == 1:
        raise ConfigError(
            "fmvc-imk needs 'num-clients' >= 2: the server learns only the masked sum of the graphs, "
            "and with one client the sum is its own graph"
        )


FAMILY = Family(
    name="imk",
    title="paper B: FMVC-IMK, integrated matrix factorisation and k-means",
    algorithms=("fmvc-imk",),
    num_server_rounds=100,
    options=OPTIONS,
    check=_check,
    reads_sparse_views=True,
)
