"""Benchmark: per-round wall time under Flower's simulation engine vs. time in our kernels.

Runs ``fedsonmf`` through the real ServerApp/ClientApp on a private SuperLink for each client
count and reports, from each run's ``result.json``, the median per-round wall time, the clients'
kernel time (sum and max over clients), the server's aggregation time, and the rest (Flower:
messaging, serialisation, Ray scheduling). Prints a Markdown table and writes it with the raw
numbers as JSON.

With ``--floor`` each run is followed by the no-op app of ``simulations/floor_app`` on the same
simulated federation (same nodes, CPUs per client and rounds), its messages carrying the run's
bytes per client (down: the broadcast; up: the largest reply): Flower's own cost of such a round
and of starting and ending such a run, against which the run's are read. ``--run-config`` adds
run-config keys to every run, e.g. ``"dataset='hw'"``. A run ends after ``--rounds`` rounds or
at its convergence stop; the floor app then runs as many rounds as the run did.

Usage::

    python -m simulations.bench_overhead --clients 3 20 --rounds 30 --out results/bench_overhead
    python -m simulations.bench_overhead --clients 6 --cpus 2 1 --rounds 100 --floor \
        --run-config "dataset='hw'"
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from flwr.common.config import parse_config_args

from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.federated.results import load_result
from simulations.bench_deployment import FLOOR_APP, floor_seconds

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench_overhead")


def measure(
    link: LocalSuperLink, clients: int, rounds: int, cpus: int, out: Path, extra: dict | None = None
) -> dict:
    """One run; per-round medians from its result.json (round 1 excluded: it pays warm-up).

    Parameters
    ----------
    link : LocalSuperLink
        A simulation SuperLink.
    clients, rounds, cpus : int
        Simulated SuperNodes, ``num-server-rounds``, ``client-resources-num-cpus``.
    out : Path
        Folder of the run folders.
    extra : dict, optional
        Further run-config keys.

    Returns
    -------
    dict
        Medians of the round wall, kernel and server times, the Flower overhead, the command's
        time (``command_s``), the rounds run and their sum (``rounds_run``, ``rounds_s``), and
        the bytes per client of a round (``bytes_down``, ``bytes_up``).
    """
    name = f"m{clients}-cpus{cpus}"
    started = time.perf_counter()
    link.run(
        ROOT,
        {
            **(extra or {}),
            "num-clients": clients,
            "num-server-rounds": rounds,
            "out-dir": str(out),
            "run-name": name,
        },
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
        "rounds_run": len(result["rounds"]),
        "rounds_s": sum(r["wall_s"] for r in result["rounds"]),
        "bytes_down": max(r["bytes_down_per_client"] for r in result["rounds"]),
        "bytes_up": max(r["bytes_up_per_client_max"] for r in result["rounds"]),
    }


def floor(link: LocalSuperLink, clients: int, rounds: int, cpus: int, bytes_down: int, bytes_up: int) -> dict:
    """The no-op app on the same simulated federation, with messages of the given sizes.

    Parameters
    ----------
    link : LocalSuperLink
        A simulation SuperLink.
    clients, rounds, cpus : int
        As the run's.
    bytes_down, bytes_up : int
        Bytes of each message and of each reply (rounded down to float64 entries).

    Returns
    -------
    dict
        ``floor_median_round_s`` (rounds 2..), ``floor_rounds_s`` (their sum, round 1 included)
        and ``floor_command_s`` (the ``flwr run`` command).
    """
    started = time.perf_counter()
    proc = link.run(
        FLOOR_APP,
        {
            "num-rounds": rounds,
            "num-nodes": clients,
            "down-floats": bytes_down // 8,
            "up-floats": bytes_up // 8,
        },
        num_supernodes=clients,
        federation_config={"client-resources-num-cpus": cpus},
        timeout=120.0 + 30.0 * rounds,
    )
    total = time.perf_counter() - started
    seconds = floor_seconds(proc.stdout, rounds)
    return {
        "floor_median_round_s": statistics.median(seconds[1:] or seconds),
        "floor_rounds_s": sum(seconds),
        "floor_command_s": total,
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
    parser.add_argument(
        "--floor", action="store_true", help="also the no-op app with the run's bytes per round"
    )
    parser.add_argument(
        "--run-config", default="", help="further run-config keys of every run, e.g. \"dataset='hw'\""
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    extra = parse_config_args([args.run_config]) if args.run_config else {}
    rows = []
    with tempfile.TemporaryDirectory() as home, LocalSuperLink(home) as link:
        for clients in args.clients:
            for cpus in args.cpus:
                row = measure(link, clients, args.rounds, cpus, args.out, extra)
                if args.floor:
                    row.update(
                        floor(link, clients, row["rounds_run"], cpus, row["bytes_down"], row["bytes_up"])
                    )
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
    if args.floor:
        table += [
            "",
            "| clients | CPUs per client | rounds | KB down / up per client | round wall (median s) | "
            "floor round (median s) | rounds (s) | floor rounds (s) | `flwr run` (s) | "
            "floor `flwr run` (s) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            table.append(
                f"| {r['clients']} | {r['cpus_per_client']} | {r['rounds_run']} | "
                f"{r['bytes_down'] / 1e3:.0f} / {r['bytes_up'] / 1e3:.0f} | {r['median_wall_s']:.3f} | "
                f"{r['floor_median_round_s']:.3f} | {r['rounds_s']:.1f} | {r['floor_rounds_s']:.1f} | "
                f"{r['command_s']:.1f} | {r['floor_command_s']:.1f} |"
            )
    text = "\n".join(table)
    (args.out / "overhead.md").write_text(text + "\n")
    (args.out / "overhead.json").write_text(json.dumps(rows, indent=1))
    log.info("\n%s\n(written to %s)", text, args.out)


if __name__ == "__main__":
    main()
