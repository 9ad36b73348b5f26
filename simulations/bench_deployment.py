"""Benchmark: seconds per round on a real federation (SuperLink + SuperNodes) vs. the simulation.

For each node count, runs ``fedsonmf`` with the same run config and seed once on
:class:`~fedmf_app.deployment.federation.LocalFederation` and once on Flower's simulation engine
(there with unsigned secure-aggregation keys: a simulated node holds no signing key), and reports
the median round wall time (rounds 2..), the time to start, hand-shake and stop, and the largest
relative difference between the two runs' per-round residuals. With ``--breakdown`` it repeats the
first deployment run with Flower's DEBUG log (timestamps) and splits each round into: waiting for
the SuperNode to poll, starting the ClientApp process (Python + imports), the ClientApp's work
(load the view, kernels, push the reply), sending the reply, and waiting for the ServerApp to poll.
With ``--kill`` it times how long after a SuperNode is killed (SIGKILL, after round 1) the run
ends, for each given ``round-timeout-s``. With ``--floor`` it also runs the no-op app of
``simulations/floor_app`` (empty messages, an empty reply at once, replies pulled every 0.1 s, without
fedmf_app's back-off) on
a federation of the same size: Flower's own time per round, against which ours is read.

Usage::

    python -m simulations.bench_deployment --nodes 3 6 --rounds 8 --breakdown
    python -m simulations.bench_deployment --nodes 6 --no-simulation --task-poll-interval 1.0
    python -m simulations.bench_deployment --nodes --kill 12 600
    python -m simulations.bench_deployment --nodes 3 --rounds 8 --no-simulation --floor
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
from flwr.common.config import parse_config_args

from fedmf_app.deployment.federation import LocalFederation, with_deployment_defaults
from fedmf_app.deployment.superlink import DEFAULT_TASK_POLL_INTERVAL, LocalSuperLink
from fedmf_app.federated.results import load_result

ROOT = Path(__file__).resolve().parents[1]
FLOOR_APP = Path(__file__).resolve().parent / "floor_app"
_FLOOR_ROUND = re.compile(r"floor round (\d+): ([0-9.]+) s")
_STAMP = re.compile(r"^(?:\x1b\[[0-9;]*m)?\w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")


#: Further run-config keys of every run (``--run-config``).
EXTRA: dict = {}


def _config(nodes: int, rounds: int, out: Path, name: str) -> dict:
    # what the federation command runs unless told otherwise
    return with_deployment_defaults(
        {
            "num-clients": nodes,
            "num-server-rounds": rounds,
            "heterogeneity": 0.3,
            "seed": 3,
            "out-dir": str(out),
            "run-name": name,
            **EXTRA,
        }
    )


def _summary(result: dict) -> dict:
    rounds = result["rounds"]
    first = rounds[0]
    return {
        "median_round_s": statistics.median(r["wall_s"] for r in rounds[1:]),
        "median_kernel_max_s": statistics.median(r["client_kernel_s_max"] for r in rounds[1:]),
        "handshake_s": first["elapsed_s"] - first["wall_s"],
        "residuals": [r["residual"] for r in rounds],
    }


#: Lines of the streamed run log that mark the phases of ``flwr run``, in order.
_MARKS = (
    ("`flwr` command started", "Using SuperLink"),
    ("app bundle built and uploaded, run created", "Successfully started run"),
    ("ServerApp process started", "Start `flwr-serverapp`"),
    ("ServerApp loaded the app", "fedmf_app: fedsonmf"),
    ("handshake done", "run folder:"),
    ("last round aggregated", "run completed; results in"),
    ("ServerApp's summary logged", "Run finished"),
)


class _Stamps:
    """A text stream that notes when each line of :data:`_MARKS` first arrives."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.seen: dict[str, float] = {}

    def write(self, line: str) -> None:
        for label, needle in _MARKS:
            if needle in line and label not in self.seen:
                self.seen[label] = time.perf_counter() - self.start

    def flush(self) -> None:
        """Nothing buffered."""


