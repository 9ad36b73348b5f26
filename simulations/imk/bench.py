"""Benchmark: FMVC-IMK at scale without Flower (the kernels the Strategy and clients call).

For ``N`` samples and ``M`` views of a seeded clustered data set it measures, in one process:

* the secure sum of the graphs: per client the kNN graph, the dense fixed-point encoding and the
  pairwise masks (X25519 + ChaCha20 keystreams), the upload size, and the server's sum and decode;
* the rounds: seconds per round for all clients one after another (as one Ray actor runs them),
  the server's sparse solve (20), and the objective;
* the peak resident memory of the process (every client and the server together, so an upper
  bound for any one of them);
* optionally Paillier (``phe``, 2048-bit): seconds per encrypted value, extrapolated to one
  client's ``N(N-1)/2`` values (it is not run in full: it would take hours to days).

Usage::

    flock /work/cpu.lock python -m simulations.imk.bench --n 2000 10000 --views 4 --rounds 10
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from fedmf_app.common.graphs import knn_similarity, laplacian
from fedmf_app.common.secure_sum import (
    add_pairwise_masks,
    decode_upper,
    derive_pair_key,
    encode_upper,
    generate_private_key,
    public_key_bytes,
    sum_uploads,
)
from fedmf_app.methods.imk.client_updates import (
    IMKParams,
    client_round,
    init_client,
    multiplier_step,
    preprocess_view,
)
from fedmf_app.methods.imk.reference import client_rng, server_rng
from fedmf_app.methods.imk.server_updates import (
    ServerSolver,
    initial_global_h,
    normalised_laplacian_sum,
    objective,
)


def peak_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def clustered_views(n: int, dims: list[int], k: int, seed: int) -> list[np.ndarray]:
    """Views ``centre_m[y] + N(0, 1.5^2)``, preprocessed (z-score, unit Frobenius norm)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return [
        preprocess_view(2.0 * rng.normal(size=(k, d))[y] + 1.5 * rng.normal(size=(n, d)), "zscore", True)
        for d in dims
    ]


def secure_sum(views: list[np.ndarray], neighbours: int, frac_bits: int = 16) -> tuple[dict, object]:
    """Masked graph sum as the clients and the server run it; costs and the Laplacian sum."""
    keys = [generate_private_key() for _ in views]
    public = [public_key_bytes(k) for k in keys]
    uploads, graph_s, mask_s = [], [], []
    for i, x in enumerate(views):
        t0 = time.perf_counter()
        enc = encode_upper(knn_similarity(x, neighbours), frac_bits)
        t1 = time.perf_counter()
        pair = {j: derive_pair_key(keys[i], pk, b"bench") for j, pk in enumerate(public) if j != i}
        uploads.append(add_pairwise_masks(enc, i, pair))
        graph_s.append(t1 - t0)
        mask_s.append(time.perf_counter() - t1)
    t0 = time.perf_counter()
    total = decode_upper(sum_uploads(uploads), views[0].shape[0], frac_bits)
    server_s = time.perf_counter() - t0
    costs = {
        "upload_mb_per_client": uploads[0].nbytes / 2**20,
        "client_graph_encode_s_max": max(graph_s),
        "client_mask_s_max": max(mask_s),
        "server_sum_decode_s": server_s,
    }
    uploads.clear()
    return costs, laplacian(total)


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


def bench(n: int, views_count: int, k: int, rounds: int, seed: int, with_paillier: bool) -> dict:
    """One configuration; returns the measurements."""
    dims = [40, 80, 60, 100, 30, 50][:views_count]
    views = clustered_views(n, dims, k, seed)
    params = IMKParams()
    out: dict = {"n": n, "views": views_count, "k": k, "dims": dims}
    costs, lsum = secure_sum(views, neighbours=5)
    out.update(costs)
    t0 = time.perf_counter()
    states = [
        init_client(x, k, k, views_count, "normalised-indicator", params, client_rng(seed, i))
        for i, x in enumerate(views)
    ]
    out["client_init_s_max"] = (time.perf_counter() - t0) / views_count
    lap = normalised_laplacian_sum(lsum, views_count, 5)
    solver = ServerSolver(lap, views_count, params, "cg")
    h = initial_global_h([s.h for s in states], "kmeans-concat", server_rng(seed))
    phis = [np.zeros_like(h) for _ in views]
    round_s, server_s, objectives = [], [], []
    for t in range(1, rounds + 1):
        t0 = time.perf_counter()
        prev = [s.h for s in states]
        stats = []
        for i, x in enumerate(views):
            states[i], st = client_round(x, states[i], h, params, first=t == 1)
            stats.append(st)
        t1 = time.perf_counter()
        if t > 1:
            phis = [multiplier_step(phi, hp, h, params.rho) for phi, hp in zip(phis, prev)]
        h = solver.update(phis, [s.h for s in states], h)
        t2 = time.perf_counter()
        objectives.append(
            objective([s.residual for s in stats], [s.ortho for s in stats], h, lap, params)["objective"]
        )
        round_s.append(t2 - t0)
        server_s.append(t2 - t1)
    out.update(
        {
            "seconds_per_round_mean": float(np.mean(round_s)),
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
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paillier", action="store_true", help="also time phe (pip install phe)")
    args = parser.parse_args()
    for n in args.n:  # peak memory is cumulative: run the largest N last
        print(json.dumps(bench(n, args.views, args.k, args.rounds, args.seed, args.paillier)), flush=True)


if __name__ == "__main__":
    main()
