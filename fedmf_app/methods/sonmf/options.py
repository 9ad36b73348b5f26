"""Run-config keys of paper A's family (``[tool.flwr.app.config.sonmf]``).

The family is the proposed method ``fedsonmf`` (with its ablation variants, which are values of
these keys), and the adapted baselines ``fedmavg``, ``fedmgs`` and ``fedvra-u``. The typed
parameters built from these keys are :mod:`fedmf_app.methods.sonmf.params`.
"""

from __future__ import annotations

from fedmf_app.data.synthetic import planted_rank
from fedmf_app.methods.sonmf.adapted_updates import FEDMAVG_SCHEDULES
from fedmf_app.methods.sonmf.clustering import CLUSTER_COLUMNS
from fedmf_app.methods.sonmf.nonneg_orth import BASIS_SOLVERS
from fedmf_app.methods.sonmf.start import SKETCH_READINGS
from fedmf_app.methods.sonmf.updates import RHO1_SCALES, SERVER_STEPS, V_UPDATES
from fedmf_app.options.constraints import Boolean, Interval, OneOf
from fedmf_app.options.schema import Family, Option

__all__ = ["FAMILY"]

#: How clients start ``U_p`` under ``sonmf.start = "random"``.
BASIS_INITS = ("auto", "random", "kmeans")

#: How a run starts ``V`` and the ``U_p``.
STARTS = ("auto", "sketch", "random")

#: Values of ``sonmf.narrow-views``: how a view with fewer features than the rank is handled.
NARROW_VIEWS = ("empty-columns", "cap-rank")

#: Values of ``sonmf.basis-kernel``.
BASIS_KERNELS = ("compiled", "numpy")

