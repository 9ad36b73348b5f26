"""FMVC-IMK on the real multi-view data sets, in one process (fast tables, grids and ablations).

Runs :class:`~fedmf_app.methods.imk.reference.IMKReference`, the same kernels in the same order as
the Flower strategy and clients (``tests/methods/imk/test_adapters.py`` and the e2e test check that
they give the same numbers), with the same preprocessing, stopping rule and final label
extraction as a ``flwr run`` with ``algorithm=fmvc-imk``. Uses the run-config keys and defaults
of the app. Usage::

    D=../shared/data
    python -m simulations.imk.datasets table --datasets hw $D/orl/ORL.mat $D/yale/yaleA_3view.mat \
        $D/sonar/sonar_3view.mat --seeds 10
    python -m simulations.imk.datasets grid --datasets $D/sonar/sonar_3view.mat --seeds 3
    python -m simulations.imk.datasets ablation --datasets $D/sonar/sonar_3view.mat --seeds 5
    python -m simulations.imk.datasets table --datasets hw --set imk-rho=1 imk-labels=argmax
    python -m simulations.imk.datasets merged --datasets hw --seeds 5
    python -m simulations.imk.datasets starts --datasets hw $D/bbcsport/BBCSport.mat --seeds 3

``--datasets`` takes embedded names (``hw``) and paths of ``.mat``/``.npz`` files.

``table``: ACC/NMI/PUR (mean ± std over seeds, %) per data set. ``grid``: the paper's Fig. 3,
ACC over lambda x mu in {1e-4, 1e-3, 1e-2, 0.1, 1, 10}^2 (a heat map per data set). ``ablation``:
the paper's Table 3 cases: (1) two-step (per-view PCA to ``k`` dimensions, the ONMF without the
nonnegativity FMVC-IMK also drops, then k-means on the concatenated factors), (2) integrated
without the graph (``imk-lambda = 0``), (3) the full model. ``merged``: per run, the two classes
one cluster holds most of, and the share of each view's kNN edges that join them. ``starts``: per
view, the ACC of each ``imk.start`` clustering against the classes (the partition a client's
initial ``H^(m)`` shows the server), and which one ``auto`` takes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.stopping import plateau
from fedmf_app.common.threads import single_threaded
from fedmf_app.data.assemble import MultiViewData
from fedmf_app.data.multiview import load_multiview
from fedmf_app.methods.imk.client_updates import preprocess_view, resolve_start, start_labels, view_knn_graph
from fedmf_app.methods.imk.model import client_rng, label_rng
from fedmf_app.methods.imk.params import IMKOptions, imk_options, stop_tolerance
from fedmf_app.methods.imk.reference import IMKReference
from fedmf_app.methods.imk.server_updates import extract_labels
from fedmf_app.registry import validate_run_config
from simulations.client_views import client_views
from simulations.imk.figures import GRID, describe, grid_figure
from simulations.spread import header, mean_spread

METRICS = ("acc", "nmi", "purity")


def parse_overrides(pairs: list[str]) -> dict[str, str | float]:
    """``key=value`` pairs; numbers become floats (validation converts the types)."""
    out: dict[str, str | float] = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


def run_one(name: str, seed: int, overrides: dict) -> dict[str, float]:
    """One fmvc-imk run as ``flwr run`` would do it (:func:`_fit`); returns the final scores and rounds."""
    run = _fit(name, seed, overrides)
    scores = clustering_scores(run.data.labels, run.labels)
    scores["rounds"] = run.rounds
    return scores


@dataclass
class _Run:
    """One finished run: its data set, prepared views, options, final labels and rounds."""

    data: MultiViewData
    views: list
    options: IMKOptions
    labels: np.ndarray
    rounds: int


def _prepared(name: str, seed: int, overrides: dict) -> tuple[MultiViewData, dict, IMKOptions, list, int]:
    """A data set as a run's clients hold it: the data, the run config and its options, each
    client's view read as it reads it (the app's data layer: a sparse file's view comes dense) and
    prepared as it prepares it, and the number of clusters."""
    data = load_multiview(name)
    m = len(data.views)
    cfg = validate_run_config(
        {"algorithm": "fmvc-imk", "dataset": name, "num-clients": m, "seed": seed, **overrides}
    )
    options = imk_options(cfg)
    views = [preprocess_view(x, options.standardise, options.unit_norm) for x in client_views(cfg, m)]
    return data, cfg, options, views, cfg["num-clusters"] or int(np.unique(data.labels).size)


def _fit(name: str, seed: int, overrides: dict) -> _Run:
    """One fmvc-imk run as ``flwr run`` would do it, on the views of :func:`_prepared`.

    The run is on one thread (:func:`~fedmf_app.common.threads.single_threaded`), as the clients
    compute, so that it does not depend on the machine's cores: a view with duplicate rows (BBCSport)
    has kNN ties, which the storage and the thread count break.
    """
    with single_threaded():
        data, cfg, options, views, k = _prepared(name, seed, overrides)
        ref = IMKReference(views, options, k, seed)
        _, tol = stop_tolerance(options, ref.starts)
        objectives: list[float] = []
        for _ in range(cfg["num-server-rounds"]):
            objectives.append(ref.round()["objective"])
            if plateau(objectives, tol, options.stop_patience):
                break
        labels = extract_labels(ref.h, cfg["imk.labels"], label_rng(seed, len(ref.history)))
        return _Run(data, views, options, labels, len(ref.history))


def merged_pair(labels: np.ndarray, truth: np.ndarray) -> tuple[int, int, int, int]:
    """The two classes that one cluster holds most of both: of every cluster's two largest classes,
    the pair whose smaller count is largest.

    Parameters
    ----------
    labels, truth : ndarray of int, shape (N,)
        Clusters and classes.

    Returns
    -------
    tuple of int
        Class ``a``, class ``b`` (``a`` the larger in that cluster), and their samples in it.
    """
    best = (0, 0, 0, -1)
    for cluster in np.unique(labels):
        counts = np.bincount(truth[labels == cluster], minlength=int(truth.max()) + 1)
        a, b = np.argsort(-counts, kind="stable")[:2]
        if counts[b] > best[3]:
            best = (int(a), int(b), int(counts[a]), int(counts[b]))
    return best


def edge_share(view: np.ndarray, truth: np.ndarray, a: int, b: int, neighbours: int) -> float:
    """Fraction of a view's kNN edges (0/1 graph, as a run builds it) that join class ``a`` and ``b``.

    Parameters
    ----------
    view : ndarray or csr_matrix, shape (N, d)
        The prepared view.
    truth : ndarray of int, shape (N,)
    a, b : int
        Two classes.
    neighbours : int
        ``imk.neighbours``.

    Returns
    -------
    float
    """
    edges = sp.triu(view_knn_graph(view, neighbours, "binary"), k=1).tocoo()
    first, second = truth[edges.row], truth[edges.col]
    return float(np.mean(((first == a) & (second == b)) | ((first == b) & (second == a))))


def merged(datasets: list[str], seeds: int, overrides: dict) -> None:
    """Per run: the two classes one cluster holds most of, and how much of each view's kNN graph
    joins them (the graph term pulls samples linked in any view's graph together)."""
    print(
        "| data set | seed | ACC % | rounds | classes sharing a cluster (samples) "
        "| each view's kNN edges between them, % |"
    )
    print("|---|---|---|---|---|---|")
    for name in datasets:
        for seed in range(seeds):
            run = _fit(name, seed, overrides)
            truth = run.data.labels
            a, b, na, nb = merged_pair(run.labels, truth)
            names = run.data.view_names or tuple(str(i) for i in range(len(run.views)))
            pair, shares = "none", "-"
            if nb > 0:
                pair = f"{a} + {b} ({na} + {nb})"
                shares = ", ".join(
                    f"{v} {100 * edge_share(x, truth, a, b, run.options.neighbours):.1f}"
                    for v, x in zip(names, run.views)
                )
            acc = 100 * clustering_scores(truth, run.labels)["acc"]
            print(
                f"| {label(name)} | {seed} | {acc:.1f} | {run.rounds} | {pair} | {shares} |",
                flush=True,
            )


def starts(datasets: list[str], seeds: int, overrides: dict) -> None:
    """Per view: ACC of the k-means and the spectral start (mean ± std over seeds, %), drawn as the
    client draws it (its view of :func:`_prepared`, its seeded stream), and ``auto``'s pick
    (:func:`~fedmf_app.methods.imk.client_updates.resolve_start`)."""
    print("| data set | view | k-means start, ACC % | spectral start, ACC % | `auto` takes |")
    print("|---|---|---|---|---|")
    with single_threaded():
        for name in datasets:
            scores: dict[tuple[int, str], list[float]] = {}
            for seed in range(seeds):
                data, _, _, views, k = _prepared(name, seed, overrides)
                for p, x in enumerate(views):
                    for rule in ("kmeans", "spectral"):
                        labels = start_labels(x, k, rule, client_rng(seed, p))
                        scores.setdefault((p, rule), []).append(clustering_scores(data.labels, labels)["acc"])
            names = data.view_names or tuple(str(i) for i in range(len(views)))
            for p, (view, x) in enumerate(zip(names, views)):
                kmeans, spectral = (
                    mean_spread(scores[p, rule], scale=100) for rule in ("kmeans", "spectral")
                )
                auto = resolve_start("auto", x)
                print(f"| {label(name)} | {view} | {kmeans} | {spectral} | {auto} |", flush=True)


def two_step(name: str, seed: int) -> dict[str, float]:
    """Ablation case 1: per-view PCA to ``k`` dimensions, then k-means on the concatenation."""
    data = load_multiview(name)
    k = int(np.unique(data.labels).size)
    factors = []
    for x in data.views:
        x = preprocess_view(x, "zscore", True)
        factors.append(PCA(n_components=min(k, x.shape[1]), random_state=seed).fit_transform(x))
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(np.hstack(factors))
    return clustering_scores(data.labels, labels)


def label(name: str) -> str:
    """Short name of a data set: the embedded name or the file's stem."""
    return Path(name).stem


def summarise(runs: list[dict[str, float]]) -> str:
    """:func:`~simulations.spread.mean_spread` in % of ACC, NMI and purity."""
    return " | ".join(mean_spread((r[key] for r in runs), scale=100) for key in METRICS)


def table(datasets: list[str], seeds: int, overrides: dict) -> None:
    print(header("ACC / NMI / PUR in %") + ":\n")
    print("| data set | seeds | ACC % | NMI % | PUR % | rounds (mean) |")
    print("|---|---|---|---|---|---|")
    for name in datasets:
        runs = [run_one(name, s, overrides) for s in range(seeds)]
        rounds = np.mean([r["rounds"] for r in runs])
        print(f"| {label(name)} | {seeds} | {summarise(runs)} | {rounds:.0f} |", flush=True)


def ablation(datasets: list[str], seeds: int, overrides: dict) -> None:
    print("| data set | case | ACC % | NMI % | PUR % |")
    print("|---|---|---|---|---|")
    for name in datasets:
        cases = [
            ("(1) two-step, no graph", [two_step(name, s) for s in range(seeds)]),
            (
                "(2) integrated, no graph",
                [run_one(name, s, {**overrides, "imk.lambda": 0.0}) for s in range(seeds)],
            ),
            ("(3) integrated + graph", [run_one(name, s, overrides) for s in range(seeds)]),
        ]
        for case, runs in cases:
            print(f"| {label(name)} | {case} | {summarise(runs)} |", flush=True)


def grid(datasets: list[str], seeds: int, overrides: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in datasets:
        acc = np.zeros((len(GRID), len(GRID)))
        for i, lam in enumerate(GRID):
            for j, mu in enumerate(GRID):
                runs = [
                    run_one(name, s, {**overrides, "imk.lambda": lam, "imk.mu": mu}) for s in range(seeds)
                ]
                acc[i, j] = 100 * np.mean([r["acc"] for r in runs])
        grid_figure(
            acc,
            f"fmvc-imk on {label(name)}: ACC over lambda x mu",
            f"ACC % (mean of {seeds} seeds)",
            out / f"imk_grid_{label(name)}.png",
        )
        print(describe(label(name), acc), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("table", "grid", "ablation", "merged", "starts"))
    parser.add_argument("--datasets", nargs="+", default=["hw", "orl", "yale", "sonar"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--set", nargs="*", default=[], help="run-config overrides key=value")
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    overrides = parse_overrides(args.set)
    if args.what == "table":
        table(args.datasets, args.seeds, overrides)
    elif args.what == "ablation":
        ablation(args.datasets, args.seeds, overrides)
    elif args.what == "merged":
        merged(args.datasets, args.seeds, overrides)
    elif args.what == "starts":
        starts(args.datasets, args.seeds, overrides)
    else:
        grid(args.datasets, args.seeds, overrides, args.out)


if __name__ == "__main__":
    main()
