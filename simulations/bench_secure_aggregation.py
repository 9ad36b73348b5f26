"""Benchmark: the cost of secure aggregation per method, and its effect on the numbers.

Runs each method twice in this process (the real Strategy and NumPyClients, messages passed as
Flower's ``Parameters``, no engine: what is timed is the methods' and the masking's work), with
``secure-aggregation`` off and on (with signed keys), and reports per round the median wall time,
the clients' masking time (max over clients), the server's decoding time and the bytes each
client uploads (the serialised arrays), plus the bytes of the key agreement (the peers' keys each
client receives; it has no message of its own), the final residual or objective
and the clustering scores. Prints a Markdown table and writes it with the raw numbers as JSON.

Usage::

    python -m simulations.bench_secure_aggregation --case small --out results/bench_secagg
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
from pathlib import Path
from typing import Any

from fedmf_app.deployment.certificates import make_supernode_keys, pin_lines
from fedmf_app.in_process import run_in_process

log = logging.getLogger("bench_secure_aggregation")

#: Small cases: (label, run config) per method.
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "small": [
        (f"{a}, synthetic m=10 n=200", {"algorithm": a, "num-server-rounds": 20})
        for a in ("fedsonmf", "fedmavg", "fedmgs", "fedvra-u")
    ]
    + [
        (
            "fmvc-imk, hw",
            {
                "algorithm": "fmvc-imk",
                "dataset": "hw",
                "num-clients": 6,
                "num-server-rounds": 20,
                "imk.tol": 0.0,
            },
        ),
        (
            "fmvc-iai, hw, eta=0.5",
            {
                "algorithm": "fmvc-iai",
                "dataset": "hw",
                "num-clients": 6,
                "missing-rate": 0.5,
                "num-server-rounds": 4,
                "iai.ae-epochs": 20,
                "iai.epochs": 5,
            },
        ),
    ],
    "floor": [
        (
            "fedsonmf, synthetic m=10 n=200, 300 rounds",
            {
                "algorithm": "fedsonmf",
                "num-server-rounds": 300,
                "sonmf.stop-change": 0.0,
                "sonmf.stop-label-change": 0.0,
            },
        ),
        (
            "fedsonmf, hw, 20 rounds",
            {"algorithm": "fedsonmf", "dataset": "hw", "num-clients": 6, "num-server-rounds": 20},
        ),
    ],
}


def run_once(overrides: dict[str, Any], out: Path, name: str, keys: Path) -> dict[str, Any]:
    """One in-process run (:func:`fedmf_app.in_process.run_in_process`); per-round costs and the
    final record."""
    strategy = run_in_process(
        overrides,
        out,
        name,
        node_config=lambda p: {
            "signing-key": str(keys / f"supernode-{p}.key"),
            "peer-keys": str(keys),
            "peer-fingerprints": str(keys / "pins.txt"),
        },
    )
    data = strategy.recorder.data
    records = data["rounds"]
    # each proxy's last len(records) uploads are the rounds' (before them: the set-up stages)
    rounds = [proxy.upload_bytes[-len(records) :] for proxy in strategy.clients]
    uploads = [max(sizes) for sizes in zip(*rounds, strict=True)]
    last = records[-1]
    out_row = {
        "round_s": statistics.median(r["wall_s"] for r in records[1:] or records),
        "upload_bytes_per_client": statistics.median(uploads[1:] or uploads),
        "client_mask_s": statistics.median(r.get("secagg_client_s_max", 0.0) for r in records),
        "server_decode_s": statistics.median(r.get("secagg_server_s", 0.0) for r in records),
        "key_agreement_bytes_per_client": strategy.key_agreement.get("key_agreement_bytes_per_client", 0),
        "final": {k: v for k, v in (data.get("final") or {}).items() if k in ("acc", "nmi", "purity", "ari")},
    }
    for key in ("residual", "residual_ratio", "objective"):
        if last.get(key) is not None:
            out_row[key] = last[key]
    if "residual" in last:
        out_row["residual_min_over_rounds"] = min(r["residual"] for r in records)
    return out_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), default="small")
    parser.add_argument("--only", default="", help="run only the cases whose label contains this")
    parser.add_argument("--out", default="results/bench_secagg")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fedmf-secagg-") as tmp:
        keys = Path(tmp) / "keys"
        (keys / "pins.txt").write_text(pin_lines(make_supernode_keys(keys, 10)))
        for label, overrides in CASES[args.case]:
            if args.only and args.only not in label:
                continue
            for secure in (False, True):
                cfg = {**overrides, "secure-aggregation": secure, "secure-aggregation-signed-keys": secure}
                name = f"{overrides['algorithm']}-{'secure' if secure else 'plain'}-{len(rows)}"
                row = {"case": label, "secure": secure, **run_once(cfg, out, name, keys)}
                log.info("%s", json.dumps(row))
                rows.append(row)
    lines = [
        "| case | round, median, off / on (s) | client masking, max (s) | server decoding (s) | "
        "upload per client, off / on (bytes) | key agreement, down per client (bytes) | "
        "final residual / objective, off / on | scores, off / on |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in dict.fromkeys(r["case"] for r in rows):
        off, on = (next(r for r in rows if r["case"] == label and r["secure"] is s) for s in (False, True))
        finals = [r.get("residual", r.get("objective")) for r in (off, on)]
        final = "-" if None in finals else " / ".join(f"{v:.6e}" for v in finals)
        scores = ", ".join(f"{k} {off['final'][k]:.4f} / {on['final'][k]:.4f}" for k in off["final"]) or "-"
        lines.append(
            f"| {label} | {off['round_s']:.3f} / {on['round_s']:.3f} | {on['client_mask_s']:.4f} | "
            f"{on['server_decode_s']:.4f} | {off['upload_bytes_per_client']:.0f} / "
            f"{on['upload_bytes_per_client']:.0f} | {on['key_agreement_bytes_per_client']} | {final} | "
            f"{scores} |"
        )
    table = "\n".join(lines)
    log.info("%s", table)
    (out / f"{args.case}.md").write_text(table + "\n")
    (out / f"{args.case}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
