"""Benchmark: time in paper A's client kernels per round, without Flower.

Runs the proposed method's local rounds and server steps in one process (``m`` clients one after
another, as one Ray actor runs them) on the synthetic data and reports seconds per round, the
share spent in the ``U`` solver, and a fingerprint of the trajectory (the final ``V``) so that two
versions of the kernels can be compared for speed *and* for giving the same numbers. Usage::

    python -m simulations.sonmf.bench_kernels --h 0 0.9 --rounds 20 --kernel numpy compiled
    PYTHONPATH=<other checkout> python -m simulations.sonmf.bench_kernels ...   # the other version's kernels
    python -m simulations.sonmf.bench_kernels --samples 100000      # one client round against its FLOPs

``--samples N`` times one client's round (the proposed method's ``tau`` local steps and the
diagnostics, as :class:`~fedmf_app.methods.sonmf.client.SparseONMFClient` runs them) on one view
of ``simulations.bench_scale``'s data (50 features, ``N`` samples, rank 10) and prints its
floating-point operations (:func:`simulations.bench_scale.fedsonmf_round_flops`) against its
seconds, beside the rate of the round's product :math:`XV^\\top` alone, the yardstick of what the
machine's BLAS does on these thin shapes.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np

import fedmf_app.methods.sonmf.nonneg_orth as nonneg_orth
import fedmf_app.methods.sonmf.updates as sonmf
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data.synthetic import SyntheticSpec, make_synthetic_view
from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions, random_feasible_basis
from fedmf_app.methods.sonmf.prox import prox_l21_nonneg


def run(h: float, rounds: int, clients: int, tau: int, seed: int, kernel: str) -> dict[str, float | str]:
    """``rounds`` rounds of the proposed method; seconds per round and in the ``U`` solver."""
    params = sonmf.SONMFParams(local_steps=tau, basis=BasisSolverOptions(kernel=kernel))
    spec = SyntheticSpec(heterogeneity=h, seed=seed)
    xs = [make_synthetic_view(spec, p).x for p in range(clients)]
    us = [random_feasible_basis(20, 6, rng_for(seed, Stream.CLIENT_INIT, p)) for p in range(clients)]
    v_bar = np.abs(rng_for(seed, Stream.SERVER_INIT).standard_normal((6, spec.num_samples)))
    v = prox_l21_nonneg(v_bar, params.effective_lr * params.mu)
    state = [(None, None)] * clients
    solver = nonneg_orth.solve_basis  # what every U step (BasisStep) calls
    solver_s = 0.0

    def timed_solver(*args, **kwargs):
        nonlocal solver_s
        t = time.perf_counter()
        out = solver(*args, **kwargs)
        solver_s += time.perf_counter() - t
        return out

    nonneg_orth.solve_basis = timed_solver
    try:
        started = time.perf_counter()
        for _ in range(rounds):
            outs = []
            for p, x in enumerate(xs):
                out = sonmf.local_round(x, us[p], v_bar, params, *state[p])
                us[p], state[p] = out.u, (out.v, out.grad_avg)
                outs.append(out.v_hat)
            v_bar, v = sonmf.server_step(v, outs, params)
        total = time.perf_counter() - started
    finally:
        nonneg_orth.solve_basis = solver
    return {
        "h": h,
        "s_per_round": total / rounds,
        "solver_share": solver_s / total,
        "final_v_sha1": hashlib.sha1(v.tobytes()).hexdigest()[:12],
    }


def client_round(n: int, repeats: int = 5, seed: int = 0) -> dict[str, float]:
    """Median seconds of one client round at ``n`` samples, its GFLOP, and the rate of ``X V^T``."""
    from simulations.bench_scale import clustered_views, fedsonmf_round_flops

    d, k = 50, 5
    r = 3 * k  # the default rank: sonmf.rank-per-cluster (3) x the clusters
    views, _ = clustered_views(n, k, [d], seed, noise=1.0, centre_scale=3.0, centres="planted-blocks")
    x = views[0].T  # (d, n), the layout a client holds: bench_scale's first view
    rng = np.random.default_rng(seed)
    u = random_feasible_basis(d, r, rng)
    v_bar = np.abs(rng.standard_normal((r, n)))
    params = sonmf.SONMFParams()
    first = sonmf.local_round(x, u, v_bar, params)

    def one_round() -> None:
        out = sonmf.local_round(x, first.u, 0.99 * v_bar, params, first.v, first.grad_avg)
        sonmf.client_diagnostics(x, first.u, out.u, out.v, out.xvt)

    def product() -> None:
        x @ first.v.T

    def median_s(fn) -> float:
        fn()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return float(np.median(times))

    seconds, product_s = median_s(one_round), median_s(product)
    gflop = fedsonmf_round_flops([d], n, r, params.local_steps) / 1e9
    product_rate = 2 * d * n * r / 1e9 / product_s
    return {"s": seconds, "gflop": gflop, "gflop_per_s": gflop / seconds, "product_gflop_per_s": product_rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--h", type=float, nargs="+", default=[0.0, 0.9])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tau", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", nargs="+", default=["compiled"], choices=("compiled", "numpy"))
    parser.add_argument("--samples", type=int, nargs="*", default=[], help="time one client round at N")
    args = parser.parse_args()
    if args.samples:
        lines = ["| N | s / client round | GFLOP | GFLOP/s | X V^T alone, GFLOP/s |", "|---|---|---|---|---|"]
        for n in args.samples:
            c = client_round(n)
            lines.append(
                f"| {n} | {c['s']:.3f} | {c['gflop']:.2f} | {c['gflop_per_s']:.1f} | "
                f"{c['product_gflop_per_s']:.1f} |"
            )
        sys.stdout.write("\n".join(lines) + "\n")
        return
    rows = [
        "| kernels from | U kernel | h | s / round | U solver share | final V (sha1) |",
        "|---|---|---|---|---|---|",
    ]
    for kernel in args.kernel:
        for h in args.h:
            r = run(h, args.rounds, args.clients, args.tau, args.seed, kernel)
            rows.append(
                f"| {sonmf.__file__} | {kernel} | {h} | {r['s_per_round']:.3f} | {r['solver_share']:.0%} "
                f"| {r['final_v_sha1']} |"
            )
    sys.stdout.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
