"""Run-config schema: every key of ``[tool.flwr.app.config]``, its type, default, check and meaning.

The defaults here and in ``pyproject.toml`` are the same (a test keeps them equal); the README's
table of keys is printed by ``python -m fedmf_app.options``. :func:`validate_run_config` turns a raw
run config (``context.run_config``) into a complete, type-checked dict, or raises
:class:`ConfigError` naming the key, the value and the allowed values, so that a bad run stops
before round 1.

Keys marked [A] in their description implement an assumption of ``spec/ALGORITHMS.md`` (a choice
the papers do not state) as a named option with the documented default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fedmf_app.data.embedded import EMBEDDED
from fedmf_app.data.preprocess import NEGATIVE_VALUES, VIEW_NORMALISATIONS
from fedmf_app.methods.sonmf.adapted_updates import FEDMAVG_SCHEDULES, FedVRAParams
from fedmf_app.methods.iai.deep_clustering import FUSION_WEIGHTS
from fedmf_app.common.graphs import SIMILARITIES
from fedmf_app.methods.iai.sample_graphs import START_GRAPHS
from fedmf_app.methods.iai.params import (
    DEVICES,
    FEATURE_SCALINGS,
    IMPUTATIONS,
    PSEUDO_LABELS,
    GAEParams,
    IAIParams,
)
from fedmf_app.methods.imk.updates import (
    CLIENT_INITS,
    LABEL_RULES,
    ORTHO_PLACEMENTS,
    SERVER_INITS,
    SERVER_SOLVERS,
    STANDARDISATIONS,
    IMKParams,
)
from fedmf_app.data.missing_views import MISSING_FILLS
from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions
from fedmf_app.methods.sonmf.updates import SERVER_STEPS, V_UPDATES, SONMFParams

__all__ = [
    "ConfigError",
    "basis_init",
    "Option",
    "OPTIONS",
    "defaults",
    "fedmgs_params",
    "fedvra_params",
    "imk_params",
    "iai_params",
    "markdown_table",
    "resolve_rank",
    "synthetic_rank",
    "sonmf_params",
    "validate_run_config",
]


class ConfigError(ValueError):
    """A run-config value is unknown, of the wrong type or out of range."""


@dataclass(frozen=True)
class Option:
    """One run-config key.

    Parameters
    ----------
    key : str
        Name in ``[tool.flwr.app.config]``.
    kind : type
        ``int``, ``float``, ``bool`` or ``str``.
    default : int, float, bool or str
    allowed : str
        Human-readable description of the allowed values (used in error messages).
    check : callable
        Predicate on the (type-converted) value.
    help : str
        Meaning, for the README.
    """

    key: str
    kind: type
    default: Any
    allowed: str
    check: Callable[[Any], bool]
    help: str


def _any(_: Any) -> bool:
    return True


def _at_least(low: float) -> Callable[[Any], bool]:
    return lambda x: x >= low


def _positive(x: float) -> bool:
    return x > 0


def _one_of(*values: str) -> Callable[[Any], bool]:
    return lambda x: x in values


def _widths(text: str) -> bool:
    parts = text.split(",")
    return all(p.strip().isdigit() and int(p) > 0 for p in parts)


def _dataset(value: str) -> bool:
    return value == "synthetic" or value in EMBEDDED or value.lower().endswith((".mat", ".npz"))


ALGORITHM_NAMES: tuple[str, ...] = ("fedsonmf", "fedmavg", "fedmgs", "fedvra-u", "fmvc-imk", "fmvc-iai")
SECURE_SUMS = ("masking", "none")
RESIDUAL_NORMALISATIONS = ("ratio", "running-average")
#: Algorithms that read the missing-view mask themselves; the others get views whose missing rows
#: are filled (run config ``missing-fill``, :func:`fedmf_app.data.missing_views.fill_missing_rows`).
MASK_READING_ALGORITHMS: tuple[str, ...] = ("fmvc-iai",)
BASIS_INITS = ("auto", "random", "kmeans")

OPTIONS: tuple[Option, ...] = (
    # --- the run --------------------------------------------------------------------------------
    Option("algorithm", str, "fedsonmf", "one of: " + ", ".join(ALGORITHM_NAMES),
           _one_of(*ALGORITHM_NAMES), "Algorithm to run."),
    Option("num-server-rounds", int, 100, "an integer >= 1", _at_least(1),
           "Communication rounds T ([A] fixed T, spec 1.7)."),
    Option("num-clients", int, 10, "an integer >= 1", _at_least(1),
           "Clients m, one view each; the federation must have exactly this many SuperNodes."),
    Option("seed", int, 0, "an integer >= 0", _at_least(0),
           "Seed of every random stream (data, initial U_p, initial V)."),
    Option("out-dir", str, "results", "a folder path", _any,
           "Where run folders go; a relative path is taken from the ServerApp's working folder."),
    Option("run-name", str, "", "a folder name (empty: algorithm, time and seed)", _any,
           "Name of this run's folder under out-dir."),
    Option("diagnostics", bool, True, "true or false", _any,
           "Clients also upload grad_V f_p(U_p^{s,0}, V^s) (r x n) and two scalars so the server can "
           "compute the objective and the stationarity residual; doubles the upload."),
    Option("round-timeout-s", float, 600.0, "a number > 0", _positive,
           "A round (or the handshake before round 1) whose replies take longer fails the run."),
    Option("connect-timeout-s", float, 30.0, "a number > 0", _positive,
           "How long the server waits for num-clients SuperNodes before round 1."),
    # --- data -----------------------------------------------------------------------------------
    Option("dataset", str, "synthetic",
           "synthetic, an embedded name (" + ", ".join(sorted(EMBEDDED)) + ") or the path of a "
           ".mat or .npz file", _dataset,
           "Data set, one view per client: `synthetic` (the planted generator of paper A, spec "
           "1.11), an embedded real data set (`hw`: UCI Multiple Features, 6 views, 2000 samples, "
           "10 classes, CC BY 4.0), or a multi-view file (absolute path; see the README's data "
           "section). A SuperNode's node config `data-file` overrides it for that node."),
    Option("negative-values", str, "min-max", "one of: " + ", ".join(NEGATIVE_VALUES),
           _one_of(*NEGATIVE_VALUES),
           "Real data: a view with negative entries is scaled per feature to [0, 1] (`min-max`), "
           "shifted by its minimum (`shift`) or refused (`error`); nonnegative views are kept "
           "([A] min-max; the paper's data are nonnegative)."),
    Option("view-normalisation", str, "frobenius", "one of: " + ", ".join(VIEW_NORMALISATIONS),
           _one_of(*VIEW_NORMALISATIONS),
           "Real data: each client divides its view by its Frobenius norm (paper A's protocol) "
           "or keeps it (`none`)."),
    Option("num-clusters", int, 0, "an integer >= 0", _at_least(0),
           "Clusters k of the final clustering (k-means on V^T for paper A); 0: the number of "
           "ground-truth classes when the clients have labels, else the rank."),
    Option("num-samples", int, 200, "an integer >= 1", _at_least(1),
           "Synthetic: samples n ([A] 200)."),
    Option("view-dim", int, 20, "an integer >= 1", _at_least(1),
           "Synthetic: features per view d_p (paper: 20)."),
    Option("heterogeneity", float, 0.0, "a number in [0, 1]", lambda h: 0.0 <= h <= 1.0,
           "Synthetic: heterogeneity h; V_p* = (1 - h) V0 + h E_p ([A] generator)."),
    Option("noise", float, 0.01, "a number >= 0", _at_least(0.0),
           "Synthetic: standard deviation of the additive Gaussian noise ([A] 0.01)."),
    # --- fedsonmf (paper A) ---------------------------------------------------------------------
    Option("rank", int, 0, "an integer >= 0 and <= every view's dimension", _at_least(0),
           "Rank r; 0 = auto ([A]): synthetic data 6 (paper), real data the number of clusters "
           "(num-clusters, else the ground-truth classes; paper: r = #clusters) capped at the "
           "smallest view's dimension, since U_p^T U_p = I needs d_p >= r (6 without either)."),
    Option("local-steps", int, 10, "an integer >= 1", _at_least(1),
           "Local steps tau per round ([A] 10)."),
    Option("local-lr", float, 0.01, "a number > 0", _positive,
           "Local step alpha ([A] 0.01; theory-safe 1/(10 L2 eta_g tau) = 1/300 is ~3x slower)."),
    Option("global-lr", float, 1.5, "a number > 0", _positive,
           "Server step eta_g ([A] 1.5; theory needs >= 3/2)."),
    Option("mu", float, 0.01, "a number >= 0", _at_least(0.0),
           "Weight of the joint-sparsity term mu ||V||_{2,1} ([A] 0.01)."),
    Option("rho1", float, 1.0, "a number >= 0", _at_least(0.0),
           "Proximal weight of the U subproblem ([A] 1)."),
    Option("drift-correction", bool, True, "true or false", _any,
           "Apply the drift correction C_p (false: the uncorrected ablation)."),
    Option("v-update", str, "local-copies", "one of: " + ", ".join(V_UPDATES), _one_of(*V_UPDATES),
           "fedsonmf: `server` is the ablation in which clients run local-steps U steps with V "
           "fixed at V^s, upload their average grad_V f_p, and only the server updates V "
           "(one prox-gradient step of size server-step)."),
    Option("server-step", str, "global-times-local", "one of: " + ", ".join(SERVER_STEPS),
           _one_of(*SERVER_STEPS),
           "Step of the server-only V update (v-update=server): eta_g * alpha, or the effective "
           "eta~ = eta_g * tau * alpha ([A] eta_g * alpha, spec 1.8b's ablation reading)."),
    # --- adapted baselines of paper A (spec 1.10) -----------------------------------------------
    Option("fedmgs-step", str, "effective", "one of: " + ", ".join(SERVER_STEPS),
           _one_of(*SERVER_STEPS),
           "fedmgs: server step, eta_g * alpha or eta~ = eta_g * tau * alpha ([A] eta~, the proposed "
           "method's step per round)."),
    Option("fedmavg-schedule", str, "decreasing", "one of: " + ", ".join(FEDMAVG_SCHEDULES),
           _one_of(*FEDMAVG_SCHEDULES),
           "fedmavg: local steps in round s, ceil(tau / sqrt(s)) or tau ([A] decreasing)."),
    Option("fedvra-rho", float, 5.0, "a number > 0", _positive,
           "fedvra-u: penalty rho of the augmented Lagrangian; server prox step 1/rho ([A] 5)."),
    Option("fedvra-dual-step", float, 1.0, "a number > 0", _positive,
           "fedvra-u: dual step a, Lambda_p += a * rho * (V_p - V^s) ([A] 1, as in ADMM)."),
    Option("fedvra-aggregation-step", float, 1.0, "a number in (0, 1]", lambda d: 0.0 < d <= 1.0,
           "fedvra-u: aggregation step d, V^{s+1} = V^s + d (prox point - V^s) ([A] 1, as in ADMM)."),
    # --- incomplete views (spec 3.5; any algorithm may read the mask) ---------------------------
    Option("missing-rate", float, 0.0, "a number in [0, 1)", lambda r: 0.0 <= r < 1.0,
           "Missing rate eta: round(eta n) random samples lose views (spec 3.5); the seeded mask "
           "(`fedmf_app.data.missing_views`) is the same on every client and the server. Read "
           "by fmvc-iai (it imputes on a graph); the other algorithms get missing rows filled "
           "(missing-fill)."),
    Option("missing-views-dropped", int, 0, "an integer >= 0 and < the number of views",
           _at_least(0),
           "Views removed from each selected sample; 0: floor(m / 2), 'half of the views' ([A]); "
           "every sample keeps at least one view."),
    Option("missing-fill", str, "mean", "one of: " + ", ".join(MISSING_FILLS), _one_of(*MISSING_FILLS),
           "Complete-view algorithms (all but fmvc-iai) under missing-rate > 0: a client replaces "
           "each missing row of its view by the mean of its observed rows ([A] mean imputation) "
           "or by zeros, before any scaling."),
    # --- fmvc-iai (paper C, spec 3) ---------------------------------------------------------------
    Option("iai-knn", int, 20, "an integer >= 1", _at_least(1),
           "fmvc-iai: neighbours k of every kNN graph (paper: 20)."),
    Option("iai-anchors", int, 200, "an integer >= iai-anchor-neighbours + 1", _at_least(2),
           "fmvc-iai: shared anchors r, sample indices drawn once at random by the server ([A] 200)."),
    Option("iai-anchor-neighbours", int, 10, "an integer >= 1", _at_least(1),
           "fmvc-iai: anchors per sample s of the parameter-free anchor graph ([A] 10, spec 3.3b)."),
    Option("iai-fp-iterations", int, 40, "an integer >= 0", _at_least(0),
           "fmvc-iai: feature-propagation steps T (Rossi et al.: 40)."),
    Option("iai-imputation", str, "propagation", "one of: " + ", ".join(IMPUTATIONS),
           _one_of(*IMPUTATIONS),
           "fmvc-iai: missing rows of Z by feature propagation on A_g, or left at zero (ablation M1)."),
    Option("iai-start-graph", str, "support", "one of: " + ", ".join(START_GRAPHS),
           _one_of(*START_GRAPHS),
           "fmvc-iai: first global graph, the k neighbours listed by most views ([A] spec 3.3b) or "
           "the union of the clients' kNN graphs (the literal reading)."),
    Option("iai-fusion", str, "inverse-emd", "one of: " + ", ".join(FUSION_WEIGHTS),
           _one_of(*FUSION_WEIGHTS),
           "fmvc-iai: anchor-graph weights w_m, 1/EMD_m normalised ([A]), softmax(-EMD/T), or "
           "uniform (ablation M2)."),
    Option("iai-fusion-temperature", float, 0.1, "a number > 0", _positive,
           "fmvc-iai: temperature T of softmax fusion."),
    Option("iai-pseudo-labels", str, "prototype-argmin", "one of: " + ", ".join(PSEUDO_LABELS),
           _one_of(*PSEUDO_LABELS),
           "fmvc-iai: Y = argmin_k of the summed prototype distances, a federated k-means step "
           "([A] spec 3.3b), or spectral clustering of A_g (the literal reading; collapsed on HW)."),
    Option("iai-feature-scaling", str, "standard", "one of: " + ", ".join(FEATURE_SCALINGS),
           _one_of(*FEATURE_SCALINGS),
           "fmvc-iai: each client z-scores its features on its observed rows before the "
           "autoencoder ([A])."),
    Option("iai-ae-hidden", str, "256,128", "comma-separated positive integers", _widths,
           "fmvc-iai: autoencoder hidden widths d -> ... -> d_z, mirrored decoder ([A] spec 3.3b)."),
    Option("iai-embed-dim", int, 64, "an integer >= 1", _at_least(1),
           "fmvc-iai: autoencoder code size d_z ([A] 64)."),
    Option("iai-ae-epochs", int, 100, "an integer >= 1", _at_least(1),
           "fmvc-iai: autoencoder pre-training epochs, once in round 1 ([A] 100, spec 3.3b)."),
    Option("iai-ae-lr", float, 1e-3, "a number > 0", _positive,
           "fmvc-iai: autoencoder Adam step ([A] 1e-3)."),
    Option("iai-ae-batch-size", int, 256, "an integer >= 1", _at_least(1),
           "fmvc-iai: autoencoder mini-batch ([A] 256)."),
    Option("iai-gat-hidden", int, 64, "an integer >= 1", _at_least(1),
           "fmvc-iai: width per head of the first GAT layer ([A] 64)."),
    Option("iai-gat-heads", int, 4, "an integer >= 1", _at_least(1),
           "fmvc-iai: heads of the first GAT layer, concatenated ([A] 4)."),
    Option("iai-embedding-dim", int, 64, "an integer >= 1", _at_least(1),
           "fmvc-iai: GAT embedding d_h, second layer with one head, linear ([A] 64)."),
    Option("iai-decoder-hidden", int, 256, "an integer >= 1", _at_least(1),
           "fmvc-iai: hidden width of the attribute decoder and the structure head ([A] 256)."),
    Option("iai-structure-head", str, "mlp", "one of: mlp, identity", _one_of("mlp", "identity"),
           "fmvc-iai: structure logits <H_s,i, H_s,j> with H_s = MLP_s(H) ([A]) or H."),
    Option("iai-epochs", int, 20, "an integer >= 1", _at_least(1),
           "fmvc-iai: full-batch GAE epochs per round (spec 3.4 [A] says 100; 20 as in the measured "
           "reconstruction of spec 3.3a, 5x cheaper)."),
    Option("iai-lr", float, 1e-3, "a number > 0", _positive,
           "fmvc-iai: GAE Adam step ([A] 1e-3)."),
    Option("iai-alpha", float, 1.0, "a number >= 0", _at_least(0.0),
           "fmvc-iai: weight alpha of the clustering loss KL(P || Q) ([A] 1; 0 in the first "
           "training round, which has no P)."),
    Option("iai-negative-ratio", float, 1.0, "a number > 0", _positive,
           "fmvc-iai: uniformly sampled non-edges per edge of A_g + I in the structure loss "
           "([A] 1; never an n x n loss)."),
    Option("iai-attribute-loss", bool, True, "true or false", _any,
           "fmvc-iai: attribute reconstruction MSE (false: ablation M3)."),
    Option("iai-structure-loss", bool, True, "true or false", _any,
           "fmvc-iai: structure reconstruction BCE (false: ablation M4)."),
    Option("device", str, "cpu", "one of: " + ", ".join(DEVICES), _one_of(*DEVICES),
           "Where torch-based clients (fmvc-iai) train; `cuda` falls back to the CPU with a "
           "warning when no GPU is present."),
    Option("basis-init", str, "auto", "one of: " + ", ".join(BASIS_INITS), _one_of(*BASIS_INITS),
           "Initial U_p: `random` (spec 1.9, round(P(|randn|))), `kmeans` (the client's features "
           "grouped by k-means into r groups, unit-norm group indicators; spec 1.8b: HW ACC 65% -> "
           "83.5%), `auto` ([A]): random on synthetic data, kmeans on real data."),
    Option("v-init-scale", float, 1.0, "a number > 0", _positive,
           "Initial V = scale * |N(0, 1)| ([A])."),
    Option("basis-sigma0", float, 1e-3, "a number > 0", _positive,
           "U solver: initial penalty sigma_0 of the scaled subproblem, restarted every solve."),
    Option("basis-max-outer", int, 300, "an integer >= 1", _at_least(1),
           "U solver: maximum outer (penalty) iterations."),
    Option("basis-inner-tol", float, 1e-2, "a number > 0", _positive,
           "U solver: initial inner tolerance on ||min(U, grad P_sigma)||_F of the scaled subproblem "
           "([A] 1e-2; 0.1 left U at its start on the scaled problem)."),
    Option("basis-polish", bool, True, "true or false", _any,
           "U solver: exact minimiser on the rounded supports ([A] on)."),
    Option("residual-eps", float, 1e-12, "a number > 0", _positive,
           "Floor of the residual normaliser max(R^1, eps) ([A] 1e-12)."),
    Option("residual-normalisation", str, "ratio", "one of: " + ", ".join(RESIDUAL_NORMALISATIONS),
           _one_of(*RESIDUAL_NORMALISATIONS),
           "Normalised residual shown in the log and summary: per-round ratio R^s/R^1 or the "
           "paper's printed running average; both are always recorded."),
    # --- fmvc-imk (paper B, spec 2) -------------------------------------------------------------
    Option("imk-lambda", float, 0.1, "a number >= 0", _at_least(0.0),
           "fmvc-imk: weight lambda of the graph term Tr(H^T L H) (0: no graph, ablation case 2)."),
    Option("imk-mu", float, 0.1, "a number >= 0", _at_least(0.0),
           "fmvc-imk: weight mu of the orthogonality penalty ||H^T H - I||^2."),
    Option("imk-rho", float, 5.0, "a number > 0", _positive,
           "fmvc-imk: ADMM penalty rho of H^(m) = H (5: the objective decreases monotonically; the "
           "spec's 1 oscillates and gains a few ACC points on some data sets, see the README)."),
    Option("imk-beta", float, 1.0, "a number > 0", _positive,
           "fmvc-imk: step beta on Delta H^(m) [P]."),
    Option("imk-sigma", float, 1.0, "a number > 0", _positive,
           "fmvc-imk: CoCoA curvature sigma' (1, spec 2.2b; the literal reading is the number of "
           "clients)."),
    Option("imk-latent-dim", int, 0, "an integer >= 0", _at_least(0),
           "fmvc-imk: latent dimension c ([A] 0: c = k); a view with fewer features uses d_m."),
    Option("imk-neighbours", int, 5, "an integer >= 1", _at_least(1),
           "fmvc-imk: neighbours p of each client's kNN graph ([A] 5)."),
    Option("imk-similarity", str, "binary", "one of: " + ", ".join(SIMILARITIES),
           _one_of(*SIMILARITIES),
           "fmvc-imk: kNN edge weights, 0/1 or the heat kernel exp(-d^2/t), t = mean squared kNN "
           "distance ([A] binary)."),
    Option("imk-ortho-placement", str, "local", "one of: " + ", ".join(ORTHO_PLACEMENTS),
           _one_of(*ORTHO_PLACEMENTS),
           "fmvc-imk: orthogonality penalty on each H^(m) (clients) or on the global H (server, "
           "linearised at the previous H) ([A] local)."),
    Option("imk-ortho-curvature", bool, True, "true or false", _any,
           "fmvc-imk: add the majoriser 4 mu (3 ||H^(m)||_2^2 - 1)_+ to the H step (false: the "
           "literal step, which diverges for mu >= 1)."),
    Option("imk-nonneg", bool, False, "true or false", _any,
           "fmvc-imk: project H^(m) onto H >= 0 after each step, as FedMVL's code ([A] false)."),
    Option("imk-client-init", str, "normalised-indicator", "one of: " + ", ".join(CLIENT_INITS),
           _one_of(*CLIENT_INITS),
           "fmvc-imk: initial H^(m) from k-means on the view, entries 1/sqrt(n_j) or FedMVL's "
           "one-hot + 0.2 ([A] normalised-indicator)."),
    Option("imk-server-init", str, "kmeans-concat", "one of: " + ", ".join(SERVER_INITS),
           _one_of(*SERVER_INITS),
           "fmvc-imk: initial H from k-means on the concatenated initial H^(m), or their mean "
           "([A] kmeans-concat)."),
    Option("imk-labels", str, "kmeans", "one of: " + ", ".join(LABEL_RULES), _one_of(*LABEL_RULES),
           "fmvc-imk: labels from H by k-means on its normalised rows or by argmax_j H_ij ([A] "
           "kmeans: H is only defined up to a rotation unless imk-nonneg is on)."),
    Option("imk-standardise", str, "zscore", "one of: " + ", ".join(STANDARDISATIONS),
           _one_of(*STANDARDISATIONS),
           "fmvc-imk: per-view preprocessing, per-feature z-score, per-sample l2 (text) or none."),
    Option("imk-unit-norm", bool, True, "true or false", _any,
           "fmvc-imk: scale each preprocessed view to ||X^(m)||_F = 1."),
    Option("imk-tol", float, 1e-4, "a number >= 0", _at_least(0.0),
           "fmvc-imk: stop when |F_t - F_{t-1}| <= tol |F_{t-1}| (0: run all rounds) ([A] 1e-4)."),
    Option("imk-server-solver", str, "cg", "one of: " + ", ".join(SERVER_SOLVERS),
           _one_of(*SERVER_SOLVERS),
           "fmvc-imk: server solve of (2 lambda L + M rho I) H = rhs by warm-started conjugate "
           "gradients or a sparse LU made once."),
    Option("imk-secure-sum", str, "masking", "one of: " + ", ".join(SECURE_SUMS),
           _one_of(*SECURE_SUMS),
           "fmvc-imk: how the server gets sum_m L^(m): pairwise additive masking with X25519 keys "
           "(it sees only uniformly random uploads), or `none` (plain uploads; for measuring the "
           "masking's cost only, the server sees every graph)."),
    Option("imk-mask-frac-bits", int, 16, "an integer in [0, 24]", lambda b: 0 <= b <= 24,
           "fmvc-imk: fixed-point bits of the masked similarities in Z_{2^32} (heat-kernel entries "
           "are rounded to 2^-bits; the sum must stay below 2^(32-bits) per entry)."),
)

_BY_KEY = {o.key: o for o in OPTIONS}


def defaults() -> dict[str, Any]:
    """Default value of every key.

    Returns
    -------
    dict
    """
    return {o.key: o.default for o in OPTIONS}


def _convert(option: Option, value: Any) -> Any:
    """Convert ``value`` to ``option.kind`` or raise :class:`ConfigError`."""
    bad = ConfigError(
        f"run config '{option.key}' = {value!r} is invalid: must be {option.allowed}"
    )
    if option.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise bad
    if option.kind is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if isinstance(value, float) and not value.is_integer():
            raise bad
        return int(value)
    if option.kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if not math.isfinite(value):
            raise bad
        return float(value)
    if not isinstance(value, str):
        raise bad
    return value


def validate_run_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Check a run config and fill in defaults.

    Parameters
    ----------
    raw : mapping
        Run config as Flower passes it (``context.run_config``), or a partial override.

    Returns
    -------
    dict
        Every key of :data:`OPTIONS`, converted to its type.

    Raises
    ------
    ConfigError
        On an unknown key, a value of the wrong type or out of range, or an inconsistent
        combination (e.g. ``rank`` larger than ``view-dim``).
    """
    unknown = sorted(set(raw) - set(_BY_KEY))
    if unknown:
        raise ConfigError(
            f"unknown run-config key(s) {', '.join(map(repr, unknown))}; "
            f"allowed keys: {', '.join(sorted(_BY_KEY))}"
        )
    cfg = defaults()
    for key, value in raw.items():
        option = _BY_KEY[key]
        converted = _convert(option, value)
        if not option.check(converted):
            raise ConfigError(
                f"run config '{key}' = {value!r} is invalid: must be {option.allowed}"
            )
        cfg[key] = converted
    if cfg["algorithm"] == "fmvc-imk" and cfg["imk-secure-sum"] == "masking" and cfg["num-clients"] < 2:
        raise ConfigError(
            "run config 'imk-secure-sum' = 'masking' needs 'num-clients' >= 2 (with one client the "
            "sum is its own graph)"
        )
    if cfg["algorithm"] == "fmvc-imk" and cfg["num-clients"] >= 2 ** (32 - cfg["imk-mask-frac-bits"]):
        raise ConfigError(
            f"run config 'imk-mask-frac-bits' = {cfg['imk-mask-frac-bits']} is invalid: with "
            f"{cfg['num-clients']} clients the masked sum would overflow 32 bits"
        )
    if cfg["dataset"] == "synthetic" and synthetic_rank(cfg) > cfg["view-dim"]:
        raise ConfigError(
            f"run config 'rank' = {synthetic_rank(cfg)} is invalid: must be <= 'view-dim' = "
            f"{cfg['view-dim']} (a nonnegative orthonormal basis U_p needs d_p >= r)"
        )
    if cfg["iai-anchors"] < cfg["iai-anchor-neighbours"] + 1:
        raise ConfigError(
            f"run config 'iai-anchors' = {cfg['iai-anchors']} is invalid: must be >= "
            f"'iai-anchor-neighbours' + 1 = {cfg['iai-anchor-neighbours'] + 1}"
        )
    return cfg


