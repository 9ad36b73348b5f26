"""Benchmark: time in paper A's client kernels per round, without Flower.

Runs the proposed method's local rounds and server steps in one process (``m`` clients one after
another, as one Ray actor runs them) on the synthetic data and reports seconds per round, the
share spent in the ``U`` solver, and a fingerprint of the trajectory (the final ``V``) so that two
versions of the kernels can be compared for speed *and* for giving the same numbers. Usage::

    python -m simulations.sonmf.bench_kernels --h 0 0.9 --rounds 20 --kernel numpy compiled
    PYTHONPATH=<other checkout> python -m simulations.sonmf.bench_kernels ...   # the other version's kernels
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np

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
    solver = sonmf.solve_basis
    solver_s = 0.0

    def timed_solver(*args, **kwargs):
        nonlocal solver_s
        t = time.perf_counter()
        out = solver(*args, **kwargs)
        solver_s += time.perf_counter() - t
        return out

    sonmf.solve_basis = timed_solver
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
        sonmf.solve_basis = solver
    return {
        "h": h,
        "s_per_round": total / rounds,
        "solver_share": solver_s / total,
        "final_v_sha1": hashlib.sha1(v.tobytes()).hexdigest()[:12],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--h", type=float, nargs="+", default=[0.0, 0.9])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--tau", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel", nargs="+", default=["compiled"], choices=("compiled", "numpy"))
    args = parser.parse_args()
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