def deployment(
    nodes: int, rounds: int, out: Path, name: str, task_poll: float = DEFAULT_TASK_POLL_INTERVAL
) -> dict:
    """One run on a local federation; phases timed from outside, rounds from result.json."""
    with tempfile.TemporaryDirectory(prefix="fedmf-bench-") as work:
        t0 = time.perf_counter()
        federation = LocalFederation(
            Path(work) / "federation", nodes, ROOT, task_poll_interval=task_poll
        ).start()
        try:
            t1 = time.perf_counter()
            stamps = _Stamps(t0)
            outcome = federation.run(_config(nodes, rounds, out, name), echo=stamps)
            t2 = time.perf_counter()
            logs = [n.log_path.read_text(errors="replace") for n in federation.supernodes]
        finally:
            federation.stop()
        t3 = time.perf_counter()
    if outcome.status != "completed":
        raise RuntimeError(f"{name}: {outcome.error}")
    marks = {
        "SuperLink healthy, SuperNodes started": t1 - t0,
        **stamps.seen,
        "`flwr run` returned": t2 - t0,
        "everything stopped": t3 - t0,
    }
    return {
        "start_s": t1 - t0,
        "flwr_run_s": t2 - t1,
        "stop_s": t3 - t2,
        **_summary(load_result(outcome.result_path)),
        "server_log": outcome.log,
        "supernode_logs": logs,
        "marks": marks,
    }


def floor(nodes: int, rounds: int, task_poll: float = DEFAULT_TASK_POLL_INTERVAL) -> dict:
    """The no-op app (``simulations/floor_app``) on a local federation of ``nodes`` SuperNodes.

    Returns
    -------
    dict
        ``median_round_s`` (rounds 2..) and ``round_s`` (every round), seconds.
    """
    with tempfile.TemporaryDirectory(prefix="fedmf-floor-") as work:
        federation = LocalFederation(Path(work) / "fed", nodes, FLOOR_APP, task_poll_interval=task_poll)
        federation.start()
        try:
            proc = federation.superlink.run(
                FLOOR_APP, {"num-rounds": rounds, "num-nodes": nodes}, timeout=120.0 + 30.0 * rounds
            )
        finally:
            federation.stop()
    seconds = floor_seconds(proc.stdout, rounds)
    return {"median_round_s": statistics.median(seconds[1:] or seconds), "round_s": seconds}


def floor_seconds(log_text: str, rounds: int) -> list[float]:
    """Seconds of every round of the floor app, read from its streamed log.

    Raises
    ------
    RuntimeError
        When the log does not hold ``rounds`` rounds (with the end of the log).
    """
    seconds = [float(m.group(2)) for m in _FLOOR_ROUND.finditer(log_text)]
    if len(seconds) != rounds:
        raise RuntimeError(f"floor app: {len(seconds)} of {rounds} rounds logged:\n{log_text[-2000:]}")
    return seconds


def simulation(nodes: int, rounds: int, out: Path, name: str) -> dict:
    """The same run on Flower's simulation engine, with unsigned secure-aggregation keys: a
    simulated node has no node config, so no signing key (a signed-keys run would be refused)."""
    config = {**_config(nodes, rounds, out, name), "secure-aggregation-signed-keys": False}
    with tempfile.TemporaryDirectory(prefix="fedmf-bench-") as home:
        t0 = time.perf_counter()
        with LocalSuperLink(home) as link:
            t1 = time.perf_counter()
            link.run(ROOT, config, num_supernodes=nodes, timeout=1800)
            t2 = time.perf_counter()
        t3 = time.perf_counter()
    result = load_result(out / name)
    if result["status"] != "completed":
        raise RuntimeError(f"{name}: {result['error']}")
    return {"start_s": t1 - t0, "flwr_run_s": t2 - t1, "stop_s": t3 - t2, **_summary(result)}