#: Rank of ``rank = 0`` (auto) on synthetic data, and on real data without a cluster count.
AUTO_RANK_DEFAULT = 6


def synthetic_rank(cfg: Mapping[str, Any]) -> int:
    """Planted rank of the synthetic data: ``rank``, or :data:`AUTO_RANK_DEFAULT` when it is 0.

    Parameters
    ----------
    cfg : mapping
        Validated run config.

    Returns
    -------
    int
    """
    return cfg["rank"] or AUTO_RANK_DEFAULT


def resolve_rank(cfg: Mapping[str, Any], num_clusters: int | None, view_dims: list[int]) -> int:
    """The rank a run uses (see option ``rank``).

    Parameters
    ----------
    cfg : mapping
        Validated run config.
    num_clusters : int or None
        Clusters of the final clustering, when known before round 1.
    view_dims : list of int
        ``d_p`` of every view.

    Returns
    -------
    int
        ``rank`` when it is set; else (auto) :func:`synthetic_rank` for synthetic data, otherwise
        ``min(num_clusters or AUTO_RANK_DEFAULT, min_p d_p)``.
    """
    if cfg["rank"] > 0:
        return int(cfg["rank"])
    if cfg["dataset"] == "synthetic":
        return synthetic_rank(cfg)
    return int(min(num_clusters or AUTO_RANK_DEFAULT, *view_dims))


