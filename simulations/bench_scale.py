"""Benchmark: cost of a round against the number of samples, for every method, through Flower.

For each ``N`` it writes a seeded clustered multi-view file (``k`` classes, ``views`` views of
``dim`` features each with planted class feature blocks, see
:func:`simulations.clustered_data.clustered_views`, ``planted-blocks``), runs each
method on it with ``flwr run`` on a private SuperLink (simulation engine, one SuperNode per view),
and reads from the run's ``result.json``:

* seconds per round (median over rounds 2.., round 1 pays the set-up), and the set-up (handshake
  and round 1);
* peak resident memory of the ServerApp process and of the largest client (Ray actor) process;
* bytes down (the broadcast) and up (the largest reply) per client per round;
* per round (``per_round``): wall seconds, the clients' kernel seconds (sum and largest) and, for
  ``fedsonmf``, the floating-point operations of the clients' products with their views
  (:func:`fedsonmf_round_flops`), so that the kernels' rate can be read against the machine's.

It writes the records (``runs.jsonl``, resumed when rerun), a Markdown table and a log-log figure
of seconds per round and peak memory against ``N`` with the fitted slope of each method. Usage::

    python -m simulations.bench_scale --n 2000 10000 50000 100000 --out docs/scale
    python -m simulations.bench_scale --n 2000 10000 --methods fedsonmf --out results/bench_scale
    python -m simulations.bench_scale --n 100000 --methods fedsonmf --client-cpus 1 --out results/bench2
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.federated.results import load_result
from fedmf_app.methods.sonmf.params import resolve_rank, sonmf_options
from simulations.clustered_data import clustered_views

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("fedsonmf", "fmvc-imk", "fmvc-iai")
log = logging.getLogger("bench_scale")


def fedsonmf_round_flops(dims: list[int], n: int, rank: int, local_steps: int) -> float:
    """Floating-point operations of one ``fedsonmf`` round in the clients' products (diagnostics on).

    Per client with a dense ``d x n`` view and rank ``r``, each of the ``tau`` local steps takes
    :math:`XV^\\top` and :math:`U^\\top X` (``2dnr`` each) and :math:`(U^\\top U)V` (``2r^2 n``); the
    diagnostics take the residual :math:`UV - X` and its squares (``2dnr + 3dn``), the gradient at
    the round's start (``2dnr + 2r^2 n``) and :math:`VV^\\top` (``2r^2 n``). Products of ``d x r``
    matrices and the ``r x n`` updates are left out (memory traffic, not arithmetic).

    Parameters
    ----------
    dims : list of int
        Features ``d_p`` of each client's view.
    n : int
        Samples.
    rank : int
        ``r``.
    local_steps : int
        ``tau``.

    Returns
    -------
    float
        Summed over the clients.
    """
    r = rank
    per_step = [4 * d * n * r + 2 * r * r * n for d in dims]
    diagnostics = [4 * d * n * r + 3 * d * n + 4 * r * r * n for d in dims]
    return float(local_steps * sum(per_step) + sum(diagnostics))


def measure(
    link: LocalSuperLink, method: str, data: Path, n: int, runs: Path, args: argparse.Namespace
) -> dict:
    """One run of ``method`` on ``data`` (its run folder under ``runs``); the costs from its result.json."""
    name = f"{method}-n{n}"
    run_config = {
        "algorithm": method,
        "dataset": str(data),
        "num-clients": args.views,
        "num-clusters": args.k,
        "num-server-rounds": args.rounds,
        "out-dir": str(runs),
        "run-name": name,
        "round-timeout-s": 3600.0,
    }
    started = time.perf_counter()
    federation = {"client-resources-num-cpus": args.client_cpus}
    link.run(ROOT, run_config, num_supernodes=args.views, timeout=args.timeout, federation_config=federation)
    command_s = time.perf_counter() - started
    result = load_result(runs / name)
    if result["status"] != "completed":
        return {"method": method, "n": n, "status": result["status"], "error": result["error"]}
    rounds = result["rounds"]
    later = rounds[1:] or rounds
    summary = result["summary"]
    flops = None
    if method == "fedsonmf":
        cfg = result["config"]
        rank = resolve_rank(sonmf_options(cfg), args.k, [args.dim] * args.views)
        flops = fedsonmf_round_flops([args.dim] * args.views, n, rank, cfg["sonmf.local-steps"])
    per_round = [
        {
            "wall_s": r["wall_s"],
            "server_s": r["server_s"],
            "kernel_s_sum": r["client_kernel_s_sum"],
            "kernel_s_max": r["client_kernel_s_max"],
            "gflop": None if flops is None else flops / 1e9,
            "gflop_per_kernel_s": None if flops is None else flops / 1e9 / r["client_kernel_s_sum"],
        }
        for r in rounds
    ]
    return {
        "method": method,
        "n": n,
        "status": "completed",
        "code_version": result.get("code_version"),
        "config": result["config"],
        "rounds": len(rounds),
        "s_per_round": statistics.median(r["wall_s"] for r in later),
        "round1_s": rounds[0]["wall_s"],
        "command_s": command_s,
        "peak_mb_server": summary.get("peak_rss_mb_server"),
        "peak_mb_client": summary.get("peak_rss_mb_client_max"),
        "bytes_down": max(r["bytes_down_per_client"] for r in later),
        "bytes_up": max(r["bytes_up_per_client_max"] for r in later),
        "acc": result.get("final", {}).get("acc"),
        "per_round": per_round,
    }


def slope(rows: list[dict], key: str) -> float:
    """Least-squares slope of log(key) against log(N)."""
    pts = [(r["n"], r[key]) for r in rows if r.get(key)]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def table(records: list[dict]) -> str:
    """Markdown: one row per run, then the fitted slopes per method."""
    lines = [
        "| method | N | s / round | round 1 (s) | peak MB, server | peak MB, client | "
        "MB down / client / round | MB up / client / round | ACC |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (METHODS.index(r["method"]), r["n"])):
        if r["status"] != "completed":
            lines.append(f"| {r['method']} | {r['n']} | {r['status']}: {r['error']} | | | | | | |")
            continue
        lines.append(
            f"| {r['method']} | {r['n']} | {r['s_per_round']:.3f} | {r['round1_s']:.1f} | "
            f"{r['peak_mb_server']:.0f} | {r['peak_mb_client']:.0f} | {r['bytes_down'] / 2**20:.2f} | "
            f"{r['bytes_up'] / 2**20:.2f} | {r['acc'] if r['acc'] is None else round(100 * r['acc'], 1)} |"
        )
    lines += ["", "| method | slope of s / round | slope of peak memory (largest process) |", "|---|---|---|"]
    for method in METHODS:
        rows = [
            dict(r, peak=max(r["peak_mb_server"], r["peak_mb_client"])) for r in _completed(records, method)
        ]
        if rows:
            lines.append(f"| {method} | {slope(rows, 's_per_round'):.2f} | {slope(rows, 'peak'):.2f} |")
    return "\n".join(lines) + "\n"


def figure(records: list[dict], path: Path) -> None:
    """Log-log seconds per round and peak memory against N, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for method in METHODS:
        rows = sorted(_completed(records, method), key=lambda r: r["n"])
        if not rows:
            continue
        n = [r["n"] for r in rows]
        peak = [max(r["peak_mb_server"], r["peak_mb_client"]) for r in rows]
        axes[0].loglog(
            n,
            [r["s_per_round"] for r in rows],
            "o-",
            label=f"{method} (slope {slope(rows, 's_per_round'):.2f})",
        )
        rows_peak = [dict(r, peak=p) for r, p in zip(rows, peak)]
        axes[1].loglog(n, peak, "o-", label=f"{method} (slope {slope(rows_peak, 'peak'):.2f})")
    axes[0].set(xlabel="samples N", ylabel="seconds per round", title="time per round")
    axes[1].set(xlabel="samples N", ylabel="peak MB (largest process)", title="peak memory")
    axes[1].axhline(4096, color="grey", ls=":", lw=1)
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _completed(records: list[dict], method: str) -> list[dict]:
    return [r for r in records if r["method"] == method and r["status"] == "completed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 10000, 50000, 100000])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument(
        "--client-cpus",
        type=int,
        default=2,
        help="CPUs per Ray actor (client-resources-num-cpus; 2, Flower's default: one actor on 2 cores)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_scale")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "runs.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    done = {(r["method"], r["n"]) for r in records}
    with tempfile.TemporaryDirectory() as home, LocalSuperLink(home) as link:
        for n in args.n:
            data = Path(home) / f"clustered-n{n}.npz"
            views, y = clustered_views(
                n,
                args.k,
                [args.dim] * args.views,
                args.seed,
                noise=1.0,
                centre_scale=3.0,
                centres="planted-blocks",
            )
            np.savez(data, **{f"X_{i}": v for i, v in enumerate(views)}, y=y)
            del views
            for method in args.methods:
                if (method, n) in done:
                    continue
                record = measure(link, method, data, n, Path(home) / "runs", args)
                log.info("%s", record)
                records.append(record)
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
            data.unlink()
    text = table(records)
    (args.out / "scale.md").write_text(text)
    figure(records, args.out / "scale.png")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
