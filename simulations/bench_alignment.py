"""Cost of the sample-ID alignment (private set intersection) at N IDs per party.

Every party gets a ``.npz`` file of N samples (one feature) with string IDs, half of them common
to all parties, in its own random order; the real ServerApp side
(:func:`fedmf_app.federated.alignment.align_samples`) and the real clients
(:class:`~fedmf_app.federated.client.ViewClient`) run the whole alignment in this process, one
party after the other (on a federation the parties of a stage work in parallel). Reported per
case: the wall time of the alignment, the busiest party's compute time, the server's share
(relaying, intersection), the time with the parties of each stage in parallel (as on a
federation, without network time), and the bytes one party sends and receives. Usage::

    python -m simulations.bench_alignment --sizes 10000 100000 --parties 2 3 [--update-docs docs/alignment.md]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from flwr.common import Context, RecordDict
from flwr.server.client_proxy import ClientProxy

from fedmf_app.common.psi import Blinder, hash_to_point
from fedmf_app.data import load_client_view
from fedmf_app.federated.alignment import align_samples
from fedmf_app.federated.client import ViewClient
from fedmf_app.in_process import InProcessProxy
from fedmf_app.registry import data_needs, validate_run_config

_START, _END = "<!-- alignment-cost:start -->", "<!-- alignment-cost:end -->"


class _Timed(InProcessProxy):
    """Records the seconds and bytes of every alignment message this party answers; the parties
    answer one at a time (the server asks them in parallel threads), so each time is its own."""

    one_at_a_time = threading.Lock()

    def __init__(self, cid: str, client: ViewClient) -> None:
        super().__init__(cid, client)
        self.seconds: dict[str, float] = {}
        self.sent = 0
        self.received = 0

    def get_properties(self, ins, timeout, group_id):
        stage = f"{str(ins.config.get('stage', '')).removeprefix('psi-')}{ins.config.get('psi-hop', '')}"
        with self.one_at_a_time:
            started = time.perf_counter()
            res = super().get_properties(ins, timeout, group_id)
            self.seconds[stage] = time.perf_counter() - started
        self.received += sum(len(v) for v in ins.config.values() if isinstance(v, bytes))
        self.sent += sum(len(v) for v in res.properties.values() if isinstance(v, bytes))
        return res


def _files(folder: Path, n: int, m: int, seed: int) -> list[Path]:
    rng = np.random.default_rng(seed)
    universe = rng.choice(10**9, size=n // 2 + m * (n - n // 2), replace=False)
    common, own = universe[: n // 2], universe[n // 2 :]
    paths = []
    for p in range(m):
        held = np.r_[common, own[p * (n - n // 2) : (p + 1) * (n - n // 2)]]
        ids = np.array([f"cust-{k:09d}" for k in rng.permutation(held)])
        path = folder / f"party{p}.npz"
        np.savez(path, X=rng.uniform(size=(n, 1)), id=ids)
        paths.append(path)
    return paths


def measure(n: int, m: int, seed: int = 0) -> dict[str, float]:
    """One alignment of ``m`` parties with ``n`` IDs each (half common).

    Returns
    -------
    dict
        ``n``, ``m``, ``common``, ``wall_s`` (all parties one after the other), ``party_s`` (the
        busiest party's total), ``server_s`` (wall time not spent in a party: relaying and the
        intersection), ``federation_s`` (the server's time plus, per stage, the slowest party's:
        the alignment's time when the parties work in parallel, without network time),
        ``sent_mb`` and ``received_mb`` (the most of any party).
    """
    cfg = validate_run_config({"num-clients": m, "sample-id": "id"})
    with tempfile.TemporaryDirectory() as tmp:
        paths = _files(Path(tmp), n, m, seed)
        proxies: list[ClientProxy] = []
        for p in range(m):
            node = {"partition-id": p, "num-partitions": m, "data-file": str(paths[p])}
            context = Context(run_id=1, node_id=p, node_config=node, state=RecordDict(), run_config=cfg)
            client = ViewClient(context, cfg, p, m, load_client_view(cfg, p, node, needs=data_needs(cfg)))
            proxies.append(_Timed(f"node-{p}", client))
        info = [{"partition-id": p, "source": str(paths[p])} for p in range(m)]
        started = time.perf_counter()
        outcome = align_samples(proxies, cfg, info)
        wall = time.perf_counter() - started
    party = [sum(x.seconds.values()) for x in proxies]
    server = wall - sum(party)
    stages = proxies[0].seconds.keys()
    return {
        "n": n,
        "m": m,
        "common": outcome["num_common"],
        "wall_s": wall,
        "party_s": max(party),
        "server_s": server,
        "federation_s": server + sum(max(x.seconds[s] for x in proxies) for s in stages),
        "sent_mb": max(x.sent for x in proxies) / 1e6,
        "received_mb": max(x.received for x in proxies) / 1e6,
    }


def unit_costs(count: int = 2000) -> tuple[float, float]:
    """Microseconds per ID hashed to the curve and per point blinded (one X25519 call)."""
    ids = [f"cust-{i:09d}" for i in range(count)]
    started = time.perf_counter()
    points = [hash_to_point(i) for i in ids]
    hashed = time.perf_counter()
    Blinder().blind(points)
    blinded = time.perf_counter()
    return (hashed - started) / count * 1e6, (blinded - hashed) / count * 1e6


def table(rows: list[dict[str, float]]) -> str:
    """The results as a markdown table."""
    lines = [
        "| IDs per party | parties | common | parties one after the other (s) | busiest party (s) "
        "| server (s) | parties in parallel (s) | sent per party (MB) | received per party (MB) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['m']} | {r['common']:,} | {r['wall_s']:.1f} | {r['party_s']:.1f} "
            f"| {r['server_s']:.2f} | {r['federation_s']:.1f} | {r['sent_mb']:.2f} | {r['received_mb']:.2f} |"
        )
    return "\n".join(lines)


def update_docs(path: Path, text: str) -> None:
    """Replace the table between the markers of ``path``."""
    doc = path.read_text()
    head, rest = doc.split(_START, 1)
    _, tail = rest.split(_END, 1)
    path.write_text(f"{head}{_START}\n{text}\n{_END}{tail}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--parties", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--update-docs", type=Path, default=None, help="write the table into this page")
    args = parser.parse_args(argv)
    logging.getLogger("flwr").setLevel(logging.WARNING)
    rows = []
    for n in args.sizes:
        for m in args.parties:
            rows.append(measure(n, m))
            logging.getLogger(__name__).warning("n=%d m=%d: %.1f s", n, m, rows[-1]["wall_s"])
    hash_us, blind_us = unit_costs()
    text = (
        f"{table(rows)}\n\nIn the same session: {hash_us:.0f} µs to hash one ID to the curve, "
        f"{blind_us:.0f} µs to blind one point."
    )
    if args.update_docs is not None:
        update_docs(args.update_docs, text)
    print(text)  # noqa: T201 (a command-line tool)


if __name__ == "__main__":
    main()