def basis_init(cfg: Mapping[str, Any]) -> str:
    """How clients start ``U_p``: ``basis-init``, with ``auto`` resolved by the data set.

    Parameters
    ----------
    cfg : mapping
        Validated run config.

    Returns
    -------
    str
        ``"random"`` or ``"kmeans"``.
    """
    if cfg["basis-init"] != "auto":
        return cfg["basis-init"]
    return "random" if cfg["dataset"] == "synthetic" else "kmeans"


def sonmf_params(cfg: Mapping[str, Any]) -> SONMFParams:
    """Kernel parameters of paper A's method from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`validate_run_config`.

    Returns
    -------
    SONMFParams
    """
    return SONMFParams(
        local_steps=cfg["local-steps"],
        local_lr=cfg["local-lr"],
        global_lr=cfg["global-lr"],
        mu=cfg["mu"],
        rho1=cfg["rho1"],
        drift_correction=cfg["drift-correction"],
        v_update=cfg["v-update"],
        server_step=cfg["server-step"],
        basis=BasisSolverOptions(
            sigma0=cfg["basis-sigma0"],
            max_outer=cfg["basis-max-outer"],
            inner_tol0=cfg["basis-inner-tol"],
            polish=cfg["basis-polish"],
        ),
    )


def fedmgs_params(cfg: Mapping[str, Any]) -> SONMFParams:
    """Kernel parameters of adapted FedMGS: the server-only ``V`` update with step ``fedmgs-step``.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`validate_run_config`.

    Returns
    -------
    SONMFParams
    """
    return replace(sonmf_params(cfg), v_update="server", server_step=cfg["fedmgs-step"],
                   drift_correction=False)