def killed_node(round_timeout: float, out: Path) -> dict:
    """3 nodes; SIGKILL SuperNode 2 once round 1 is in result.json; time until the run ends."""
    name = f"killed-rt{round_timeout:g}"
    result_path = out / name / "result.json"
    killed: list[float] = []
    with tempfile.TemporaryDirectory(prefix="fedmf-bench-") as work:
        with LocalFederation(Path(work) / "federation", 3, ROOT) as federation:

            def kill_after_round_one(stop: threading.Event) -> None:
                while not stop.wait(0.1):
                    if result_path.exists() and load_result(result_path)["rounds"]:
                        federation.supernodes[2].kill()
                        killed.append(time.perf_counter())
                        return

            stop = threading.Event()
            killer = threading.Thread(target=kill_after_round_one, args=(stop,), daemon=True)
            killer.start()
            try:
                outcome = federation.run(
                    {
                        "num-server-rounds": 30,
                        "round-timeout-s": round_timeout,
                        "out-dir": str(out),
                        "run-name": name,
                    }
                )
            finally:
                stop.set()
            ended = time.perf_counter()
    if not killed:
        raise RuntimeError(f"{name}: round 1 never finished ({outcome.error})")
    result = load_result(result_path)
    return {
        "round_timeout_s": round_timeout,
        "ended_after_kill_s": ended - killed[0],
        "status": result["status"],
        "rounds_kept": len(result["rounds"]),
        "error": result["error"],
    }


