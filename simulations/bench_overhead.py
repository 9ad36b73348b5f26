"""Benchmark: per-round wall time under Flower's simulation engine vs. time in our kernels.

Runs ``fedsonmf`` through the real ServerApp/ClientApp on a private SuperLink for each client
count and reports, from each run's ``result.json``, the median per-round wall time, the clients'
kernel time (sum and max over clients), the server's aggregation time, and the rest (Flower:
messaging, serialisation, Ray scheduling). Prints a Markdown table and writes it with the raw
numbers as JSON.

Usage::

    python -m simulations.bench_overhead --clients 3 20 --rounds 30 --out results/bench_overhead
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.federated.results import load_result

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench_overhead")


def measure(link: LocalSuperLink, clients: int, rounds: int, cpus: int, out: Path) -> dict:
    """One run; per-round medians from its result.json (round 1 excluded: it pays warm-up)."""
    name = f"m{clients}-cpus{cpus}"
    started = time.perf_counter()
    link.run(
        ROOT,
        {"num-clients": clients, "num-server-rounds": rounds, "out-dir": str(out), "run-name": name},
        num_supernodes=clients,
        federation_config={"client-resources-num-cpus": cpus},
        timeout=1800,
    )
    total = time.perf_counter() - started
    result = load_result(out / name)
    if result["status"] != "completed":
        raise RuntimeError(f"{name}: run {result['status']}: {result['error']}")
    rs = result["rounds"][1:]
    med = {
        k: statistics.median(r[k] for r in rs)
        for k in ("wall_s", "client_kernel_s_sum", "client_kernel_s_max", "server_s")
    }
    parallel = max(1, 2 // cpus)
    kernel = med["client_kernel_s_sum"] / parallel if parallel > 1 else med["client_kernel_s_sum"]
    return {
        "clients": clients,
        "cpus_per_client": cpus,
        "rounds": rounds,
        "command_s": total,
        **{f"median_{k}": v for k, v in med.items()},
        "flower_overhead_s": med["wall_s"] - kernel - med["server_s"],
        "flower_share": (med["wall_s"] - kernel - med["server_s"]) / med["wall_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[3, 20])
    parser.add_argument(
        "--cpus",
        type=int,
        nargs="+",
        default=[2, 1],
        help="client-resources-num-cpus (2 = one Ray actor on 2 cores)",
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_overhead")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as home, LocalSuperLink(home) as link:
        for clients in args.clients:
            for cpus in args.cpus:
                row = measure(link, clients, args.rounds, cpus, args.out)
                log.info("%s", row)
                rows.append(row)
    table = [
        "| clients | CPUs per client | round wall (median s) | client kernels, sum (s) | "
        "client kernels, max (s) | server (s) | Flower overhead (s) | overhead share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| {r['clients']} | {r['cpus_per_client']} | {r['median_wall_s']:.3f} | "
            f"{r['median_client_kernel_s_sum']:.3f} | {r['median_client_kernel_s_max']:.3f} | "
            f"{r['median_server_s']:.4f} | {r['flower_overhead_s']:.3f} | {r['flower_share']:.0%} |"
        )
    text = "\n".join(table)
    (args.out / "overhead.md").write_text(text + "\n")
    (args.out / "overhead.json").write_text(json.dumps(rows, indent=1))
    log.info("\n%s\n(written to %s)", text, args.out)


if __name__ == "__main__":
    main()
