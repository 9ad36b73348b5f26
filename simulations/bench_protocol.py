"""Benchmark: what the protocol's checks cost, what paper A's start reveals, and what a correctly
masked malicious client can still do.

Three measurements, in process (the real Strategies and NumPyClients, :mod:`fedmf_app.in_process`):

* ``checks``: the time spent per round in the protocol's checks (a client's admission of a request,
  the checks of its own reply and bounds, its ledger; the server's reply checks and the bound of a
  decoded sum), measured by wrapping those functions during whole runs, against the round's wall
  time: ``fedsonmf`` (10 synthetic clients, ``n = 2000``, with and without secure aggregation),
  ``fmvc-imk`` on HW (secure aggregation), ``fmvc-iai`` on HW with half the views missing.
* ``start``: how well the server can rebuild one view's sample Gram matrix
  :math:`G_p = X_p^\\top X_p` (relative Frobenius error of its best estimate) from what it sees of
  paper A's start and of one training round, per view of HW: the sketch share in the clear (the
  former default without secure aggregation), the masked sum of the shares (today's start), and one
  training round's upload in the clear (:math:`\\hat V_p^\\top \\hat V_p`), beside what the shared
  :math:`V` after round 1 gives (:math:`V^\\top V`), each at its best scale.
* ``poison``: one of three ``fedsonmf`` clients uploads, correctly masked, a target clustering's
  indicator instead of its upload in every round: unbounded (as before the bounds), scaled to the
  largest norm its bound allows (what the bound leaves), and no attack. Reported: the adjusted Rand
  index of the final clustering with the target and with the ground truth, over three seeds.

Usage::

    python -m simulations.bench_protocol --out docs/privacy --update-docs docs/privacy.md
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from flwr.common import parameters_to_ndarrays
from sklearn.metrics import adjusted_rand_score

import fedmf_app.federated.client as client_module
import fedmf_app.federated.strategy as strategy_module
import fedmf_app.methods.sonmf.client as sonmf_client
import fedmf_app.methods.sonmf.strategy as sonmf_strategy
from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data import load_client_view
from fedmf_app.federated.strategy import FederationError
from fedmf_app.in_process import InProcessFederation, InProcessProxy
from fedmf_app.methods.sonmf.client import FedSONMFClient, LocalWork
from fedmf_app.methods.sonmf.start import gram_sketch, sketch_test_matrix
from fedmf_app.registry import data_needs, validate_run_config
from simulations.clustered_data import clustered_views

log = logging.getLogger("bench_protocol")

#: The runs whose checks are timed: label -> run config.
CHECK_RUNS: dict[str, dict[str, Any]] = {
    "fedsonmf, 10 synthetic clients, n = 2000": {"num-samples": 2000, "num-server-rounds": 10},
    "fedsonmf, the same with secure aggregation": {
        "num-samples": 2000,
        "num-server-rounds": 10,
        "secure-aggregation": True,
    },
    "fmvc-imk, HW, secure aggregation": {
        "algorithm": "fmvc-imk",
        "dataset": "hw",
        "num-clients": 6,
        "num-server-rounds": 10,
        "secure-aggregation": True,
        "imk.tol": 0.0,
    },
    "fmvc-iai, HW, missing-rate 0.5": {
        "algorithm": "fmvc-iai",
        "dataset": "hw",
        "num-clients": 6,
        "missing-rate": 0.5,
        "num-server-rounds": 4,
        "iai.ae-epochs": 20,
        "iai.epochs": 5,
    },
}

#: (module, function name) of every check the ``checks`` measurement times (with paper A's bounds),
#: on the clients' side and on the server's.
CLIENT_CHECKS = (
    (client_module, "request_digest"),
    (client_module, "check_request"),
    (client_module, "check_reply"),
    (client_module, "check_sum"),
    (client_module, "admit"),
    (client_module, "record_answer"),
    (client_module, "load_ledger"),
    (sonmf_client, "round_bounds"),
)
SERVER_CHECKS = (
    (strategy_module, "check_reply"),
    (strategy_module, "check_sum"),
    (strategy_module, "check_arrays"),
    (strategy_module, "check_metrics"),
    (sonmf_strategy, "round_bounds"),
)


def _timed(function: Callable[..., Any], spent: list[float]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    return wrapper


def measure_checks(out: Path) -> list[dict[str, Any]]:
    """Per run of :data:`CHECK_RUNS`: a client's checks per message against its work in a round
    (median of the slowest client's), and the server's checks per round against its own time."""
    rows = []
    for label, cfg in CHECK_RUNS.items():
        spent: dict[str, list[float]] = {"client": [], "server": []}
        sides = (("client", CLIENT_CHECKS), ("server", SERVER_CHECKS))
        originals = [
            (side, module, name, getattr(module, name)) for side, pairs in sides for module, name in pairs
        ]
        for side, module, name, function in originals:
            setattr(module, name, _timed(function, spent[side]))
        try:
            strategy = InProcessFederation(cfg, out / "checks", label.split(",")[0]).run()
        finally:
            for _, module, name, function in originals:
                setattr(module, name, function)
        records = strategy.recorder.data["rounds"]
        rounds = len(records)
        messages = rounds * len(strategy.clients)
        rows.append(
            {
                "run": label,
                "client_checks_s_per_message": sum(spent["client"]) / messages,
                "client_kernel_s": statistics.median(r["client_kernel_s_max"] for r in records),
                "server_checks_s_per_round": sum(spent["server"]) / rounds,
                "server_s": statistics.median(r["server_s"] for r in records),
            }
        )
        log.info("%s", json.dumps(rows[-1]))
    return rows


def _gram_error(estimate: np.ndarray, gram: np.ndarray) -> float:
    """Relative error of ``estimate`` at its best scale (the server may know no scale)."""
    scale = float(np.sum(estimate * gram) / max(np.sum(estimate * estimate), 1e-300))
    return float(np.linalg.norm(scale * estimate - gram) / np.linalg.norm(gram))


def _nystrom(y: np.ndarray, omega: np.ndarray) -> np.ndarray:
    core = np.linalg.pinv(omega.T @ y, rcond=1e-10)
    return y @ core @ y.T


def measure_start(out: Path) -> list[dict[str, Any]]:
    """Relative error of the server's best estimate of each HW view's Gram matrix, per message."""
    overrides = {"dataset": "hw", "num-clients": 6, "num-server-rounds": 1}
    cfg = validate_run_config(overrides)
    fed = InProcessFederation(overrides, out / "start", "start", proxy_class=_Recording)
    fed.start()
    rank = fed.strategy.rank
    fed.round(1)
    shared = fed.strategy.v  # what every party sees after round 1
    uploads = {p: proxy.replies[0][0] for p, proxy in enumerate(fed.proxies)}
    views = [load_client_view(cfg, p, None, needs=data_needs(cfg)).features for p in range(6)]
    n = views[0].shape[0]
    omega = sketch_test_matrix(n, rank, rng_for(cfg["seed"], Stream.SONMF_SKETCH))
    shares = [gram_sketch(x.T, omega) for x in views]
    stacked = _nystrom(np.sum(shares, axis=0), omega)
    rows = []
    for p, x in enumerate(views):
        gram = x @ x.T
        rows.append(
            {
                "view": p,
                "d": int(x.shape[1]),
                "share_in_the_clear": _gram_error(_nystrom(shares[p], omega), gram),
                "masked_sum": _gram_error(stacked, gram),
                "round_upload_in_the_clear": _gram_error(uploads[p].T @ uploads[p], gram),
                "shared_v": _gram_error(shared.T @ shared, gram),
            }
        )
        log.info("%s", json.dumps(rows[-1]))
    return [{"rank": rank, "sketch_width": omega.shape[1], "views": rows}]


class _Recording(InProcessProxy):
    """Keeps the arrays of every fit reply (what left the node)."""

    def __init__(self, cid: str, client: Any) -> None:
        super().__init__(cid, client)
        self.replies: list[list[np.ndarray]] = []

    def fit(self, ins, timeout, group_id):
        res = super().fit(ins, timeout, group_id)
        self.replies.append(parameters_to_ndarrays(res.parameters))
        return res


class _Target(FedSONMFClient):
    """Uploads the indicator of :attr:`target` (one row per cluster) instead of its own upload."""

    target: np.ndarray = np.zeros(0, dtype=int)
    fit_bound: bool = False

    def local_work(self, x, u, received, state, server_round):
        work = super().local_work(x, u, received, state, server_round)
        indicator = np.zeros_like(work.upload)
        indicator[self.target, np.arange(self.target.size)] = 1.0
        self.indicator = indicator
        return LocalWork(indicator, work.u, work.v, work.state, work.xvt)

    def reply(self, stage, values, request, server_round, bound_context=None):
        if stage.name != "round":
            return super().reply(stage, values, request, server_round, bound_context)
        if self.fit_bound and bound_context is not None:
            scale = 0.999 * bound_context.upload / float(np.linalg.norm(values["upload"]))
            values = {**values, "upload": values["upload"] * scale}
        return super().reply(stage, values, request, server_round, None)


#: (attack, rounds) of the ``poison`` measurement.
ATTACKS = (("none", 30), ("within-bound", 10), ("within-bound", 30), ("unbounded", 30))


def measure_poison(out: Path, seeds: tuple[int, ...] = (0, 1, 2)) -> list[dict[str, Any]]:
    """ARI of the final clustering with a target the attacker chose, and with the truth."""
    rows = []
    for seed in seeds:
        views, truth = clustered_views(300, 3, (10, 12, 8), seed)
        path = out / "poison" / f"views-{seed}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **{f"X_{m}": v for m, v in enumerate(views)}, y=truth)
        target = np.random.default_rng(seed + 100).integers(0, 3, truth.size)
        base = {
            "dataset": str(path),
            "num-clients": 3,
            "num-clusters": 3,
            "sonmf.rank": 3,
            "secure-aggregation": True,
            "seed": seed,
        }
        for attack, rounds in ATTACKS:
            fed = InProcessFederation(
                {**base, "num-server-rounds": rounds}, out / "poison", f"{attack}-{rounds}-{seed}"
            )
            if attack != "none":
                honest = fed.proxies[1].client
                attacker = _Target(honest.context, honest.cfg, 1, 3, honest.view)
                attacker.target, attacker.fit_bound = target, attack == "within-bound"
                fed.proxies[1].client = attacker
            try:
                strategy = fed.run()
                labels = np.asarray(strategy.recorder.data["final"]["labels"])
                row = {
                    "seed": seed,
                    "attack": attack,
                    "rounds": rounds,
                    "outcome": "completed",
                    "ari_target": adjusted_rand_score(target, labels),
                    "ari_truth": adjusted_rand_score(truth, labels),
                }
            except FederationError as exc:
                failed = len(fed.strategy.recorder.data["rounds"]) + 1
                row = {
                    "seed": seed,
                    "attack": attack,
                    "rounds": rounds,
                    "outcome": f"refused in round {failed}",
                    "error": str(exc)[:300],
                }
            rows.append(row)
            log.info("%s", json.dumps(row))
    return rows


def tables(results: dict[str, Any]) -> str:
    """The Markdown tables of the three measurements."""
    lines = [
        "| run | a client's checks per message (ms) | a client's work per round, slowest (ms) "
        "| the server's checks per round (ms) | the server's work per round (ms) |",
        "|---|---|---|---|---|",
    ]
    for r in results["checks"]:
        lines.append(
            f"| {r['run']} | {1e3 * r['client_checks_s_per_message']:.2f} | "
            f"{1e3 * r['client_kernel_s']:.1f} | {1e3 * r['server_checks_s_per_round']:.2f} | "
            f"{1e3 * r['server_s']:.1f} |"
        )
    start = results["start"][0]
    lines += [
        "",
        f"Paper A's start on HW (rank {start['rank']}, sketch of {start['sketch_width']} columns): "
        "relative error of the server's best estimate of each view's sample Gram matrix (1 = nothing "
        "learnt of it, 0 = all of it):",
        "",
        "| view | d_p | the share in the clear (former start) | the masked sum (today's start) "
        "| one round's upload in the clear | the shared V after round 1 (every party) |",
        "|---|---|---|---|---|---|",
    ]
    for v in start["views"]:
        lines.append(
            f"| {v['view']} | {v['d']} | {v['share_in_the_clear']:.2e} | {v['masked_sum']:.2f} | "
            f"{v['round_upload_in_the_clear']:.2f} | {v['shared_v']:.2f} |"
        )
    lines += [
        "",
        "A masked client uploading a target clustering's indicator (one of three clients, 3 seeds):",
        "",
        "| attack | rounds | runs completed | how the others ended | ARI with the target, mean "
        "| ARI with the truth, mean |",
        "|---|---|---|---|---|---|",
    ]
    for attack, rounds in ATTACKS:
        runs = [r for r in results["poison"] if r["attack"] == attack and r["rounds"] == rounds]
        done = [r for r in runs if r["outcome"] == "completed"]
        ended = ", ".join(sorted({r["outcome"] for r in runs if r not in done})) or "-"
        target = f"{np.mean([r['ari_target'] for r in done]):.3f}" if done else "-"
        truth = f"{np.mean([r['ari_truth'] for r in done]):.3f}" if done else "-"
        lines.append(f"| {attack} | {rounds} | {len(done)} of {len(runs)} | {ended} | {target} | {truth} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command line."""
    parser = argparse.ArgumentParser(
        prog="python -m simulations.bench_protocol", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", default="results/bench_protocol", help="folder for protocol_bench.json")
    parser.add_argument("--update-docs", type=Path, default=None, help="rewrite the tables of this page")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fedmf-protocol-") as tmp:
        work = Path(tmp)
        results = {
            "checks": measure_checks(work),
            "start": measure_start(work),
            "poison": measure_poison(work),
        }
    (out / "protocol_bench.json").write_text(json.dumps(results, indent=1))
    text = tables(results)
    log.info("%s", text)
    if args.update_docs is not None:
        start, end = "<!-- bench:protocol:start -->\n", "<!-- bench:protocol:end -->"
        page = args.update_docs.read_text()
        head, rest = page.split(start, 1)
        args.update_docs.write_text(head + start + text + "\n" + end + rest.split(end, 1)[1])


if __name__ == "__main__":
    main()