def _time(line: str) -> float | None:
    match = _STAMP.match(line)
    if match is None:
        return None
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def breakdown(server_log: str, supernode_logs: list[str]) -> dict[str, float]:
    """Median seconds per phase of rounds 2.. (DEBUG logs with timestamps)."""
    configure, aggregate, current = {}, {}, 0
    for line in server_log.splitlines():
        if (m := re.search(r"\[ROUND (\d+)\]", line)) and "RUN" not in line:
            current = int(m.group(1))
        elif "configure_fit:" in line:
            configure[current] = _time(line)
        elif "aggregate_fit:" in line:
            aggregate[current] = _time(line)
    phases: dict[str, list[float]] = {
        k: []
        for k in (
            "wait for SuperNode poll",
            "ClientApp process start (Python + imports)",
            "ClientApp work (view, kernels, push)",
            "reply upload",
            "wait for ServerApp poll",
        )
    }
    sent_last: dict[int, float] = {}
    for text in supernode_logs:
        marks: dict[int, dict[str, float]] = {}
        rnd = 0
        for line in text.splitlines():
            if m := re.search(r"\[RUN \d+, ROUND (\d+)\]", line):
                rnd = int(m.group(1))
            for key, needle in (
                ("recv", "Receiving: train"),
                ("proc", "Start `flwr-clientapp`"),
                ("done", "Finished task"),
                ("sent", "Sent successfully"),
            ):
                if needle in line and rnd and (t := _time(line)) is not None:
                    marks.setdefault(rnd, {}).setdefault(key, t)
        for rnd, mk in marks.items():
            if rnd < 2 or rnd not in configure or len(mk) < 4:
                continue
            phases["wait for SuperNode poll"].append(mk["recv"] - configure[rnd])
            phases["ClientApp process start (Python + imports)"].append(mk["proc"] - mk["recv"])
            phases["ClientApp work (view, kernels, push)"].append(mk["done"] - mk["proc"])
            phases["reply upload"].append(mk["sent"] - mk["done"])
            sent_last[rnd] = max(sent_last.get(rnd, 0.0), mk["sent"])
    for rnd, sent in sent_last.items():
        if rnd in aggregate:
            phases["wait for ServerApp poll"].append(aggregate[rnd] - sent)
    return {k: statistics.median(v) for k, v in phases.items() if v}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[3, 6])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument(
        "--task-poll-interval",
        type=float,
        default=DEFAULT_TASK_POLL_INTERVAL,
        help="FLWR_SUPEREXEC_TASK_POLL_INTERVAL of the SuperNodes (Flower: 1.0)",
    )
    parser.add_argument("--no-simulation", action="store_true", help="deployment runs only")
    parser.add_argument("--floor", action="store_true", help="also the no-op app on the same federation")
    parser.add_argument(
        "--kill",
        type=float,
        nargs="*",
        default=[],
        metavar="ROUND_TIMEOUT_S",
        help="also: kill SuperNode 2 after round 1 with each round-timeout-s and time until the run ends",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench_deployment")
    parser.add_argument(
        "--run-config",
        default="",
        help="further run-config keys of every run, e.g. \"sonmf.basis-kernel='numpy'\"",
    )
    args = parser.parse_args()
    if args.run_config:
        EXTRA.update(parse_config_args([args.run_config]))
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for nodes in args.nodes:
        if args.floor:
            low = floor(nodes, args.rounds, args.task_poll_interval)
            print(
                f"floor ({nodes} nodes, no-op app): {low['median_round_s']:.2f} s per round, median; "
                f"rounds: {', '.join(f'{s:.2f}' for s in low['round_s'])}"
            )
        dep = deployment(nodes, args.rounds, args.out, f"deployment-m{nodes}", args.task_poll_interval)
        if args.floor:
            dep["floor_round_s"] = low["median_round_s"]
            print(f"ours ({nodes} nodes, fedsonmf): {dep['median_round_s']:.2f} s per round, median")
        if args.no_simulation:
            rows.append({"nodes": nodes, "deployment": dep, "max_rel_diff": float("nan")})
            continue
        sim = simulation(nodes, args.rounds, args.out, f"simulation-m{nodes}")
        diff = float(
            np.max(np.abs(np.subtract(dep["residuals"], sim["residuals"])) / np.abs(sim["residuals"]))
        )
        rows.append({"nodes": nodes, "deployment": dep, "simulation": sim, "max_rel_diff": diff})
    if rows:
        print(
            "| nodes | engine | round, median (s) | kernels, max over clients (s) | start (s) | "
            "`flwr run` (s) | of which handshake (s) | stop (s) | residuals, max rel. diff |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        for engine in ("deployment", "simulation"):
            if engine not in row:
                continue
            r = row[engine]
            print(
                f"| {row['nodes']} | {engine} | {r['median_round_s']:.2f} | "
                f"{r['median_kernel_max_s']:.3f} | {r['start_s']:.1f} | {r['flwr_run_s']:.1f} | "
                f"{r['handshake_s']:.1f} | {r['stop_s']:.1f} | {row['max_rel_diff']:.1e} |"
            )
    if rows:
        first = rows[0]
        print(
            f"\nOne deployment run ({first['nodes']} nodes, {args.rounds} rounds), seconds since "
            "the start, as seen by the caller:\n\n| moment | s |\n|---|---|"
        )
        for label, seconds in first["deployment"]["marks"].items():
            print(f"| {label} | {seconds:.1f} |")
    if args.breakdown and args.nodes:
        os.environ["FLWR_LOG_LEVEL"] = "DEBUG"
        nodes = args.nodes[0]
        dep = deployment(nodes, args.rounds, args.out, f"breakdown-m{nodes}", args.task_poll_interval)
        print(
            f"\nWhere a deployment round goes ({nodes} nodes, medians over rounds 2.. and nodes; "
            f"round median {dep['median_round_s']:.2f} s with DEBUG logging):\n"
        )
        print("| phase | seconds |\n|---|---|")
        for phase, seconds in breakdown(dep["server_log"], dep["supernode_logs"]).items():
            print(f"| {phase} | {seconds:.2f} |")
    for round_timeout in args.kill:
        row = killed_node(round_timeout, args.out)
        print(
            f"\nround-timeout-s = {round_timeout:g}: the run ended "
            f"{row['ended_after_kill_s']:.1f} s after SuperNode 2 was killed; status "
            f"{row['status']}, {row['rounds_kept']} round(s) kept; error: {row['error'][:160]}"
        )
    slim = [
        {
            k: (
                {kk: vv for kk, vv in v.items() if not kk.endswith("log") and kk != "supernode_logs"}
                if isinstance(v, dict)
                else v
            )
            for k, v in row.items()
        }
        for row in rows
    ]
    (args.out / "bench_deployment.json").write_text(json.dumps(slim, indent=1))


if __name__ == "__main__":
    main()
