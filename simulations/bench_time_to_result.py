"""Time to a result through the one-command federation: each method's default job, whole command.

Runs ``python -m fedmf_app.deployment.federation`` once per method, as a user types it (3
SuperNodes; by default HW's views fac, fou and kar, seed 7, every other key at its default), and
records the whole command's wall time, the rounds run and their summed wall time (the rest is
starting and stopping the processes, the handshake and the set-up before round 1, the end of
run), why the run stopped and the final ACC. ``--compare`` puts earlier records beside each row.
Runs on one machine share its cores: time them with nothing else running.

Usage::

    python -m simulations.bench_time_to_result --out docs/deployment/time_to_result
    python -m simulations.bench_time_to_result --table-only --out docs/deployment/time_to_result \
        --compare docs/deployment/time_to_result/before.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fedmf_app.federated.results import code_version

log = logging.getLogger("bench_time_to_result")

ROOT = Path(__file__).resolve().parents[1]

#: The job each method runs (run-config overrides besides ``algorithm``).
DEFAULT_JOB = "dataset='hw' views='fac,fou,kar' num-clients=3 seed=7"

_RESULTS = re.compile(r"results: (\S+result\.json)")


def time_one(method: str, job: str, workdir: Path) -> dict[str, Any]:
    """Run one method's job through the one-command federation and time the whole command.

    Parameters
    ----------
    method : str
        Run config ``algorithm``.
    job : str
        The other run-config overrides.
    workdir : Path
        The federation's ``--workdir`` (logs, keys, SuperNode folders).

    Returns
    -------
    dict
        ``method``, ``job``, ``exit_code``, ``wall_s`` (the whole command), ``rounds``,
        ``rounds_s`` (the rounds' summed wall time), ``acc``, ``stopped`` (``summary.stopped_early``)
        and ``result`` (the path of ``result.json``); ``error`` when the run left no result.
    """
    command = [
        sys.executable,
        "-m",
        "fedmf_app.deployment.federation",
        "--workdir",
        str(workdir),
        "--run-config",
        f"algorithm='{method}' {job}",
    ]
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    record: dict[str, Any] = {"method": method, "job": job, "exit_code": proc.returncode, "wall_s": wall}
    found = _RESULTS.findall(proc.stdout + proc.stderr)
    if not found:
        record["error"] = (proc.stderr or proc.stdout)[-2000:]
        return record
    result = json.loads(Path(found[-1]).read_text())
    rounds = result["rounds"]
    record.update(
        rounds=len(rounds),
        rounds_s=sum(r["wall_s"] for r in rounds),
        acc=(result.get("final") or {}).get("acc"),
        stopped=result["summary"].get("stopped_early"),
        result=found[-1],
    )
    return record


def table(records: list[dict[str, Any]], before: list[dict[str, Any]] | None = None) -> str:
    """The Markdown table of the records (and, with ``before``, the earlier record of each method).

    Parameters
    ----------
    records : list of dict
        :func:`time_one`'s records.
    before : list of dict, optional
        Earlier records, matched by method and job.

    Returns
    -------
    str
    """
    earlier = {(r["method"], r["job"]): r for r in before or []}
    arrow = ", before → after" if before else ""
    head = f"| method | whole command (s){arrow} | rounds | rounds (s) | the rest (s) | ACC % | stopped |"
    lines = [head, "|---|---|---|---|---|---|---|"]

    def cells(r: dict[str, Any]) -> tuple[str, ...]:
        return (
            f"{r['wall_s']:.1f}",
            str(r.get("rounds", "-")),
            f"{r.get('rounds_s', float('nan')):.1f}",
            f"{r['wall_s'] - r.get('rounds_s', 0.0):.1f}",
            "-" if r.get("acc") is None else f"{100 * r['acc']:.2f}",
        )

    for r in records:
        now = cells(r)
        stopped = (
            (r.get("stopped") or {}).get("reason", "the last round") if "rounds" in r else r.get("error", "")
        )
        old = earlier.get((r["method"], r["job"]))
        if old is not None:
            was = cells(old)
            now = tuple(a if a == b else f"{a} → {b}" for a, b in zip(was, now))
        lines.append(f"| {r['method']} | " + " | ".join(now) + f" | {stopped} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["fedsonmf", "fmvc-imk", "fmvc-iai"])
    parser.add_argument("--job", default=DEFAULT_JOB, help="run-config overrides besides algorithm")
    parser.add_argument("--out", type=Path, required=True, help="folder for runs.jsonl and table.md")
    parser.add_argument("--compare", type=Path, default=None, help="earlier runs.jsonl to show beside")
    parser.add_argument("--table-only", action="store_true", help="only rewrite table.md from runs.jsonl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = args.out / "runs.jsonl"
    if not args.table_only:
        version = code_version()
        with tempfile.TemporaryDirectory(prefix="fedmf-time-") as tmp:
            records = []
            for method in args.methods:
                record = {**time_one(method, args.job, Path(tmp) / method), "code_version": version}
                log.info("%s", json.dumps(record))
                records.append(record)
        runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    records = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()]
    before = None
    if args.compare is not None:
        before = [json.loads(line) for line in args.compare.read_text().splitlines() if line.strip()]
    text = table(records, before)
    (args.out / "table.md").write_text(text + "\n")
    log.info("%s", text)


if __name__ == "__main__":
    main()
