"""FMVC-IAI over the rounds: per-round ACC / NMI / ARI, label changes and losses, as JSONL records.

Runs the in-process reference federation (:mod:`fedmf_app.methods.iai.reference`, the kernels and
seeds of the Flower client and strategy), one thread, for each seed given, and appends one JSON line
per run to ``--out``: ``code_version`` (:func:`fedmf_app.federated.results.code_version`),
``dataset`` (the data set's name, never a temporary path), ``seed``, ``missing_rate``, ``config``
(every run-config value, the dataset path replaced by its name) and ``rounds`` (round 1 is the set-
up round, whose labels are Y⁰). ``--table`` turns record files into the Markdown table of
docs/iai.md; with ``--export DIR`` it also writes every record as the small JSON that
:mod:`simulations.iai.table` reads (the last round's scores as the run's result), so the missing-
rate and ablation tables can be built from them beside the Flower runs' records.

Usage::

    python -m simulations.iai.rounds --seeds 0 1 2 --run dataset=hw num-clients=6 \
        missing-rate=0.5 num-server-rounds=6 --out docs/iai/runs/rounds/hw.jsonl
    python -m fedmf_app.data.noisy_mnist --mnist ../shared/data/mnist_t10k --out /tmp/x/noisy_mnist.npz
    python -m simulations.iai.rounds --seeds 0 1 2 --run dataset=/tmp/x/noisy_mnist.npz \
        num-clients=2 missing-rate=0.5 num-server-rounds=6 --out docs/iai/runs/rounds/noisy_mnist.jsonl
    python -m simulations.iai.rounds --table docs/iai/runs/rounds/*.jsonl
    python -m simulations.iai.rounds --table docs/iai/runs/rounds/noisy_mnist.jsonl \
        --export docs/iai/runs/noisy_mnist
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data import load_client_view
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.federated.results import code_version
from fedmf_app.methods.iai.params import iai_params
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.registry import data_needs, defaults, validate_run_config
from simulations.iai.table import METRICS, ROUND_KEYS, export_runs, method_name
from simulations.overrides import parse_overrides

logger = logging.getLogger(__name__)

__all__ = ["dataset_name", "export_records", "rounds_table", "run_rounds"]


def dataset_name(dataset: str) -> str:
    """A data set's name for records: the file's stem for a path, else the name as given.

    Parameters
    ----------
    dataset : str
        Run config ``dataset``.

    Returns
    -------
    str
    """
    return Path(dataset).stem if ("/" in dataset or "." in dataset) else dataset


def run_rounds(overrides: dict[str, Any]) -> dict[str, Any]:
    """One FMVC-IAI run in process, scored after every round.

    Parameters
    ----------
    overrides : dict
        Run-config overrides (``num-server-rounds`` counts the set-up round).

    Returns
    -------
    dict
        The record (see the module docstring).
    """
    torch.set_num_threads(1)
    version = code_version()  # before the run: the code it runs
    cfg = validate_run_config(overrides)
    with threadpool_limits(1):
        m, seed = cfg["num-clients"], cfg["seed"]
        views = [load_client_view(cfg, p, needs=data_needs(cfg)) for p in range(m)]
        truth = views[0].labels
        n = views[0].features.shape[0]
        k = cfg["num-clusters"] or int(truth.max()) + 1
        params = iai_params(cfg, k, num_samples=n)
        mask = missing_view_mask(n, m, cfg["missing-rate"], seed, cfg["missing-views-dropped"])
        fed = IAIReference([v.features for v in views], params, k, seed, observed=mask)
        rounds: list[dict[str, Any]] = []
        previous = None
        for s in range(1, cfg["num-server-rounds"] + 1):
            start = time.perf_counter()
            fed.round()
            state = fed.state
            record: dict[str, Any] = {"round": s, "seconds": time.perf_counter() - start}
            record.update(clustering_scores(truth, state.labels))
            record["components"] = int(state.components)
            if previous is not None:
                record["label_change"] = float(np.mean(state.labels != previous))
            if fed.uploads:
                for key in ("attribute", "structure", "clustering"):
                    record[f"loss_{key}"] = float(np.mean([getattr(u.losses, key) for u in fed.uploads]))
                emd = [u.emd for u in fed.uploads if u.emd is not None]
                record["emd_mean"] = float(np.mean(emd)) if emd else None
                record.update(fed.info)
            previous = state.labels
            rounds.append(record)
            logger.info("%s", json.dumps(record))
    name = dataset_name(cfg["dataset"])
    return {
        "code_version": version,
        "dataset": name,
        "seed": seed,
        "missing_rate": cfg["missing-rate"],
        "params": {
            "knn": params.knn,
            "anchor_neighbours": params.anchor_neighbours,
            "anchors": params.anchors,
        },
        "config": {**cfg, "dataset": name},
        "rounds": rounds,
    }


def _load(paths: list[str]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        with open(path) as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out


def _variant(config: dict[str, Any]) -> str:
    """The ``iai.`` options of a run that differ from today's defaults (``defaults`` when none);
    keys today's run config no longer has are left out."""
    base = defaults()
    changed = [
        f"{k}={v}" for k, v in sorted(config.items()) if k.startswith("iai.") and k in base and base[k] != v
    ]
    return " ".join(changed) or "defaults"


