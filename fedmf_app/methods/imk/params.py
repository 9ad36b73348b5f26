"""FMVC-IMK (paper B): the family's parameters, typed, built once from the validated run config.

:func:`imk_options` turns the ``imk.*`` keys of a validated run config into one
:class:`IMKOptions`; the Flower adapters (:mod:`~fedmf_app.methods.imk.client`,
:mod:`~fedmf_app.methods.imk.strategy`) read it and never the config's ``imk.*`` keys. The maths
takes :class:`IMKParams`, its steps and weights. The keys themselves (defaults, constraints, help)
are :mod:`fedmf_app.methods.imk.options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    "IMKOptions",
    "IMKParams",
    "imk_options",
    "imk_params",
    "resolve_graph",
]

ORTHO_PLACEMENTS = ("local", "global")
CLIENT_INITS = ("normalised-indicator", "onehot-plus-0.2")
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
    """Steps and weights of FMVC-IMK (defaults: see docs/imk.md).

    Attributes
    ----------
    lam : float
        :math:`\\lambda`, weight of the graph term (0 switches it off).
    mu : float
        :math:`\\mu`, weight of the orthogonality penalty.
    rho : float
        :math:`\\rho`, ADMM penalty of :math:`H^{(m)} = H`.
    beta : float
        :math:`\\beta`, step on :math:`\\Delta H^{(m)}`.
    sigma : float
        :math:`\\sigma'`, CoCoA's curvature factor (1; the literal reading is ``M``).
    ridge : float
        :math:`\\epsilon` of the ``W`` update.
    ortho_placement : {"local", "global"}
    nonneg : bool
        [A] project :math:`H^{(m)} \\leftarrow \\max(H^{(m)}, 0)` after the step (FedMVL).
    """

    lam: float = 0.1
    mu: float = 0.1
    rho: float = 5.0
    beta: float = 1.0
    sigma: float = 1.0
    ridge: float = 1e-8
    ortho_placement: str = "local"
    nonneg: bool = False

    @property
    def local_mu(self) -> float:
        """:math:`\\mu` as the clients see it (0 when the penalty sits on the global ``H``)."""
        return self.mu if self.ortho_placement == "local" else 0.0


@dataclass(frozen=True)
class IMKOptions:
    """Every ``imk.*`` run-config key of a run, typed (see docs/options.md for each).

    Attributes
    ----------
    steps : IMKParams
        ``imk.lambda``, ``imk.mu``, ``imk.rho``, ``imk.beta``, ``imk.sigma``,
        ``imk.ortho-placement``, ``imk.nonneg``.
    latent_dim : int
        ``imk.latent-dim`` (0: ``k``).
    graph : {"auto", "anchor", "knn"}
    anchors, neighbours : int
    similarity : {"binary", "heat"}
    missing_graph : {"filled", "observed"}
    client_init, server_init, labels, standardise : str
    unit_norm : bool
    tol : float
        ``imk.tol``: the stop rule's largest relative change of the objective (0: no stop).
    stop_patience : int
        ``imk.stop-patience``: rounds in a row within ``tol`` before the run stops.
    server_solver : {"cg", "splu"}
    """

    steps: IMKParams
    latent_dim: int
    graph: str
    anchors: int
    neighbours: int
    similarity: str
    missing_graph: str
    client_init: str
    server_init: str
    labels: str
    standardise: str
    unit_norm: bool
    tol: float
    stop_patience: int
    server_solver: str


def imk_params(cfg: Mapping[str, Any]) -> IMKParams:
    """Steps and weights of FMVC-IMK from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    IMKParams
    """
    return IMKParams(
        lam=cfg["imk.lambda"],
        mu=cfg["imk.mu"],
        rho=cfg["imk.rho"],
        beta=cfg["imk.beta"],
        sigma=cfg["imk.sigma"],
        ortho_placement=cfg["imk.ortho-placement"],
        nonneg=cfg["imk.nonneg"],
    )


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
    return IMKOptions(
        steps=imk_params(cfg),
        latent_dim=int(cfg["imk.latent-dim"]),
        graph=str(cfg["imk.graph"]),
        anchors=int(cfg["imk.anchors"]),
        neighbours=int(cfg["imk.neighbours"]),
        similarity=str(cfg["imk.similarity"]),
        missing_graph=str(cfg["imk.missing-graph"]),
        client_init=str(cfg["imk.client-init"]),
        server_init=str(cfg["imk.server-init"]),
        labels=str(cfg["imk.labels"]),
        standardise=str(cfg["imk.standardise"]),
        unit_norm=bool(cfg["imk.unit-norm"]),
        tol=float(cfg["imk.tol"]),
        stop_patience=int(cfg["imk.stop-patience"]),
        server_solver=str(cfg["imk.server-solver"]),
    )