def fedvra_params(cfg: Mapping[str, Any]) -> FedVRAParams:
    """Steps of adapted FedVRA-U from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`validate_run_config`.

    Returns
    -------
    FedVRAParams
    """
    return FedVRAParams(rho=cfg["fedvra-rho"], dual_step=cfg["fedvra-dual-step"],
                        aggregation_step=cfg["fedvra-aggregation-step"])


def imk_params(cfg: Mapping[str, Any]) -> IMKParams:
    """Steps and weights of FMVC-IMK from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`validate_run_config`.

    Returns
    -------
    IMKParams
    """
    return IMKParams(lam=cfg["imk-lambda"], mu=cfg["imk-mu"], rho=cfg["imk-rho"],
                     beta=cfg["imk-beta"], sigma=cfg["imk-sigma"],
                     ortho_placement=cfg["imk-ortho-placement"],
                     ortho_curvature=cfg["imk-ortho-curvature"], nonneg=cfg["imk-nonneg"])


def iai_params(cfg: Mapping[str, Any], num_clusters: int) -> IAIParams:
    """Parameters of FMVC-IAI (paper C) from a validated run config.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`validate_run_config`.
    num_clusters : int
        K.

    Returns
    -------
    IAIParams
    """
    return IAIParams(
        num_clusters=num_clusters,
        knn=cfg["iai-knn"],
        anchors=cfg["iai-anchors"],
        anchor_neighbours=cfg["iai-anchor-neighbours"],
        fp_iterations=cfg["iai-fp-iterations"],
        imputation=cfg["iai-imputation"],
        start_graph=cfg["iai-start-graph"],
        fusion=cfg["iai-fusion"],
        fusion_temperature=cfg["iai-fusion-temperature"],
        pseudo_labels=cfg["iai-pseudo-labels"],
        feature_scaling=cfg["iai-feature-scaling"],
        ae_hidden=tuple(int(w) for w in cfg["iai-ae-hidden"].split(",")),
        embed_dim=cfg["iai-embed-dim"],
        ae_epochs=cfg["iai-ae-epochs"],
        ae_lr=cfg["iai-ae-lr"],
        ae_batch_size=cfg["iai-ae-batch-size"],
        device=cfg["device"],
        gae=GAEParams(
            hidden=cfg["iai-gat-hidden"],
            heads=cfg["iai-gat-heads"],
            out_dim=cfg["iai-embedding-dim"],
            decoder_hidden=cfg["iai-decoder-hidden"],
            structure_head=cfg["iai-structure-head"],
            epochs=cfg["iai-epochs"],
            lr=cfg["iai-lr"],
            alpha=cfg["iai-alpha"],
            negative_ratio=cfg["iai-negative-ratio"],
            attribute_loss=cfg["iai-attribute-loss"],
            structure_loss=cfg["iai-structure-loss"],
        ),
    )


def markdown_table() -> str:
    """README table of all keys (the README embeds exactly this text).

    Returns
    -------
    str
    """

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    def toml(option: Option) -> str:
        if option.kind is bool:
            return "true" if option.default else "false"
        if option.kind is str:
            return f'"{option.default}"'
        return str(option.default)

    rows = ["| key | default | allowed | meaning |", "|---|---|---|---|"]
    for o in OPTIONS:
        rows.append(f"| `{o.key}` | `{toml(o)}` | {cell(o.allowed)} | {cell(o.help)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    sys.stdout.write(markdown_table() + "\n")
