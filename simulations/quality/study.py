"""Run a method's grid of [A] choices on the development data sets; one JSON line per run.

Every run goes through the method's real Strategy and NumPyClients in this process
(:mod:`fedmf_app.in_process`: the numbers of ``flwr run``, without its start-up per job). Keys
that only change the final clustering (:data:`FINAL_ONLY`) are evaluated on the same run: the
strategy's :meth:`final_labels` is called again with each value. The file is appended to and
runs already in it are skipped, so a stopped study resumes. Usage::

    python -m simulations.quality.study imk --seeds 0 1 --out docs/quality/runs/imk.jsonl
    python -m simulations.quality.study sonmf --sets HW Sonar --grid sonmf.mu=0.01,0.1

Then ``python -m simulations.quality.report`` makes the tables.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.multiview import load_multiview, require_labels
from fedmf_app.data.preprocess import is_sparse_nonnegative
from fedmf_app.federated.results import code_version
from fedmf_app.in_process import run_in_process
from fedmf_app.options.schema import from_run_config
from fedmf_app.registry import defaults
from simulations.quality.datasets import available_sets

__all__ = ["ALGORITHMS", "FINAL_ONLY", "GRIDS", "grid_configs", "run_study"]

#: The algorithm the study runs for each method family.
ALGORITHMS = {"sonmf": "fedsonmf", "imk": "fmvc-imk", "iai": "fmvc-iai"}

#: Per family: key -> values studied (the app's default is always among them).
GRIDS: dict[str, dict[str, list[Any]]] = {
    "sonmf": {
        "sample-normalisation": ["auto", "none"],
        "sonmf.mu": [0.001, 0.01, 0.1],
        "sonmf.local-steps": [10, 30],
        "sonmf.cluster-columns": ["as-is", "unit-norm"],
    },
    "imk": {
        "imk.standardise": ["auto", "zscore"],
        "imk.lambda": [0.01, 0.1, 1.0],
        "imk.mu": [0.01, 0.1, 1.0],
        "imk.neighbours": [5, 10],
    },
    "iai": {
        "iai.feature-scaling": ["auto", "standard"],
        "iai.ae-epochs": [50, 100],
        "iai.anchors": [100, 200],
    },
}

#: Keys that change only the final clustering, evaluated on one run.
FINAL_ONLY = ("sonmf.cluster-columns", "imk.labels")

#: ``auto`` preparations and what they are on a data set without sparse views.
AUTO_ON_DENSE = {
    "sample-normalisation": "none",
    "imk.standardise": "zscore",
    "iai.feature-scaling": "standard",
}


def canonical(config: dict[str, Any], has_sparse_views: bool) -> dict[str, Any]:
    """``config`` with the ``auto`` preparations resolved where that is exact (no sparse view).

    Two configurations with the same canonical form give the same run, so only one is run.
    """
    if has_sparse_views:
        return dict(config)
    return {k: AUTO_ON_DENSE[k] if k in AUTO_ON_DENSE and v == "auto" else v for k, v in config.items()}


def grid_configs(grid: dict[str, list[Any]], design: str = "one-at-a-time") -> list[dict[str, Any]]:
    """The run configurations of a grid (keys of :data:`FINAL_ONLY` excluded).

    Parameters
    ----------
    grid : dict
        Key -> values.
    design : {"one-at-a-time", "product"}
        ``one-at-a-time``: the defaults, then each key's other values with every other key at
        its default (``1 + sum(len - 1)`` runs); ``product``: every combination.

    Returns
    -------
    list of dict
        Run-config overrides (every grid key set), the defaults first.
    """
    keys = [k for k in grid if k not in FINAL_ONLY]
    base = defaults()
    if design == "product":
        combos = [dict(zip(keys, vs, strict=True)) for vs in itertools.product(*(grid[k] for k in keys))]
        combos.sort(key=lambda c: sum(c[k] != base[k] for k in keys))
        return combos
    start = {k: base[k] for k in keys}
    combos = [start]
    for key in keys:
        combos += [{**start, key: value} for value in grid[key] if value != base[key]]
    return combos


def _records(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def line_key(record: dict[str, Any]) -> str:
    """Identity of a run in the study file: data set, seed and the overrides that differ from the
    defaults (a key set to its default is the same run as the key left out)."""
    base = defaults()
    changed = {k: v for k, v in record["config"].items() if base.get(k) != v}
    return json.dumps([record["dataset"], record["seed"], changed], sort_keys=True)


def _read_config(strategy: Any, cfg: dict[str, Any]) -> None:
    """Give a finished run's strategy another run config, as if it had started with it: a strategy
    reads its options once (its family's options class) and derives its label read from them and
    the handshake (``check_clients``), so both are made again."""
    strategy.cfg = cfg
    strategy.options = from_run_config(type(strategy.options), cfg)
    strategy.check_clients(strategy.client_info)


def run_study(
    family: str,
    sets: dict[str, str],
    seeds: list[int],
    grid: dict[str, list[Any]],
    out: Path,
    fixed: dict[str, Any] | None = None,
    design: str = "one-at-a-time",
) -> None:
    """Run every configuration of ``grid`` on ``sets`` x ``seeds``; append the records to ``out``.

    Parameters
    ----------
    family : str
        ``"sonmf"``, ``"imk"`` or ``"iai"``.
    sets : dict
        Short name -> run-config ``dataset``.
    seeds : list of int
    grid : dict
        Key -> values (:data:`GRIDS`).
    out : Path
        JSON-lines file; one record per run and value of each final-only key.
    fixed : dict, optional
        Overrides every run shares (e.g. ``num-server-rounds``).
    design : str
        See :func:`grid_configs`.
    """
    log = logging.getLogger("simulations.quality")
    records_so_far = _records(out)
    done = {line_key(r) for r in records_so_far}
    out.parent.mkdir(parents=True, exist_ok=True)
    sparse = {
        name: any(is_sparse_nonnegative(v) for v in load_multiview(dataset).views)
        for name, dataset in sets.items()
    }
    by_canonical = {
        line_key({**r, "config": canonical(r["config"], sparse.get(r["dataset"], True))}): r
        for r in records_so_far
    }
    finals = {k: v for k, v in grid.items() if k in FINAL_ONLY}
    base = defaults()
    for config, (name, dataset), seed in itertools.product(grid_configs(grid, design), sets.items(), seeds):
        config = {**(fixed or {}), **config}
        variants = [dict(zip(finals, vs, strict=True)) for vs in itertools.product(*finals.values())] or [{}]
        records = [{"dataset": name, "seed": seed, "config": {**config, **v}} for v in variants]
        if all(line_key(r) in done for r in records):
            continue
        twins = [
            by_canonical.get(line_key({**r, "config": canonical(r["config"], sparse[name])})) for r in records
        ]
        if all(twins):
            with out.open("a") as f:
                for record, twin in zip(records, twins, strict=True):
                    f.write(
                        json.dumps({**twin, **record, "same_run_as": twin["config"]}, sort_keys=True) + "\n"
                    )
            continue
        data = load_multiview(dataset)
        truth = require_labels(data)
        started = time.perf_counter()
        overrides = {
            "algorithm": ALGORITHMS[family],
            "dataset": dataset,
            "num-clients": len(data.views),
            "seed": seed,
            **config,
        }
        with tempfile.TemporaryDirectory() as tmp:
            strategy = run_in_process(overrides, tmp)
            seconds = time.perf_counter() - started
            rounds = len(strategy.recorder.data["rounds"])
            for variant, record in zip(variants, records, strict=True):
                if variant:
                    _read_config(strategy, {**strategy.cfg, **variant})
                scores = clustering_scores(truth, strategy.final_labels())
                run_config = dict(strategy.cfg)
                if variant:
                    _read_config(strategy, {**strategy.cfg, **{key: base[key] for key in variant}})
                record.update(
                    scores, seconds=seconds, rounds=rounds, code_version=code_version(), run_config=run_config
                )
                with out.open("a") as f:
                    f.write(json.dumps(record, sort_keys=True) + "\n")
                by_canonical[line_key({**record, "config": canonical(record["config"], sparse[name])})] = (
                    record
                )
        log.info("%s %s seed %d %s: ACC %.3f (%.0f s)", family, name, seed, config, scores["acc"], seconds)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _grid_arg(pairs: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for pair in pairs:
        key, values = pair.split("=", 1)
        out[key] = [
            json.loads(v) if v[:1].isdigit() or v in ("true", "false") else v for v in values.split(",")
        ]
    return out


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=sorted(ALGORITHMS))
    parser.add_argument("--sets", nargs="*", help="development sets (default: the six)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--grid", nargs="*", default=None, help="key=v1,v2 (default: the family's GRIDS)")
    parser.add_argument("--set", nargs="*", default=[], help="key=value applied to every run")
    parser.add_argument("--design", choices=("one-at-a-time", "product"), default="one-at-a-time")
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, help="default docs/quality/runs/<family>.jsonl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("flwr").setLevel(logging.WARNING)
    sets = available_sets(args.data_root, args.sets)
    if not sets:
        raise SystemExit(f"none of the development sets is under {args.data_root}")
    grid = _grid_arg(args.grid) if args.grid is not None else GRIDS[args.family]
    fixed = {k: v[0] for k, v in _grid_arg(args.set).items()}
    out = args.out or Path("docs/quality/runs") / f"{args.family}.jsonl"
    run_study(args.family, sets, args.seeds, grid, out, fixed, args.design)


if __name__ == "__main__":
    main()
