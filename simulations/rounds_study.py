"""Where the rounds go: ACC and the objective after every round of each method's default run.

Runs ``fedsonmf``, ``fmvc-imk`` and ``fmvc-iai`` with every option at its default (their own
``num-server-rounds`` and stop rules) on each development set present
(:mod:`simulations.quality.datasets`: HW is embedded, the others are read under ``--data-root`` and
skipped when absent), once per seed, through the real Strategy and NumPyClients in process
(:class:`fedmf_app.in_process.InProcessFederation`: the numbers of ``flwr run``). Every round's
clustering is scored against the ground truth when the run ends:

* ``fmvc-imk`` scores its rounds itself (the clients hold the ground truth);
* ``fmvc-iai`` keeps every round's pseudo-labels (:meth:`round_labels`) and scores them at the end;
* ``fedsonmf`` clusters its ``V`` after every round for its label stop rule
  (``sonmf.stop-label-change``) and keeps those labels; with that rule off it keeps none (its
  clustering is then k-means on the final ``V`` only), and here its strategy keeps, after each
  round, the labels its own :meth:`final_labels` gives on that round's ``V`` (the same read and
  k-means seed), which changes nothing of the run.

Appends one JSON line per run to ``<out>/runs.jsonl`` (a rerun skips the runs already there; a run
the method refuses is recorded with the reason) and writes ``<out>/table.md`` and
``<out>/curves.png`` (:mod:`simulations.rounds_report`); with ``--compare`` also ``<out>/compare.md``,
the rounds and final ACC of earlier records against these. Usage::

    python -m simulations.rounds_study --seeds 0 1 2 --out docs/rounds
    python -m simulations.rounds_study --methods fmvc-imk --sets HW Yale --seeds 0
    python -m simulations.rounds_study --table-only --out docs/rounds
    python -m simulations.rounds_study --methods fmvc-imk --config imk.rho=2.0 --out results/rho2
    python -m simulations.rounds_study --table-only --out docs/rounds \
        --compare docs/rounds/before/runs.jsonl --update-doc docs/rounds.md
    python -m simulations.rounds_study --methods fmvc-imk --config imk.tol=0 imk.spectral-tol=0 \
        num-server-rounds=60 --out results/no_stop --tolerances 1e-3 2e-3 3e-3

``--tolerances`` writes ``<out>/stops.md`` (``stops-patience-<p>.md`` with ``--patience p`` other
than 3): for each tolerance, the round and ACC at which the method's stop rule (the objective's
relative change; fmvc-iai: the fraction of samples whose label changed) would have ended each of the
runs (made without a stop), from their records. With ``--labels`` it writes ``<out>/label-stops.md``
instead: fedsonmf's label rule at each tolerance, beside its objective rule at the defaults, read
from runs that recorded every round's label change without stopping on it::

    python -m simulations.rounds_study --methods fedsonmf --seeds 0 1 2 --data-root ../shared/data \
        --config sonmf.stop-change=0 sonmf.stop-label-patience=100 num-server-rounds=40 \
        --out docs/rounds/sonmf_no_stop --tolerances 0.01 0.015 0.02 --labels --patience 4
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedmf_app.data.multiview import load_multiview
from fedmf_app.federated.handshake import FederationError
from fedmf_app.federated.results import RunRecorder, code_version
from fedmf_app.in_process import InProcessFederation
from fedmf_app.options.schema import ConfigError
from fedmf_app.registry import between_markers, strategy_class, validate_run_config
from simulations.overrides import parse_overrides
from simulations.quality.datasets import DEVELOPMENT_SETS, available_sets
from simulations.rounds_report import METHODS, ROUND_KEYS, comparison, stop_table, table, write_figure

ROOT = Path(__file__).resolve().parents[1]

logger = logging.getLogger(__name__)

__all__ = ["one_run", "read_records", "run_key", "with_round_labels"]


def with_round_labels(base: type) -> type:
    """``base`` keeping, after every round, the labels :meth:`final_labels` gives then.

    The extra k-means runs after the round's record is taken (the round's ``wall_s`` leaves it
    out); its time is summed in ``labels_s``.
    """

    class ScoredRounds(base):
        labels_s = 0.0

        def round_labels(self) -> np.ndarray | None:
            """The labels :meth:`final_labels` gives on this round's state."""
            started = time.perf_counter()
            labels = self.final_labels()
            self.labels_s += time.perf_counter() - started
            return labels

    return ScoredRounds


