"""Fingerprints of short runs: what a refactor must leave unchanged.

Runs a fixed set of short jobs, each in a fresh process (the real Strategy and NumPyClients,
:mod:`fedmf_app.in_process`; a process that ran other jobs before can differ in the last bits of its
sums, which follow the arrays' memory alignment): every family, with and without secure aggregation, and
the default job. Each run's fingerprint is the SHA-256 of its ``result.json`` rounds (timings, byte
counts and peak memory left out) and final clustering. Writes one JSON line per run; ``--compare FILE``
prints which runs differ from an earlier file and exits 1 if any does.

Usage::

    python -m simulations.fingerprint --out results/fingerprints-before.jsonl
    python -m simulations.fingerprint --out results/fingerprints-after.jsonl \
        --compare results/fingerprints-before.jsonl
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import logging
import multiprocessing
import sys
import tempfile
from pathlib import Path
from typing import Any

from fedmf_app.in_process import run_in_process

log = logging.getLogger("fingerprint")

_IAI_SHORT = {"iai.ae-epochs": 10, "iai.epochs": 3, "num-server-rounds": 3}

#: The runs: name -> run-config overrides.
RUNS: dict[str, dict[str, Any]] = {
    "default-job": {},
    "fedsonmf-hw": {"dataset": "hw", "num-clients": 6, "num-server-rounds": 5},
    "fedsonmf-hw-secure": {
        "dataset": "hw",
        "num-clients": 6,
        "num-server-rounds": 5,
        "secure-aggregation": True,
    },
    "fedsonmf-synthetic-secure": {"num-clients": 4, "num-server-rounds": 8, "secure-aggregation": True},
    "fedvra-u-synthetic": {"algorithm": "fedvra-u", "num-clients": 4, "num-server-rounds": 8},
    "fmvc-imk-hw": {"algorithm": "fmvc-imk", "dataset": "hw", "num-clients": 6, "num-server-rounds": 6},
    "fmvc-imk-hw-secure": {
        "algorithm": "fmvc-imk",
        "dataset": "hw",
        "num-clients": 6,
        "num-server-rounds": 6,
        "secure-aggregation": True,
    },
    "fmvc-iai-hw": {
        "algorithm": "fmvc-iai",
        "dataset": "hw",
        "num-clients": 6,
        "missing-rate": 0.5,
        **_IAI_SHORT,
    },
    "fmvc-iai-hw-secure": {
        "algorithm": "fmvc-iai",
        "dataset": "hw",
        "num-clients": 6,
        "missing-rate": 0.5,
        "secure-aggregation": True,
        **_IAI_SHORT,
    },
}

#: Record keys that measure time, memory or bytes rather than the method's numbers.
_VOLATILE = ("_s", "_bytes", "bytes_", "rss", "seconds", "wall", "elapsed", "_mb")


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not any(t in k for t in _VOLATILE)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def fingerprint(data: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint of one run's ``result.json`` data.

    Parameters
    ----------
    data : dict
        ``result.json`` as a dict.

    Returns
    -------
    dict
        ``rounds`` (how many), ``final`` (the scores), ``sha256`` (of the stable rounds and the
        final labels).
    """
    stable = {"rounds": _stable(data["rounds"]), "final": _stable(data.get("final") or {})}
    digest = hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()
    final = data.get("final") or {}
    return {
        "rounds": len(data["rounds"]),
        "final": {k: final[k] for k in ("acc", "nmi", "ari") if k in final},
        "sha256": digest,
    }


def _run(name: str) -> dict[str, Any]:
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="fedmf-fingerprint-") as tmp:
        strategy = run_in_process(RUNS[name], Path(tmp) / name)
        return {"name": name, **fingerprint(strategy.recorder.data)}


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code (1: a run differs from ``--compare``)."""
    parser = argparse.ArgumentParser(
        prog="python -m simulations.fingerprint", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", required=True, help="JSON lines file to write")
    parser.add_argument("--only", nargs="*", default=None, help="run names (default: all)")
    parser.add_argument("--compare", default=None, help="an earlier file to compare with")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    names = args.only or list(RUNS)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    context = multiprocessing.get_context("spawn")
    for name in names:
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            rows.append(pool.submit(_run, name).result())
        log.info("%s: %s", name, rows[-1])
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if args.compare is None:
        return 0
    before = {r["name"]: r for r in map(json.loads, Path(args.compare).read_text().splitlines())}
    differ = [r["name"] for r in rows if r["name"] in before and before[r["name"]]["sha256"] != r["sha256"]]
    for r in rows:
        status = "missing" if r["name"] not in before else ("DIFFERS" if r["name"] in differ else "same")
        log.info("%-28s %s", r["name"], status)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