OPTIONS: tuple[Option, ...] = (
    Option(
        "sonmf.diagnostics",
        True,
        Boolean(),
        "Clients also upload grad_V f_p(U_p^{s,0}, V^s) (r x n) and two scalars so the server can "
        "compute the objective and the stationarity residual; doubles the upload.",
    ),
    Option(
        "sonmf.rank",
        0,
        Interval(
            int,
            0,
            None,
            closed="left",
            text="an integer >= 0, <= the largest view's dimension (every view's under "
            "sonmf.narrow-views = cap-rank)",
        ),
        "Rank r; 0 = auto ([A]): synthetic data 6 (paper), real data sonmf.rank-per-cluster "
        "times the number of clusters (num-clusters, else the ground-truth classes), capped at the "
        "largest view's dimension (the smallest's under sonmf.narrow-views = cap-rank) (6 without "
        "either).",
    ),
    Option(
        "sonmf.narrow-views",
        "empty-columns",
        OneOf(NARROW_VIEWS),
        "A view with fewer features d_p than the rank r, where U_p^T U_p = I is impossible: "
        "`empty-columns` ([A]): its U_p may have zero columns (U_p >= 0, U_p^T U_p diagonal with "
        "0/1 entries, at most d_p nonzero columns; a component that view does not use leaves its "
        "term), so the rank is capped only by the largest view; needs sonmf.start = sketch (or auto "
        "on real data) and the assignment U solver; `cap-rank`: paper A's constraint in every "
        "view, the auto rank capped at the smallest view.",
    ),
    Option(
        "sonmf.rank-per-cluster",
        3,
        Interval(int, 1, None, closed="left"),
        "Components per cluster of the auto rank on real data ([A] 3: with a nonnegative "
        "orthonormal U_p every feature belongs to one component, and one component per cluster "
        "puts the features common to all clusters in one of them; 3 is ahead of 2 on BBCSport, "
        "ORL and Sonar and behind on 3Sources and Yale, 3 seeds; paper: r = #clusters, 1).",
    ),
    Option(
        "sonmf.local-steps", 10, Interval(int, 1, None, closed="left"), "Local steps tau per round ([A] 10)."
    ),
    Option(
        "sonmf.local-lr",
        0.01,
        Interval(float, 0, None, closed="neither"),
        "Local step alpha ([A] 0.01; theory-safe 1/(10 L2 eta_g tau) = 1/300 is ~3x slower).",
    ),
    Option(
        "sonmf.global-lr",
        1.5,
        Interval(float, 0, None, closed="neither"),
        "Server step eta_g ([A] 1.5; theory needs >= 3/2).",
    ),
    Option(
        "sonmf.mu",
        0.01,
        Interval(float, 0.0, None, closed="left"),
        "Weight of the joint-sparsity term mu ||V||_{2,1} ([A] 0.01).",
    ),
    Option(
        "sonmf.rho1",
        0.01,
        Interval(float, 0.0, None, closed="left"),
        "Proximal weight of the U subproblem, relative to the data term under "
        "sonmf.rho1-scale = data ([A] 0.01).",
    ),
    Option(
        "sonmf.rho1-scale",
        "data",
        OneOf(RHO1_SCALES),
        "What sonmf.rho1 is measured against ([A] `data`): `data` uses rho1 * 2 ||V||_F^2 / r "
        "in every U step (the data term's mean curvature in U at that step's V, so the pull "
        "towards the previous U_p keeps its weight at every data scale); `absolute` uses rho1 "
        "as it is (on Frobenius-normalised real views it outweighs the data term: on BBCSport "
        "no feature left its k-means start).",
    ),
    Option(
        "sonmf.drift-correction",
        True,
        Boolean(),
        "Apply the drift correction C_p (false: the uncorrected ablation).",
    ),
    Option(
        "sonmf.v-update",
        "local-copies",
        OneOf(V_UPDATES),
        "fedsonmf: `server` is the ablation in which clients run sonmf.local-steps U steps with V "
        "fixed at V^s, upload their average grad_V f_p, and only the server updates V "
        "(one prox-gradient step of size sonmf.server-step).",
    ),
    Option(
        "sonmf.server-step",
        "global-times-local",
        OneOf(SERVER_STEPS),
        "Step of the server-only V update (sonmf.v-update=server): eta_g * alpha, or the effective "
        "eta~ = eta_g * tau * alpha ([A] eta_g * alpha, the ablation's reading).",
    ),
    Option(
        "sonmf.fedmgs-step",
        "effective",
        OneOf(SERVER_STEPS),
        "fedmgs: server step, eta_g * alpha or eta~ = eta_g * tau * alpha ([A] eta~, the proposed "
        "method's step per round).",
    ),
    Option(
        "sonmf.fedmavg-schedule",
        "decreasing",
        OneOf(FEDMAVG_SCHEDULES),
        "fedmavg: local steps in round s, ceil(tau / sqrt(s)) or tau ([A] decreasing).",
    ),
    Option(
        "sonmf.fedvra-rho",
        5.0,
        Interval(float, 0, None, closed="neither"),
        "fedvra-u: penalty rho of the augmented Lagrangian; server prox step 1/rho ([A] 5).",
    ),
    Option(
        "sonmf.fedvra-dual-step",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "fedvra-u: dual step a, Lambda_p += a * rho * (V_p - V^s) ([A] 1, as in ADMM).",
    ),
    Option(
        "sonmf.fedvra-aggregation-step",
        1.0,
        Interval(float, 0, 1, closed="right"),
        "fedvra-u: aggregation step d, V^{s+1} = V^s + d (prox point - V^s) ([A] 1, as in ADMM).",
    ),
    Option(
        "sonmf.start",
        "auto",
        OneOf(STARTS),
        "How V^1 and the U_p start: `sketch` (before round 1 each client sends X_p^T X_p Omega, "
        "Omega an n x (r + 10) Gaussian drawn from the seed, always as a masked sum, so it needs "
        "num-clients >= 2; from the sum the server takes the stacked views' leading singular pairs "
        "by a Nystrom sketch and reads V^1 from them as sonmf.sketch-reading says; each client fits "
        "U_p to V^1), `random` (V^1 = sonmf.v-init-scale * |N(0, 1)|, U_p from sonmf.basis-init), "
        "`auto` ([A]): random on synthetic data (paper A's protocol) and with one client, sketch on "
        "real data.",
    ),
    Option(
        "sonmf.sketch-reading",
        "clusters",
        OneOf(SKETCH_READINGS),
        "V^1 from the sketch's leading right singular vectors W (n x r): `clusters` ([A]): "
        "k-means into r groups on W's rows scaled to unit norm, row j of V^1 the indicator of "
        "group j (scaled to the singular values' energy); `nndsvd`: the NNDSVD part of the "
        "singular pairs.",
    ),
    Option(
        "sonmf.basis-init",
        "auto",
        OneOf(BASIS_INITS),
        "Initial U_p under sonmf.start = random: `random` (round(P(|randn|))), `kmeans` (the "
        "client's features grouped by k-means into r groups, unit-norm group indicators), "
        "`auto` ([A]): random on synthetic data, kmeans on real data.",
    ),
    Option(
        "sonmf.cluster-columns",
        "auto",
        OneOf(CLUSTER_COLUMNS),
        "Final clustering: k-means on the columns of V as they are (`as-is`), each scaled to "
        "unit l2 norm first (`unit-norm`, the cosine geometry), or each scaled to sum one and "
        "square-rooted (`hellinger`: a sample's loadings read as proportions, compared by the "
        "Hellinger distance); an all-zero column stays zero. `auto` ([A]): hellinger when every "
        "view looks like counts or bag of words (at least 90 % zeros, no negative entry: the "
        "rule of sample-normalisation = auto), as-is otherwise.",
    ),
    Option(
        "sonmf.v-init-scale",
        1.0,
        Interval(float, 0, None, closed="neither"),
        "Initial V = scale * |N(0, 1)| under sonmf.start = random ([A]).",
    ),
    Option(
        "sonmf.basis-solver",
        "assignment",
        OneOf(BASIS_SOLVERS),
        "U solver: `assignment` ([A]): on the feasible set the subproblem is the choice of which "
        "basis column owns each feature, so features are moved one at a time between columns "
        "while a move lowers the objective, from the start's supports and from a greedy "
        "assignment, then each column is the exact minimiser on its features (exactly feasible, "
        "O(d r) per pass, at most sonmf.basis-max-outer passes); `penalty`: paper A's "
        "exact-penalty method (EP4Orth) with the sonmf.basis-* settings below.",
    ),
    Option(
        "sonmf.basis-sigma0",
        1e-3,
        Interval(float, 0, None, closed="neither"),
        "U solver: initial penalty sigma_0 of the scaled subproblem, restarted every solve.",
    ),
    Option(
        "sonmf.basis-max-outer",
        300,
        Interval(int, 1, None, closed="left"),
        "U solver: maximum outer (penalty) iterations, or passes of the assignment ascent.",
    ),
    Option(
        "sonmf.basis-inner-tol",
        1e-2,
        Interval(float, 0, None, closed="neither"),
        "U solver: initial inner tolerance on ||min(U, grad P_sigma)||_F of the scaled subproblem "
        "([A] 1e-2; 0.1 left U at its start on the scaled problem).",
    ),
    Option(
        "sonmf.basis-polish", True, Boolean(), "U solver: exact minimiser on the rounded supports ([A] on)."
    ),
    Option(
        "sonmf.basis-kernel",
        "compiled",
        OneOf(BASIS_KERNELS),
        "U solver: its loop (the assignment ascent or the penalty loop) compiled by numba "
        "(`compiled`, [A]: 5-20x faster per solve; "
        "compiled once per machine and app version, then about 1 s per process to load) or in "
        "`numpy` (no numba: better where each message starts a new process, as on a "
        "deployed SuperNode; the federation command's default).",
    ),
    Option(
        "sonmf.residual-eps",
        1e-12,
        Interval(float, 0, None, closed="neither"),
        "Floor of the residual normaliser max(R^1, eps) ([A] 1e-12).",
    ),
    Option(
        "sonmf.stop-ratio",
        1e-15,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop: the run ends after the first round whose residual ratio R^s/R^1 is "
        "<= this ([A] 1e-15: on the development sets the clustering is then the 100-round one; "
        "0: always run num-server-rounds; needs sonmf.diagnostics).",
    ),
    Option(
        "sonmf.stop-change",
        1e-3,
        Interval(float, 0, 1, closed="left"),
        "Convergence stop: the run ends once the objective's relative change between rounds has "
        "been <= this for sonmf.stop-patience rounds in a row ([A] 1e-3: on the development sets "
        "the clustering has then settled; 0: off; needs sonmf.diagnostics).",
    ),
    Option(
        "sonmf.stop-patience",
        3,
        Interval(int, 1, None, closed="left"),
        "Rounds in a row whose objective change is <= sonmf.stop-change before the run stops ([A] 3).",
    ),
)

FAMILY = Family(
    name="sonmf",
    title="paper A: federated sparse orthogonal NMF, its adapted baselines and ablations",
    algorithms=("fedsonmf", "fedmavg", "fedmgs", "fedvra-u"),
    num_server_rounds=100,
    options=OPTIONS,
    reads_sparse_views=True,
    synthetic_rank=lambda cfg: planted_rank(cfg["sonmf.rank"]),
)
