"""Benchmark: FMVC-IMK at scale without Flower (the kernels the Strategy and clients call).

For ``N`` samples and ``M`` views of a seeded clustered data set it measures, in one process:

* the secure sum of the graphs (``--graph``: ``anchor``, the default, or ``knn``): per client the
  graph (anchor graph on the shared anchors, or kNN graph), its dense fixed-point encoding
  (``N x a`` or ``N(N-1)/2`` words) and the pairwise masks (X25519 + ChaCha20 keystreams), the
  upload size, and the server's sum and decode;
* the rounds: seconds per round for all clients one after another (as one Ray actor runs them),
  the server's solve (20) (Woodbury or CG), and the objective;
* wall-clock and CPU seconds (the CPU time of this process: on a shared machine it is the
  steadier measure; single-threaded BLAS, ``OMP_NUM_THREADS=1``, makes the two agree when the
  machine is otherwise idle);
* the peak resident memory of the process (every client and the server together, so an upper
  bound for any one of them);
* optionally Paillier (``phe``, 2048-bit): seconds per encrypted value, extrapolated to one
  client's ``N(N-1)/2`` values (it is not run in full: it would take hours to days).

Usage (one process per ``N`` for the peak memory of that ``N``)::

    python -m simulations.imk.bench --n 10000 --dims 50 50 50 50 --rounds 10
    python -m simulations.imk.bench --n 100000 --dims 50 50 50 50 --rounds 10
    python -m simulations.imk.bench --n 10000 --graph knn --rounds 10      # the exact kNN graph
    python -m simulations.imk.bench --markdown results.jsonl                # the table of docs/imk.md
    python -m simulations.imk.bench --n 100000 --dims 50 50 50 50 --rounds 3 --flower --secure-aggregation
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from fedmf_app.common.graphs import knn_similarity, laplacian
from fedmf_app.common.secure_sum_math import (
    append_check_words,
    decode_fixed,
    derive_pair_key,
    encode_fixed,
    generate_private_key,
    mask_words,
    matrix_from_values,
    matrix_values,
    message_key,
    public_key_bytes,
    split_check_words,
    sum_words,
    upper_from_values,
    upper_values,
)
from fedmf_app.common.summation import add_up, add_up_scalars
from fedmf_app.methods.imk.client_updates import client_round, init_client, preprocess_view, view_anchor_graph
from fedmf_app.methods.imk.model import anchor_indices, client_rng, multiplier_step, server_rng
from fedmf_app.methods.imk.params import STARTS, IMKParams
from fedmf_app.methods.imk.server_updates import (
    AnchorLaplacian,
    initial_global_h,
    make_solver,
    normalised_laplacian_sum,
    objective,
)
from simulations.clustered_data import clustered_views


def peak_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_flower(
    n: int,
    dims: list[int],
    k: int,
    rounds: int,
    seed: int,
    graph: str,
    num_anchors: int,
    secure: bool,
    start: str = "auto",
) -> dict:
    """The same data through the Flower strategy and clients (:mod:`fedmf_app.in_process`).

    The views go to a temporary ``.npz`` with their labels (so every round also scores the labels
    by k-means, as a run with ground truth does); defaults otherwise (``start``: run config
    ``imk.start``).
    """
    from fedmf_app.in_process import run_in_process

    views, y = clustered_views(n, k, dims, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clustered.npz"
        np.savez(path, y=y, **{f"X_{m}": x for m, x in enumerate(views)})
        del views
        t0 = time.perf_counter()
        overrides = {
            "algorithm": "fmvc-imk",
            "dataset": str(path),
            "num-clients": len(dims),
            "num-server-rounds": rounds,
            "imk.tol": 0.0,
            "imk.graph": graph,
            "imk.anchors": num_anchors,
            "imk.start": start,
            "seed": seed,
            "secure-aggregation": secure,
        }
        data = run_in_process(overrides, Path(tmp) / "out").recorder.data
    return {
        "n": n,
        "flower": True,
        "graph": graph,
        "start": start,
        "secure_aggregation": secure,
        "status": data["status"],
        "total_s": time.perf_counter() - t0,
        "setup_s": data["summary"]["setup"]["setup_s"],
        "upload_bytes_per_client": data["summary"]["setup"]["upload_bytes_per_client"],
        "round_wall_s": [r["wall_s"] for r in data["rounds"]],
        "round_server_s": [r["server_s"] for r in data["rounds"]],
        "acc": data["final"].get("acc"),
        "peak_rss_mb": peak_mb(),
    }


def secure_sum(
    views: list[np.ndarray], neighbours: int, anchors: np.ndarray | None, frac_bits: int = 36
) -> tuple[dict, object]:
    """Masked graph sum as the clients and the server run it (the app's one secure-sum path:
    fixed point mod 2^64, run config ``secure-aggregation-frac-bits``); costs and the server's
    Laplacian.

    ``anchors`` None: the kNN graphs (upper triangles); else the anchor graphs on those samples.
    """
    keys = [generate_private_key() for _ in views]
    public = [public_key_bytes(k) for k in keys]
    m = len(views)
    uploads, graph_s, mask_s = [], [], []
    for i, x in enumerate(views):
        t0 = time.perf_counter()
        if anchors is None:
            values = upper_values(knn_similarity(x, neighbours))
        else:
            values = matrix_values(view_anchor_graph(x, anchors, neighbours))
        t1 = time.perf_counter()
        pair = {
            j: message_key(derive_pair_key(keys[i], pk, b"bench"), 0, "graph")
            for j, pk in enumerate(public)
            if j != i
        }
        words = append_check_words(encode_fixed(values, frac_bits, m, np.random.default_rng(i)))
        uploads.append(mask_words(words, i, pair))
        graph_s.append(t1 - t0)
        mask_s.append(time.perf_counter() - t1)
    t0 = time.perf_counter()
    n = views[0].shape[0]
    total = decode_fixed(split_check_words(sum_words(uploads), m), frac_bits)
    if anchors is None:
        lap = normalised_laplacian_sum(laplacian(upper_from_values(total, n)), m, neighbours)
    else:
        lap = AnchorLaplacian(matrix_from_values(total, (n, anchors.size)) / m)
    server_s = time.perf_counter() - t0
    costs = {
        "upload_mb_per_client": uploads[0].nbytes / 2**20,
        "client_graph_encode_s_max": max(graph_s),
        "client_mask_s_max": max(mask_s),
        "server_sum_decode_s": server_s,
    }
    uploads.clear()
    return costs, lap


def paillier_cost(n: int, values: int = 20) -> dict[str, float]:
    """Seconds per 2048-bit Paillier encryption (``phe``) and the extrapolation to ``N(N-1)/2``."""
    from phe import paillier

    public, _ = paillier.generate_paillier_keypair(n_length=2048)
    t0 = time.perf_counter()
    for v in range(values):
        public.encrypt(v % 2)
    per_value = (time.perf_counter() - t0) / values
    return {
        "paillier_s_per_value": per_value,
        "paillier_client_hours_extrapolated": per_value * n * (n - 1) / 2 / 3600,
    }


def bench(
    n: int, dims: list[int], k: int, rounds: int, seed: int, graph: str, num_anchors: int, with_paillier: bool
) -> dict:
    """One configuration; returns the measurements."""
    views_count = len(dims)
    views = [preprocess_view(x, "zscore", True) for x in clustered_views(n, k, dims, seed)[0]]
    params = IMKParams()  # the run-config defaults
    anchors = anchor_indices(seed, n, num_anchors) if graph == "anchor" else None
    out: dict = {"n": n, "views": views_count, "k": k, "dims": dims, "graph": graph}
    if anchors is not None:
        out["anchors"] = int(anchors.size)
    t0, c0 = time.perf_counter(), time.process_time()
    costs, lap = secure_sum(views, 5, anchors)
    out.update(costs)
    out["setup_graph_s"] = time.perf_counter() - t0
    out["setup_graph_cpu_s"] = time.process_time() - c0
    t0 = time.perf_counter()
    states = [
        init_client(x, k, k, views_count, "normalised-indicator", params, client_rng(seed, i), "auto")
        for i, x in enumerate(views)
    ]
    out["client_init_s_max"] = (time.perf_counter() - t0) / views_count
    solver = make_solver(lap, views_count, params, "cg")
    h = initial_global_h([s.h for s in states], "kmeans-concat", server_rng(seed))
    phi_sum, h_sum = np.zeros_like(h), None
    round_s, round_cpu_s, server_s, objectives = [], [], [], []
    for t in range(1, rounds + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        stats = []
        for i, x in enumerate(views):
            states[i], st = client_round(x, states[i], h, params, first=t == 1)
            stats.append(st)
        t1 = time.perf_counter()
        if t > 1:
            phi_sum = multiplier_step(phi_sum, h_sum, views_count * h, params.rho)
        h_sum = add_up([s.h for s in states])
        h = solver.update(phi_sum, h_sum, h)
        t2 = time.perf_counter()
        residual_sum = add_up_scalars([s.residual for s in stats])
        ortho_sum = add_up_scalars([s.ortho for s in stats])
        objectives.append(objective(residual_sum, ortho_sum, h, lap, params)["objective"])
        round_s.append(t2 - t0)
        round_cpu_s.append(time.process_time() - c0)
        server_s.append(t2 - t1)
    out.update(
        {
            "seconds_per_round_mean": float(np.mean(round_s)),
            "cpu_seconds_per_round_mean": float(np.mean(round_cpu_s)),
            "server_solve_s_mean": float(np.mean(server_s)),
            "objective_first_last": [objectives[0], objectives[-1]],
            "objective_non_increasing": bool(np.all(np.diff(objectives) <= 0)),
            "peak_rss_mb": peak_mb(),
        }
    )
    if with_paillier:
        out.update(paillier_cost(n))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", "--num-samples", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--dims", type=int, nargs="+", default=[40, 80, 60, 100], help="features per view")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph", choices=("anchor", "knn"), default="anchor", help="run config imk.graph")
    parser.add_argument("--anchors", type=int, default=256, help="run config imk.anchors")
    parser.add_argument("--paillier", action="store_true", help="also time phe (pip install phe)")
    parser.add_argument("--markdown", type=Path, help="print the table of a file of this script's JSON lines")
    parser.add_argument(
        "--flower", action="store_true", help="run the Flower strategy and clients in process instead"
    )
    parser.add_argument("--secure-aggregation", action="store_true", help="with --flower")
    parser.add_argument("--start", choices=STARTS, default="auto", help="with --flower: run config imk.start")
    args = parser.parse_args()
    if args.markdown:
        print(markdown_table([json.loads(line) for line in args.markdown.read_text().splitlines() if line]))
        return
    for n in args.n:  # peak memory is cumulative: run the largest N last
        common = (n, args.dims, args.k, args.rounds, args.seed, args.graph, args.anchors)
        if args.flower:
            result = bench_flower(*common, args.secure_aggregation, args.start)
        else:
            result = bench(*common, args.paillier)
        print(json.dumps(result), flush=True)


def markdown_table(results: list[dict]) -> str:
    """The scale table of docs/imk.md from :func:`bench` results."""
    lines = [
        "| graph | N | views x features | upload per client | setup: graph + encode, masks (slowest client); "
        "server sum + decode | setup CPU s (all) | s/round (all clients + server), wall / CPU | "
        "of which server solve | peak memory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        graph = f"anchor (a = {r['anchors']})" if r["graph"] == "anchor" else "knn"
        lines.append(
            f"| {graph} | {r['n']:,} | {r['views']} x {'/'.join(str(d) for d in r['dims'])} | "
            f"{r['upload_mb_per_client']:.1f} MiB | {r['client_graph_encode_s_max']:.2f} s, "
            f"{r['client_mask_s_max']:.2f} s; {r['server_sum_decode_s']:.2f} s | "
            f"{r['setup_graph_cpu_s']:.1f} s | "
            f"{r['seconds_per_round_mean']:.3f} / {r['cpu_seconds_per_round_mean']:.3f} s | "
            f"{r['server_solve_s_mean']:.3f} s | "
            f"{r['peak_rss_mb'] / 1024:.2f} GiB |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
