"""FMVC-IMK (paper B): the family's parameters, each ``imk.*`` key declared once beside its field.

:class:`IMKOptions` declares every ``imk.*`` run-config key (default, constraint, help:
:func:`~fedmf_app.options.schema.option`); the maths takes its group :class:`IMKParams`, the
steps and weights, whose defaults are therefore the run config's. :func:`imk_options` builds it
from a validated run config; the Flower adapters (:mod:`~fedmf_app.methods.imk.client`,
:mod:`~fedmf_app.methods.imk.strategy`) read it and never the config's ``imk.*`` keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fedmf_app.options.constraints import Interval, OneOf
from fedmf_app.options.schema import from_run_config, group, option

__all__ = [
    "CLIENT_INITS",
    "GRAPHS",
    "KNN_MAX_SAMPLES",
    "LABEL_RULES",
    "MISSING_GRAPHS",
    "ORTHO_PLACEMENTS",
    "SERVER_INITS",
    "SERVER_SOLVERS",
    "STANDARDISATIONS",
    "STARTS",
    "IMKOptions",
    "IMKParams",
    "imk_options",
    "resolve_graph",
    "stop_tolerance",
]

ORTHO_PLACEMENTS = ("local", "global")
CLIENT_INITS = ("normalised-indicator", "onehot-plus-0.2")
#: The clustering behind a client's initial H^(m) (run config ``imk.start``): k-means on the view,
#: spectral clustering of its kNN graph, or ``auto`` (spectral on dense views of at most
#: :data:`KNN_MAX_SAMPLES` samples, k-means on sparse nonnegative and on larger ones).
STARTS = ("auto", "kmeans", "spectral")
SERVER_INITS = ("kmeans-concat", "mean")
LABEL_RULES = ("argmax", "kmeans")
SERVER_SOLVERS = ("cg", "splu")
STANDARDISATIONS = ("auto", "zscore", "row-l2", "none")
#: The graph term's graph: shared-anchor graphs (O(N a)) or the exact kNN graphs (O(N^2) secure sum),
#: or ``auto`` (:func:`resolve_graph`).
GRAPHS = ("auto", "anchor", "knn")
#: Which rows a view's graph links under missing views (run config ``imk.missing-graph``): every
#: row, the mean-filled ones included (``filled``), or only the rows the view observes (``observed``).
MISSING_GRAPHS = ("filled", "observed")
#: [A] ``imk.graph = "auto"`` takes the exact kNN graphs up to this many samples (a secure-sum upload
#: of at most 100 MB per client) and the anchor graphs above.
KNN_MAX_SAMPLES = 5000


def resolve_graph(graph: str, num_samples: int) -> str:
    """The graph a run uses: ``graph``, or for ``auto`` kNN up to :data:`KNN_MAX_SAMPLES` samples.

    Parameters
    ----------
    graph : str
        Run config ``imk.graph``, one of :data:`GRAPHS`.
    num_samples : int
        ``N``.

    Returns
    -------
    str
        ``"anchor"`` or ``"knn"``.
    """
    if graph != "auto":
        return graph
    return "knn" if num_samples <= KNN_MAX_SAMPLES else "anchor"


@dataclass(frozen=True)
class IMKParams:
    """Steps and weights of FMVC-IMK (the run config's ``imk.*`` defaults, see docs/imk.md).

    Attributes
    ----------
    lam : float
        :math:`\\lambda`, weight of the graph term (0 switches it off).
    mu : float
        :math:`\\mu`, weight of the orthogonality penalty.
    rho : float
        :math:`\\rho`, ADMM penalty of :math:`H^{(m)} = H`.
    local_iterations : int
        Passes of the client's ``F``, ``W`` and :math:`H^{(m)}` updates per round (1 in Algorithm 1).
    relaxation : float
        [A] Over-relaxation :math:`a` of the ADMM (:func:`~fedmf_app.methods.imk.model.relaxed`;
        1 in Algorithm 1).
    beta : float
        :math:`\\beta`, step on :math:`\\Delta H^{(m)}` (1).
    sigma : float
        :math:`\\sigma'`, CoCoA's curvature factor (1; the literal reading is ``M``).
    ridge : float
        :math:`\\epsilon` of the ``W`` update.
    ortho_placement : {"local", "global"}
        [A] The orthogonality penalty on each :math:`H^{(m)}` (``local``, the clients) or on the
        global ``H`` (``global``, the server, linearised at the previous ``H``).
    """

    lam: float = option(
        "imk.lambda",
        1.0,
        Interval(float, 0.0, None, closed="left"),
        "Weight lambda of the graph term Tr(H^T L H) (0: no graph, ablation case 2; [A] 1, the "
        "best mean rank over the six development sets, see docs/quality.md).",
    )
    mu: float = option(
        "imk.mu",
        0.1,
        Interval(float, 0.0, None, closed="left"),
        "Weight mu of the orthogonality penalty ||H^T H - I||^2.",
    )
    rho: float = option(
        "imk.rho",
        2.0,
        Interval(float, 0, None, closed="neither"),
        "ADMM penalty rho of H^(m) = H ([A] 2: the copies agree in a third of the rounds that 5 "
        "needs; the literal 1 reaches the labels faster still but then drifts away from them, see "
        "docs/imk.md).",
    )
    local_iterations: int = option(
        "imk.local-iterations",
        1,
        Interval(int, 1, None, closed="left"),
        "Passes of a client's updates of F, W and H^(m) per round, against the same H and "
        "multipliers ([A] 1, Algorithm 1; 2 or 3 take fewer rounds and cost some data sets points, "
        "see docs/rounds.md).",
    )
    relaxation: float = option(
        "imk.relaxation",
        1.5,
        Interval(float, 0.0, 2.0, closed="neither"),
        "Over-relaxation a of the ADMM (Boyd et al. 2011, 3.4.3): the server's H update and each "
        "multiplier step read a H^(m) + (1 - a) H instead of H^(m), H the indicator the round started "
        "from; the fixed points are those of a = 1, Algorithm 1 ([A] 1.5: higher ACC on the dense "
        "development sets, which the looser imk.spectral-tol then turns into fewer rounds; see "
        "docs/rounds.md).",
    )
    beta: float = 1.0
    sigma: float = 1.0
    ridge: float = 1e-8
    ortho_placement: str = "local"

    @property
    def local_mu(self) -> float:
        """:math:`\\mu` as the clients see it (0 when the penalty sits on the global ``H``)."""
        return self.mu if self.ortho_placement == "local" else 0.0


@dataclass(frozen=True)
class IMKOptions:
    """Every ``imk.*`` run-config key of a run, typed, each declared beside its field (see
    docs/options.md), and the choices that are not keys.

    Attributes
    ----------
    steps : IMKParams
        ``imk.lambda``, ``imk.mu``, ``imk.rho``, ``imk.local-iterations``, ``imk.relaxation`` and
        the fixed steps.
    graph : {"auto", "anchor", "knn"}
    anchors, neighbours : int
    similarity : {"binary", "heat"}
        [A] Edge weights of the kNN graphs: 0/1 (``binary``) or the heat kernel (not a key).
    missing_graph : {"filled", "observed"}
    start : {"auto", "kmeans", "spectral"}
        ``imk.start``: the clustering of the view behind a client's initial :math:`H^{(m)}`.
    client_init : {"normalised-indicator", "onehot-plus-0.2"}
        [A] Initial :math:`H^{(m)}` from that clustering: entries :math:`1/\\sqrt{n_j}`, or
        FedMVL's one-hot + 0.2 (not a key).
    server_init : {"kmeans-concat", "mean"}
        [A] Initial ``H`` from k-means on the concatenated initial :math:`H^{(m)}`, or their mean
        (not a key).
    labels, standardise : str
    unit_norm : bool
    tol : float
        ``imk.tol``: the stop rule's largest relative change of the objective (0: no stop), in a
        run where some client starts from k-means.
    spectral_tol : float
        ``imk.spectral-tol``: the same, in a run where every client starts from its spectral
        clustering (0: ``tol`` there too).
    stop_patience : int
        ``imk.stop-patience``: rounds in a row within ``tol`` before the run stops.
    server_solver : {"cg", "splu"}
        The server's solve on a kNN graph: warm-started conjugate gradients or a sparse LU made
        once (not a key; an anchor graph is solved exactly by the Woodbury identity).
    """

    steps: IMKParams = group(IMKParams)
    graph: str = option(
        "imk.graph",
        "auto",
        OneOf(GRAPHS),
        "Graph of the graph term: `anchor`, each client's anchor graph Z^(m) (N x a) on shared "
        "anchor samples drawn from the run seed, L = D - Z Lambda^-1 Z^T of the mean Z, O(N a) "
        "secure sum and memory; `knn`, the exact kNN Laplacians (N(N-1)/2 words per client); or "
        "`auto` ([A]): knn up to 5000 samples, anchor above.",
    )
    anchors: int = option(
        "imk.anchors",
        256,
        Interval(int, 2, None, closed="left"),
        "Anchors a of the anchor graph, sample indices drawn from the run seed (at most N are "
        "used) ([A] 256).",
    )
    neighbours: int = option(
        "imk.neighbours",
        5,
        Interval(int, 1, None, closed="left"),
        "Neighbours p of each client's kNN graph, or anchors per sample s of its anchor graph ([A] 5).",
    )
    similarity: str = "binary"
    missing_graph: str = option(
        "imk.missing-graph",
        "filled",
        OneOf(MISSING_GRAPHS),
        "Under missing-rate > 0, the rows each client's graph links: every row, the filled "
        "missing rows included ([A] filled; mean-filled rows are identical, so a kNN graph links "
        "them to each other), or `observed`: only the rows the view observes (the run's mask): "
        "kNN among them, or their nearest observed anchors, a missing row without edges in that "
        "view. The data term uses the filled view either way; no effect at missing-rate 0 (see "
        "docs/imk.md).",
    )
    start: str = option(
        "imk.start",
        "auto",
        OneOf(STARTS),
        "The clustering of its view that a client's initial H^(m) indicates: `kmeans` on the "
        "view (paper B), `spectral`, spectral clustering of the view's 10-nearest-neighbour "
        "graph, or `auto` ([A]): spectral on dense views of up to 5000 samples, kmeans on sparse "
        "nonnegative ones (counts, bag of words; the rule of imk.standardise) and on larger ones, "
        "see docs/imk.md.",
    )
    client_init: str = "normalised-indicator"
    server_init: str = "kmeans-concat"
    labels: str = option(
        "imk.labels",
        "kmeans",
        OneOf(LABEL_RULES),
        "Labels from H by k-means on its normalised rows or by argmax_j H_ij ([A] "
        "kmeans: H is only defined up to a rotation).",
    )
    standardise: str = option(
        "imk.standardise",
        "auto",
        OneOf(STANDARDISATIONS),
        "Per-view preprocessing, per-feature z-score, per-sample l2 (text) or none; `auto` "
        "([A]): row-l2 on sparse nonnegative views (>= 90 % zeros: counts, bag of words), "
        "zscore on the others.",
    )
    unit_norm: bool = True
    tol: float = option(
        "imk.tol",
        1e-3,
        Interval(float, 0.0, None, closed="left"),
        "Stop once |F_t - F_{t-1}| <= tol |F_{t-1}| for imk.stop-patience rounds in a row "
        "(0: run all rounds, whatever imk.spectral-tol says), in a run where some client starts "
        "from k-means (imk.start) ([A] 1e-3; see docs/rounds.md).",
    )
    spectral_tol: float = option(
        "imk.spectral-tol",
        1e-2,
        Interval(float, 0.0, None, closed="left"),
        "imk.tol of a run where every client starts from its spectral clustering (imk.start): "
        "such a run starts near its clustering and its later rounds mostly polish the objective "
        "([A] 1e-2 with imk.relaxation = 1.5; 0: such a run stops by imk.tol too; see docs/rounds.md).",
    )
    stop_patience: int = option(
        "imk.stop-patience",
        3,
        Interval(int, 1, None, closed="left"),
        "Rounds in a row whose objective change is <= imk.tol before the run stops ([A] 3).",
    )
    server_solver: str = "cg"


def stop_tolerance(options: IMKOptions, starts: Sequence[str]) -> tuple[str, float]:
    """[A] The stop rule's tolerance for a run whose clients took ``starts``: ``imk.spectral-tol``
    when every client started from its spectral clustering (and neither it nor ``imk.tol`` is 0),
    else ``imk.tol`` (0: no stop).

    Parameters
    ----------
    options : IMKOptions
    starts : sequence of {"kmeans", "spectral"}, shape (M,)
        The start each client took (what its set-up reply says).

    Returns
    -------
    key : str
        The run-config key of the tolerance.
    tol : float
    """
    spectral = bool(starts) and all(start == "spectral" for start in starts)
    if spectral and options.tol > 0 and options.spectral_tol > 0:
        return "imk.spectral-tol", options.spectral_tol
    return "imk.tol", options.tol


def imk_options(cfg: Mapping[str, Any]) -> IMKOptions:
    """Every ``imk.*`` key of a validated run config, as :class:`IMKOptions` (built once per
    Strategy or client).

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    IMKOptions
    """
    return from_run_config(IMKOptions, cfg)