def one_run(
    method: str, name: str, dataset: str, seed: int, workdir: Path, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One run of ``method`` on a development set (its defaults, or ``config``), scored after every
    round.

    Parameters
    ----------
    method : str
        One of :data:`~simulations.rounds_report.METHODS`.
    name : str
        The data set's short name (:data:`~simulations.quality.datasets.DEVELOPMENT_SETS`).
    dataset : str
        Its run-config ``dataset``.
    seed : int
    workdir : Path
        Where the run folder is written.
    config : dict, optional
        Run-config keys set on top of the defaults (recorded as ``config``).

    Returns
    -------
    dict
        ``method``, ``set``, ``seed``, ``max_rounds`` (the default ``num-server-rounds``),
        ``stopped_early`` (the stop rule's reason, or ``None``), ``final`` (ACC / NMI / purity /
        ARI of the run's output), ``wall_s`` (the run, without the study's own k-means of
        fedsonmf's rounds), ``labels_s`` (that k-means), ``code_version`` and ``rounds``: per
        round ``round``, ``acc``, ``nmi``, ``wall_s`` and the method's :data:`ROUND_KEYS`.
    """
    views = load_multiview(dataset)
    config = dict(config or {})
    overrides = {
        "algorithm": method,
        "dataset": dataset,
        "num-clients": len(views.views),
        "seed": seed,
        **config,
    }
    record: dict[str, Any] = {"method": method, "set": name, "seed": seed, "code_version": code_version()}
    if config:
        record["config"] = config
    started = time.perf_counter()
    try:
        cfg = validate_run_config(overrides)
        base = strategy_class(method)
        kind = with_round_labels(base) if method == "fedsonmf" else base
        strategy = kind(cfg, RunRecorder(workdir, f"{method}-{name}-s{seed}", cfg))
        InProcessFederation(overrides, workdir, strategy=strategy).run()
    except (FederationError, ConfigError) as exc:
        return {**record, "refused": str(exc)}
    labels_s = getattr(strategy, "labels_s", 0.0)
    data = strategy.recorder.data
    stopped = data["summary"].get("stopped_early")
    keys = ("round", "acc", "nmi", "wall_s", *ROUND_KEYS[method])
    return {
        **record,
        "max_rounds": cfg["num-server-rounds"],
        "stopped_early": None if stopped is None else stopped["reason"],
        "final": {k: data["final"][k] for k in ("acc", "nmi", "purity", "ari")},
        "wall_s": time.perf_counter() - started - labels_s,
        "labels_s": labels_s,
        "rounds": [{k: r[k] for k in keys if k in r} for r in data["rounds"]],
    }


def run_key(record: dict[str, Any]) -> tuple[str, str, int]:
    """A run's identity in the records: method, data set, seed."""
    return record["method"], record["set"], record["seed"]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` (none if it does not exist), the first of each :func:`run_key`."""
    unique: dict[tuple, dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                unique.setdefault(run_key(record), record)
    return list(unique.values())


def stops_file(patience: int, labels: bool = False) -> str:
    """The name of the stop table for ``patience`` (``stops.md`` for the default 3;
    ``label-stops*.md`` for fedsonmf's label rule)."""
    name = "label-stops" if labels else "stops"
    return f"{name}.md" if patience == 3 else f"{name}-patience-{patience}.md"


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--sets", nargs="+", default=list(DEVELOPMENT_SETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-root", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "rounds")
    parser.add_argument("--table-only", action="store_true", help="only rebuild table.md and curves.png")
    parser.add_argument(
        "--config",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="run-config keys set on top of the defaults (values read as JSON where they parse)",
    )
    parser.add_argument(
        "--tolerances",
        nargs="+",
        type=float,
        metavar="TOL",
        help="also write <out>/stops.md (stops-patience-<p>.md for a patience p other than 3): the round and "
        "ACC at which the stop rule with each tolerance (objective change; fmvc-iai: label change) would "
        "have ended each run (for runs made without a stop, e.g. imk.tol=0 or iai.stop-label-change=0)",
    )
    parser.add_argument("--patience", type=int, default=3, help="the patience of --tolerances (3)")
    parser.add_argument(
        "--labels",
        action="store_true",
        help="with --tolerances: fedsonmf's label rule (tolerance on the share of samples whose cluster "
        "changed, beside its objective rule at the defaults) instead, written to <out>/label-stops.md "
        "(for runs with sonmf.stop-change=0 and a sonmf.stop-label-patience beyond their rounds)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="RUNS_JSONL",
        help="also write <out>/compare.md: rounds and final ACC of these earlier records against the new",
    )
    parser.add_argument(
        "--update-doc",
        type=Path,
        metavar="PAGE_MD",
        help="with --compare: also write the comparison between the page's compare markers",
    )
    args = parser.parse_args()
    config = parse_overrides(args.config)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("flwr").setLevel(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "runs.jsonl"
    records = read_records(path)
    done = {run_key(r) for r in records}
    sets = {} if args.table_only else available_sets(args.data_root, args.sets)
    if not args.table_only:
        for name in sorted(set(args.sets) - set(sets)):
            logger.info("%s: not under %s, skipped", name, args.data_root)
    for method in args.methods:
        for name, dataset in sets.items():
            for seed in args.seeds:
                if (method, name, seed) in done:
                    continue
                with tempfile.TemporaryDirectory() as workdir:  # the run folders are not kept
                    record = one_run(method, name, dataset, seed, Path(workdir), config)
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                records.append(record)
                if "refused" in record:
                    logger.info("%s %s seed %d: refused (%s)", method, name, seed, record["refused"])
                else:
                    logger.info(
                        "%s %s seed %d: %d rounds, ACC %.3f, %.0f s",
                        method,
                        name,
                        seed,
                        len(record["rounds"]),
                        record["final"]["acc"],
                        record["wall_s"],
                    )
    text = table(records)
    (args.out / "table.md").write_text(text)
    write_figure(records, args.out / "curves.png")
    sys.stdout.write(text)
    if args.tolerances:
        stops = stop_table(records, args.tolerances, args.patience, labels=args.labels)
        (args.out / stops_file(args.patience, args.labels)).write_text(stops)
        sys.stdout.write("\n" + stops)
    if args.compare is not None:
        compared = comparison(read_records(args.compare), records)
        (args.out / "compare.md").write_text(compared)
        sys.stdout.write("\n" + compared)
        if args.update_doc is not None:
            args.update_doc.write_text(between_markers(args.update_doc.read_text(), "compare", compared))


if __name__ == "__main__":
    main()
