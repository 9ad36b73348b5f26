"""FMVC-IAI cost: seconds per round and peak memory, all clients in one process, one torch thread.

Runs the in-process reference federation (:mod:`fedmf_app.methods.iai.reference`, the kernels the
Flower clients and strategy call), on views loaded exactly as the ClientApp loads them, one client
after the other, so that ``client_s`` is the CPU time a round costs all clients together
and ``client_s_max`` what the slowest client costs (the wall time of a round when every client has
its own core). Peak memory is the process's maximum resident set (``ru_maxrss``): an upper bound of
one client's footprint plus the server's. The clustering is scored against the ground truth after
every round (the federation itself never sees labels).

Usage::

    python -m simulations.iai.bench --run dataset=hw num-clients=6 \
        missing-rate=0.5 num-server-rounds=4 --out docs/iai/bench_hw.json
    python -m fedmf_app.data.noisy_mnist --mnist ../shared/data/mnist_t10k --out /tmp/nm.npz
    python -m simulations.iai.bench --run dataset=/tmp/nm.npz num-clients=2 \
        missing-rate=0.5 num-server-rounds=3 --out docs/iai/bench_noisy_mnist.json
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data import load_client_view
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.methods.iai.options import iai_params
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.options.run_config import validate_run_config


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _parse(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def benchmark(overrides: dict[str, Any]) -> dict[str, Any]:
    """Run FMVC-IAI in process and time every round.

    Parameters
    ----------
    overrides : dict
        Run-config overrides (``num-server-rounds`` counts the set-up round).

    Returns
    -------
    dict
        ``config``, ``n``, ``dims`` and one record per round (``client_s``, ``client_s_max``,
        ``server_s``, ``peak_rss_mb``, scores).
    """
    torch.set_num_threads(1)
    cfg = validate_run_config(overrides)
    m, seed = cfg["num-clients"], cfg["seed"]
    views = [load_client_view(cfg, p) for p in range(m)]
    truth = views[0].labels
    n = views[0].features.shape[0]
    k = cfg["num-clusters"] or int(truth.max()) + 1
    params = iai_params(cfg, k)
    mask = missing_view_mask(n, m, cfg["missing-rate"], seed, cfg["missing-views-dropped"])
    federation = IAIReference([v.features for v in views], mask, params, seed)
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
        state = federation.setup(timed) if s == 1 else federation.train_round(timed)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs="*", default=[], help="run-config overrides key=value")
    parser.add_argument("--out", help="write the records to this JSON file")
    args = parser.parse_args()
    result = benchmark({"algorithm": "fmvc-iai", **_parse(args.run)})
    train = [r for r in result["rounds"] if r["round"] > 1]
    summary = {
        "n": result["n"],
        "views": len(result["dims"]),
        "setup_client_s": result["rounds"][0]["client_s"],
        "train_round_client_s_mean": float(np.mean([r["client_s"] for r in train])) if train else None,
        "train_round_client_s_max_mean": (
            float(np.mean([r["client_s_max"] for r in train])) if train else None
        ),
        "server_s_mean": float(np.mean([r["server_s"] for r in train])) if train else None,
        "peak_rss_mb": result["rounds"][-1]["peak_rss_mb"],
        "final": {key: result["rounds"][-1][key] for key in ("acc", "nmi", "ari")},
    }
    result["summary"] = summary
    result["final"] = {key: result["rounds"][-1][key] for key in ("acc", "nmi", "purity", "ari")}
    print(json.dumps(summary, indent=1))  # noqa: T201
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
