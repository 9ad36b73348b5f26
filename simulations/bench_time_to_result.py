"""Time to a result through the one-command federation: each method's default job, whole command.

Runs ``python -m fedmf_app.deployment.federation`` once per method, as a user types it (3
SuperNodes; by default HW's views fac, fou and kar, seed 7, every other key at its default), and
records the whole command's wall time, the rounds run and their summed wall time (the rest is
starting and stopping the processes, the handshake and the set-up before round 1, the end of
run), why the run stopped and the final ACC. ``--repeat N`` runs the methods in turn N times and
the table gives each method's medians (a run's time moves by several seconds between runs of the
same code on a shared machine). ``--append`` adds the new runs to ``runs.jsonl`` instead of replacing
it, so that two codes can be run in turn (``--repeat 1 --append`` on each, alternately, into two
folders). ``--compare`` puts earlier records beside each row. ``--job`` runs another job; the
table names a job by the keys it sets besides the default job's. Runs on one machine share its cores:
time them with nothing else running.

Usage::

    python -m simulations.bench_time_to_result --out docs/deployment/time_to_result --repeat 3
    python -m simulations.bench_time_to_result --table-only --out docs/deployment/time_to_result \
        --compare docs/deployment/time_to_result/before.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
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


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _read_runs(path: Path) -> list[dict[str, Any]]:
    """Every record of a ``runs.jsonl`` (repeated runs included)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _grouped(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["method"], r["job"]), []).append(r)
    return groups


def _label(method: str, job: str) -> str:
    """The table's name of a job: the method, with the keys it sets besides :data:`DEFAULT_JOB`."""
    extra = job.removeprefix(DEFAULT_JOB).strip() if job.startswith(DEFAULT_JOB) else job
    return f"{method} ({extra})" if extra else method


def _cells(runs: list[dict[str, Any]]) -> tuple[str, ...]:
    """One method's cells: the medians over its runs (with the range of the whole command when there
    are several), its rounds and its ACC (each as a range when the runs differ)."""
    done = [r for r in runs if "rounds" in r] or runs
    walls = [r["wall_s"] for r in done]
    wall = f"{_median(walls):.1f}"
    if len(walls) > 1:
        wall += f" ({min(walls):.1f}-{max(walls):.1f})"
    rounds = sorted({r.get("rounds", "-") for r in done}, key=str)
    accs = sorted({"-" if r.get("acc") is None else f"{100 * r['acc']:.2f}" for r in done})
    rounds_s = _median([r.get("rounds_s", float("nan")) for r in done])
    rest = _median([r["wall_s"] - r.get("rounds_s", 0.0) for r in done])
    return (wall, "/".join(map(str, rounds)), f"{rounds_s:.1f}", f"{rest:.1f}", "/".join(accs))


def table(records: list[dict[str, Any]], before: list[dict[str, Any]] | None = None) -> str:
    """The Markdown table of the records (and, with ``before``, the earlier records of each method).

    A method run several times (``--repeat``) gets the median of its runs, and the range of the
    whole command in brackets.

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
    earlier = _grouped(before or [])
    groups = _grouped(records)
    arrow = ", before → after" if before else ""
    runs = max((len(v) for v in groups.values()), default=1)
    median = " (median, range)" if runs > 1 else ""
    head = (
        f"| method | runs | whole command (s){median}{arrow} | rounds | rounds (s) | the rest (s) "
        "| ACC % | stopped |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for (method, job), group in groups.items():
        now = _cells(group)
        last = group[-1]
        stopped = (
            (last.get("stopped") or {}).get("reason", "the last round")
            if "rounds" in last
            else last.get("error", "")
        )
        count = str(len(group))
        old = earlier.get((method, job))
        if old is not None:
            was = _cells(old)
            now = tuple(a if a == b else f"{a} → {b}" for a, b in zip(was, now))
            if len(old) != len(group):
                count = f"{len(old)} → {len(group)}"
        lines.append(f"| {_label(method, job)} | {count} | " + " | ".join(now) + f" | {stopped} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["fedsonmf", "fmvc-imk", "fmvc-iai"])
    parser.add_argument("--job", default=DEFAULT_JOB, help="run-config overrides besides algorithm")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each method, in turn (the table gives their median)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for runs.jsonl and table.md")
    parser.add_argument("--compare", type=Path, default=None, help="earlier runs.jsonl to show beside")
    parser.add_argument("--table-only", action="store_true", help="only rewrite table.md from runs.jsonl")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the new runs to runs.jsonl instead of replacing it (to alternate two codes' runs)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = args.out / "runs.jsonl"
    if not args.table_only:
        version = code_version()
        with tempfile.TemporaryDirectory(prefix="fedmf-time-") as tmp:
            records = []
            for repeat in range(args.repeat):
                for method in args.methods:
                    workdir = Path(tmp) / f"{method}-{repeat}"
                    record = {**time_one(method, args.job, workdir), "code_version": version}
                    log.info("%s", json.dumps(record))
                    records.append(record)
        kept = _read_runs(runs) if args.append and runs.exists() else []
        runs.write_text("".join(json.dumps(r) + "\n" for r in kept + records))
    before = None if args.compare is None else _read_runs(args.compare)
    text = table(_read_runs(runs), before)
    (args.out / "table.md").write_text(text + "\n")
    log.info("%s", text)


if __name__ == "__main__":
    main()