def rounds_table(records: list[dict[str, Any]], label: str = "") -> str:
    """Markdown table: per data set and missing rate, mean ACC (NMI) per round over the seeds.

    Parameters
    ----------
    records : list of dict
        :func:`run_rounds` records.
    label : str
        Only records whose ``config`` has this ``run-name`` (empty: all).

    Returns
    -------
    str
    """
    groups: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    for rec in records:
        if label and rec["config"].get("run-name") != label:
            continue
        key = (rec["dataset"], rec["missing_rate"], _variant(rec["config"]))
        groups.setdefault(key, []).append(rec)
    width = max(len(r["rounds"]) for r in records)
    head = "| data | η | options (not default) | seeds | " + " | ".join(
        ["Y⁰"] + [f"round {s}" for s in range(2, width + 1)]
    )
    lines = [head + " | last − Y⁰ (min over seeds) |", "|" + "---|" * (width + 5)]
    for (name, eta, rule), recs in sorted(groups.items()):
        cells = []
        for s in range(width):
            acc = [r["rounds"][s]["acc"] for r in recs if len(r["rounds"]) > s]
            nmi = [r["rounds"][s]["nmi"] for r in recs if len(r["rounds"]) > s]
            cells.append(f"{np.mean(acc):.3f} ({np.mean(nmi):.3f})" if acc else "")
        gain = [r["rounds"][-1]["acc"] - r["rounds"][0]["acc"] for r in recs]
        seeds = ",".join(str(r["seed"]) for r in recs)
        lines.append(
            f"| {name} | {eta} | {rule} | {seeds} | " + " | ".join(cells) + f" | {np.mean(gain):+.3f} "
            f"({min(gain):+.3f}) |"
        )
    return "\n".join(lines)


def export_records(records: list[dict[str, Any]], folder: Path) -> list[Path]:
    """Write every record as a run that :func:`simulations.iai.table.collect` reads.

    Parameters
    ----------
    records : list of dict
        :func:`run_rounds` records.
    folder : Path
        Created if missing.

    Returns
    -------
    list of Path
        One file per record (:func:`simulations.iai.table.export_runs`); its ``final`` scores are the
        last round's, its ``job_s`` the summed round times.
    """
    runs = [
        {
            "data": rec["dataset"],
            "method": method_name(rec["config"]),
            "rate": float(rec["missing_rate"]),
            "seed": rec["seed"],
            "job_s": float(sum(r["seconds"] for r in rec["rounds"])),
            "config": rec["config"],
            **{m: float(rec["rounds"][-1][m]) for m in METRICS},
            "rounds": [{k: r[k] for k in ROUND_KEYS if r.get(k) is not None} for r in rec["rounds"]],
        }
        for rec in records
    ]
    return export_runs(runs, folder)


def main(argv: list[str] | None = None) -> None:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs="*", default=[], help="run-config overrides key=value")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0])
    parser.add_argument("--out", help="JSONL file the records are appended to")
    parser.add_argument("--table", nargs="*", help="JSONL record files to tabulate")
    parser.add_argument("--export", type=Path, help="with --table: also write one JSON per record here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.table:
        records = _load(args.table)
        print(rounds_table(records))  # noqa: T201 (script output)
        if args.export:
            export_records(records, args.export)
        return
    overrides = {"algorithm": "fmvc-iai", **parse_overrides(args.run)}
    for seed in args.seeds:
        record = run_rounds({**overrides, "seed": seed})
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            with open(args.out, "a") as fh:
                fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
