"""FMVC-IAI cost: seconds per round and peak memory, all clients in one process, one thread.

Runs the in-process reference federation (:mod:`fedmf_app.methods.iai.reference`, the kernels the
Flower clients and strategy call), on views loaded exactly as the ClientApp loads them, one client
after the other, so that ``client_s`` is the CPU time a round costs all clients together
and ``client_s_max`` what the slowest client costs (the wall time of a round when every client has
its own core). Peak memory is the process's maximum resident set (``ru_maxrss``): an upper bound of
one client's footprint plus the server's. The clustering is scored against the ground truth after
every round (the federation itself never sees labels).

``--num-samples N`` runs on generated clustered data instead (``--views`` views of ``--view-dim``
Gaussian features around per-view cluster means of spread 0.3,
:func:`simulations.clustered_data.clustered_views`, stored as float32), written to a temporary
``.npz`` file that the clients load as a user's file. ``--table`` turns records into the
Markdown tables of docs/iai.md.

Usage::

    python -m simulations.iai.bench --run dataset=hw num-clients=6 \
        missing-rate=0.5 num-server-rounds=4 --out docs/iai/bench_hw.json
    python -m fedmf_app.data.noisy_mnist --mnist ../shared/data/mnist_t10k --out /tmp/nm.npz
    python -m simulations.iai.bench --run dataset=/tmp/nm.npz num-clients=2 \
        missing-rate=0.5 num-server-rounds=3 --out docs/iai/bench_noisy_mnist.json
    python -m simulations.iai.bench --num-samples 10000 --run missing-rate=0.5 \
        num-server-rounds=2 --out docs/iai/scale/cost_10000_default.json
    python -m simulations.iai.bench --table docs/iai/scale --out docs/iai/scale.md
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data import load_client_view
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.federated.results import code_version
from fedmf_app.methods.iai.params import iai_params
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.registry import data_needs, validate_run_config
from simulations.clustered_data import clustered_views
from simulations.overrides import parse_overrides
from simulations.spread import header, mean_spread


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def benchmark(overrides: dict[str, Any]) -> dict[str, Any]:
    """Run FMVC-IAI in process, one thread, and time every round.

    Parameters
    ----------
    overrides : dict
        Run-config overrides (``num-server-rounds`` counts the set-up round).

    Returns
    -------
    dict
        ``code_version`` (:func:`fedmf_app.federated.results.code_version`), ``config`` (the full
        validated run config), ``n``, ``dims`` and one record per round (``client_s``,
        ``client_s_max``, ``server_s``, ``peak_rss_mb``, scores).
    """
    torch.set_num_threads(1)
    version = code_version()  # before the run: the code it runs
    cfg = validate_run_config(overrides)
    with threadpool_limits(1):  # numpy / scipy BLAS too
        return {"code_version": version, **_benchmark(cfg)}


def _benchmark(cfg: dict[str, Any]) -> dict[str, Any]:
    m, seed = cfg["num-clients"], cfg["seed"]
    views = [load_client_view(cfg, p, needs=data_needs(cfg)) for p in range(m)]
    truth = views[0].labels
    n = views[0].features.shape[0]
    k = cfg["num-clusters"] or int(truth.max()) + 1
    params = iai_params(cfg, k, num_samples=n)
    mask = missing_view_mask(n, m, cfg["missing-rate"], seed, cfg["missing-views-dropped"])
    federation = IAIReference([v.features for v in views], params, k, seed, observed=mask)
    rounds: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for s in range(1, cfg["num-server-rounds"] + 1):
        times: list[float] = []

        def timed(work, times=times):
            start = time.perf_counter()
            out = work()
            times.append(time.perf_counter() - start)
            return out

        start = time.perf_counter()
        federation.round(timed)
        state = federation.state
        record = {
            "round": s,
            "client_s": sum(times),
            "client_s_max": max(times),
            "server_s": time.perf_counter() - start - sum(times),
            "peak_rss_mb": _peak_mb(),
        }
        if s > 1:
            record.update(components=state.components, weights=federation.weights.tolist())
        rounds.append({**record, **clustering_scores(truth, state.labels)})
        print(json.dumps(rounds[-1]), flush=True)  # noqa: T201 (script output)
    return {
        "config": cfg,
        "n": n,
        "dims": [v.features.shape[1] for v in views],
        "num_clusters": k,
        "total_s": time.perf_counter() - t0,
        "rounds": rounds,
    }


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    train = [r for r in result["rounds"] if r["round"] > 1]
    return {
        "n": result["n"],
        "views": len(result["dims"]),
        "setup_client_s": result["rounds"][0]["client_s"],
        "setup_server_s": result["rounds"][0]["server_s"],
        "train_round_client_s_mean": float(np.mean([r["client_s"] for r in train])) if train else None,
        "train_round_client_s_max_mean": (
            float(np.mean([r["client_s_max"] for r in train])) if train else None
        ),
        "server_s_mean": float(np.mean([r["server_s"] for r in train])) if train else None,
        "peak_rss_mb": result["rounds"][-1]["peak_rss_mb"],
        "final": {key: result["rounds"][-1][key] for key in ("acc", "nmi", "ari")},
    }


def _generated(args: argparse.Namespace, run: dict[str, Any], folder: str) -> dict[str, Any]:
    """Write the generated views to ``folder`` and point the run config at them."""
    views, labels = clustered_views(
        args.num_samples,
        args.clusters,
        [args.view_dim] * args.views,
        args.data_seed,
        noise=1.0,
        centre_scale=0.3,
    )
    views = [v.astype(np.float32) for v in views]
    path = Path(folder) / f"clustered_{args.num_samples}.npz"
    np.savez(path, **{f"X_{i}": v for i, v in enumerate(views)}, y=labels)
    return {"dataset": str(path), "num-clients": args.views, **run}


def table(folder: Path) -> str:
    """Markdown tables of the records (``*.json`` written by ``--out``) in ``folder``.

    Quality: ACC / NMI / ARI per data set, :func:`~simulations.spread.mean_spread` over the seeds
    (named in the table's caption); cost: one row per record of generated data.
    """
    quality: dict[str, list[dict[str, Any]]] = {}
    cost: list[tuple[int, str]] = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        cfg = record["config"]
        s = record["summary"]
        if record.get("generated"):
            cost.append(
                (
                    record["n"],
                    f"| {record['n']:,} | {s['views']} x {record['dims'][0]} | "
                    f"{s['setup_client_s']:.1f} | "
                    f"{s['setup_server_s']:.1f} | {s['train_round_client_s_mean']:.1f} | "
                    f"{s['train_round_client_s_max_mean']:.1f} | {s['server_s_mean']:.1f} | "
                    f"{s['peak_rss_mb'] / 1024:.2f} | {s['final']['acc']:.3f} / {s['final']['nmi']:.3f} |",
                )
            )
        else:
            name = Path(str(cfg["dataset"])).stem
            quality.setdefault(name, []).append({**record["final"], "seed": cfg["seed"], **s})
    lines = []
    if quality:
        lines += [
            header("ACC / NMI / ARI") + "; the time is the mean over the seeds.",
            "",
            "| data | seeds | ACC | NMI | ARI | training round, clients (s) | peak memory (GB) |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, runs in sorted(quality.items()):
            cells = [mean_spread((r[k] for r in runs), digits=3) for k in ("acc", "nmi", "ari")]
            seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
            secs = np.mean([r["train_round_client_s_mean"] for r in runs])
            peak = max(r["peak_rss_mb"] for r in runs) / 1024
            lines.append(f"| {name} | {seeds} | {' | '.join(cells)} | {secs:.1f} | {peak:.2f} |")
    if cost:
        lines += [
            *([""] if lines else []),
            "| N | views x features | set-up: clients (s) | set-up: server (s) | training round: "
            "clients, sum (s) | slowest client (s) | server (s) | peak memory (GB) | ACC / NMI |",
            "|---|---|---|---|---|---|---|---|---|",
            *(row for _, row in sorted(cost)),
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs="*", default=[], help="run-config overrides key=value")
    parser.add_argument("--out", help="write the records (or, with --table, the tables) to this file")
    parser.add_argument("--num-samples", type=int, help="generated clustered data with this many samples")
    parser.add_argument("--views", type=int, default=4, help="generated data: views (clients)")
    parser.add_argument("--view-dim", type=int, default=50, help="generated data: features per view")
    parser.add_argument("--clusters", type=int, default=10, help="generated data: clusters")
    parser.add_argument("--data-seed", type=int, default=0, help="generated data: seed")
    parser.add_argument("--table", type=Path, help="print the tables of the records in this folder")
    args = parser.parse_args()
    if args.table:
        text = table(args.table)
        if args.out:
            Path(args.out).write_text(text)
        print(text)  # noqa: T201
        return
    run = {"algorithm": "fmvc-iai", **parse_overrides(args.run)}
    with tempfile.TemporaryDirectory() as folder:
        if args.num_samples:
            run = _generated(args, run, folder)
        result = benchmark(run)
    result["generated"] = bool(args.num_samples)
    result["summary"] = _summary(result)
    result["final"] = {key: result["rounds"][-1][key] for key in ("acc", "nmi", "purity", "ari")}
    print(json.dumps(result["summary"], indent=1))  # noqa: T201
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
