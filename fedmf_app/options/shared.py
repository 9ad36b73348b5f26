"""Keys every algorithm shares (the top-level keys): the run, the data set and the missing views.

:class:`SharedParams` declares them, each beside its field (:func:`~fedmf_app.options.schema.option`);
:data:`SHARED_OPTIONS` is its key list. :func:`shared_params` builds it from a validated run config;
the base Strategy and client hold it (``self.shared``) and the families' adapters read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedmf_app.data.embedded import EMBEDDED
from fedmf_app.data.missing_views import MISSING_FILLS
from fedmf_app.data.preprocess import NEGATIVE_VALUES, SAMPLE_NORMALISATIONS, VIEW_NORMALISATIONS
from fedmf_app.data.view_files import is_dataset
from fedmf_app.options.constraints import Boolean, Interval, OneOf, Text
from fedmf_app.options.schema import Option, declared_options, from_run_config, option

__all__ = ["SHARED_OPTIONS", "SharedParams", "shared_params"]


def _views(value: str) -> bool:
    return value == "" or all(entry.strip() for entry in value.split(","))


@dataclass(frozen=True)
class SharedParams:
    """The shared run-config keys, each declared beside its field (see docs/options.md).

    Attributes
    ----------
    algorithm : str
        Run config ``algorithm`` (its values come from the families: not declared here).
    num_server_rounds : int
        ``0`` resolved to the family's default in a validated run config.
    frac_bits : int
        ``secure-aggregation-frac-bits``: fractional bits of the masked sums' fixed point.
    signed_keys : bool
        ``secure-aggregation-signed-keys``.
    heterogeneity : float
        ``h`` of the synthetic generator.

    The other fields are the keys of their names (``_`` for ``-``).
    """

    algorithm: str
    num_server_rounds: int = option(
        "num-server-rounds",
        0,
        Interval(int, 0, None, closed="left"),
        "Communication rounds T ([A] a fixed T); 0: the method's own default (100 for paper A's "
        "methods and fmvc-imk, which also stops on imk.tol; 6 for fmvc-iai: a set-up round and "
        "R = 5 training rounds).",
    )
    num_clients: int = option(
        "num-clients",
        0,
        Interval(int, 0, None, closed="left"),
        "Clients m, one view each; the federation must have exactly this many SuperNodes. 0: one "
        "client per SuperNode (flwr run: num-supernodes; a deployment: the data set's views when "
        "the server can read it, else the SuperNodes connected once their count settles); without "
        "SuperNodes (in process, hydra): the data set's views, 10 for synthetic data.",
    )
    seed: int = option(
        "seed",
        0,
        Interval(int, 0, None, closed="left"),
        "Seed of every random stream (data, initial U_p, initial V).",
    )
    out_dir: str = option(
        "out-dir",
        "results",
        Text("a folder path"),
        "Where run folders go; a relative path is taken from the ServerApp's working folder.",
    )
    run_name: str = option(
        "run-name",
        "",
        Text("a folder name (empty: algorithm, time and seed)"),
        "Name of this run's folder under out-dir.",
    )
    round_timeout_s: float = option(
        "round-timeout-s",
        600.0,
        Interval(float, 0, None, closed="neither"),
        "A round (or the handshake before round 1) whose replies take longer fails the run, with a "
        "message naming this key, its value and the partitions that did not reply.",
    )
    connect_timeout_s: float = option(
        "connect-timeout-s",
        30.0,
        Interval(float, 0, None, closed="neither"),
        "How long the server waits for num-clients SuperNodes before round 1, and for the "
        "SuperLink to answer one call: a ServerApp whose SuperLink stops answering marks the run "
        "interrupted and exits.",
    )
    secure_aggregation: bool = option(
        "secure-aggregation",
        False,
        Boolean(),
        "The server receives only sums: every array and scalar a method's server needs only as a "
        "sum or mean over the clients travels in fixed point under pairwise masks that cancel in "
        "the sum (one key agreement per run, before round 1; see docs/privacy.md). Off: the "
        "plain uploads, bit-identical to earlier results. The local federation turns it on.",
    )
    frac_bits: int = option(
        "secure-aggregation-frac-bits",
        36,
        Interval(int, 8, 56, closed="both"),
        "Fixed point of secure aggregation: values are rounded stochastically to multiples of "
        "2^-f (sum error < m 2^-f, zero in expectation) and must stay below 2^(63 - f)/m in "
        "magnitude ([A] 36).",
    )
    signed_keys: bool = option(
        "secure-aggregation-signed-keys",
        False,
        Boolean(),
        "Each client signs its key-agreement key with its long-term key (node config "
        "signing-key) and checks every peer's signature (node config peer-keys: a folder of "
        "supernode-<partition>.pub); a substituted or replayed key stops the run before any masked sum. "
        "The local federation turns it on.",
    )
    resume_from: str = option(
        "resume-from",
        "",
        Text("a run folder (empty: a new run)"),
        "Continue the run in this folder from its last finished round (its checkpoint.npz); the "
        "folder must be directly inside out-dir and the other keys must equal that run's. Used by "
        "python -m fedmf_app.resume.",
    )
    dataset: str = option(
        "dataset",
        "synthetic",
        Text(
            "synthetic, an embedded name (" + ", ".join(sorted(EMBEDDED)) + "), the path of a "
            ".mat or .npz file, or per-view files (comma-separated .csv/.npy/.npz/.mat paths, or a "
            "folder of them)",
            is_dataset,
        ),
        "Data set, one view per client: `synthetic` (the planted generator of paper A), "
        "an embedded real data set (`hw`: UCI Multiple Features, 6 views, 2000 samples, "
        "10 classes, CC BY 4.0), a multi-view file, or one file per client as a comma-separated "
        "list or a folder (client p takes the p-th, in natural name order); absolute paths, see "
        "docs/data.md. A SuperNode's node config `data-file` overrides it for that node.",
    )
    views: str = option(
        "views",
        "",
        Text("empty, or comma-separated view names or 0-based indices (e.g. 2,0 or x3,x1)", _views),
        "Views of the dataset file (or embedded set) to use, in this order: client p takes the "
        "p-th; each entry is a view's own name in the file (a numbered key such as `x3`, a "
        "struct field, an embedded view such as `pix`) or its 0-based index; empty: all views "
        "in file order. num-clients must equal their number. Not for `synthetic`; a node's "
        "`data-file` is its own view.",
    )
    sparse_view_min_mb: int = option(
        "sparse-view-min-mb",
        256,
        Interval(int, 0),
        "A view stored sparse stays sparse (CSR, memory in proportion to its nonzeros) when its "
        "dense float64 form would take more than this many MB; smaller ones are made dense, "
        "where the dense kernels are faster ([A] 256; 0: always sparse). Families that do not "
        "read sparse views always get them dense.",
    )
    sample_id: str = option(
        "sample-id",
        "",
        Text("empty, or the name of a CSV column or .npz/.mat key"),
        "The column (CSV header) or key (.npz/.mat) holding each sample's ID, integers or "
        "strings; a node's config sample-id overrides it for that node. Set: before round 1 the "
        "clients align their rows by private set intersection (only blinded points reach the "
        "server), keep the samples every party holds and order them by ID (docs/alignment.md). "
        "Empty: no IDs, rows are taken as aligned.",
    )
    negative_values: str = option(
        "negative-values",
        "min-max",
        OneOf(NEGATIVE_VALUES),
        "Real data: a view with negative entries is scaled per feature to [0, 1] (`min-max`), "
        "shifted by its minimum (`shift`) or refused (`error`); nonnegative views are kept "
        "([A] min-max; the paper's data are nonnegative).",
    )
    sample_normalisation: str = option(
        "sample-normalisation",
        "auto",
        OneOf(SAMPLE_NORMALISATIONS),
        "Real data: each client scales every sample's row of its view to unit l2 norm (`l2`), "
        "keeps it (`none`), or `auto` ([A]): l2 on sparse nonnegative views (>= 90 % zeros: "
        "counts, bag of words), none on the others; before view-normalisation.",
    )
    view_normalisation: str = option(
        "view-normalisation",
        "frobenius",
        OneOf(VIEW_NORMALISATIONS),
        "Real data: each client divides its view by its Frobenius norm (paper A's protocol) "
        "or keeps it (`none`).",
    )
    num_clusters: int = option(
        "num-clusters",
        0,
        Interval(int, 0, None, closed="left"),
        "Clusters k of the final clustering (k-means on V^T for paper A); 0: the number of "
        "ground-truth classes when the clients have labels, else the rank.",
    )
    num_samples: int = option(
        "num-samples", 200, Interval(int, 1, None, closed="left"), "Synthetic: samples n ([A] 200)."
    )
    view_dim: int = option(
        "view-dim", 20, Interval(int, 1, None, closed="left"), "Synthetic: features per view d_p (paper: 20)."
    )
    heterogeneity: float = option(
        "heterogeneity",
        0.0,
        Interval(float, 0, 1, closed="both"),
        "Synthetic: heterogeneity h; V_p* = (1 - h) V0 + h E_p ([A] generator).",
    )
    missing_rate: float = option(
        "missing-rate",
        0.0,
        Interval(float, 0, 1, closed="left"),
        "Missing rate eta: round(eta n) random samples lose views; the seeded mask "
        "(`fedmf_app.data.missing_views`) is the same on every client and the server. Read "
        "by fmvc-iai (it imputes on a graph); the other algorithms get missing rows filled "
        "(missing-fill).",
    )
    missing_views_dropped: int = option(
        "missing-views-dropped",
        0,
        Interval(int, 0, None, closed="left", text="an integer >= 0 and < the number of views"),
        "Views removed from each selected sample; 0: floor(m / 2), 'half of the views' ([A]); "
        "every sample keeps at least one view.",
    )
    missing_fill: str = option(
        "missing-fill",
        "mean",
        OneOf(MISSING_FILLS),
        "Complete-view algorithms (all but fmvc-iai) under missing-rate > 0: a client replaces "
        "each missing row of its view by the mean of its observed rows ([A] mean imputation) "
        "or by zeros, before any scaling.",
    )


#: The shared keys but ``algorithm`` (whose allowed values come from the families).
SHARED_OPTIONS: tuple[Option, ...] = declared_options(SharedParams)


def shared_params(cfg: Mapping[str, Any]) -> SharedParams:
    """The shared keys of a validated run config, as :class:`SharedParams`.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SharedParams
    """
    return from_run_config(SharedParams, cfg, algorithm=cfg["algorithm"])
