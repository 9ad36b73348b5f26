"""FMVC-IAI on the GPU against the CPU: the same run twice, scores compared, time per round.

Runs the in-process reference federation of :mod:`simulations.iai.bench` (the kernels, seeds and
order of the Flower client and strategy, one client after the other) once with ``iai.device =
"cpu"`` and once with ``iai.device = "cuda"`` (the graph autoencoder's training rounds move to the
GPU; the set-up round's autoencoder and every server step stay on the CPU). The two runs start
from the same seeds but are not bitwise equal: CUDA's scatter and matrix kernels sum in another
order and its random streams differ, so the pseudo-labels may part after a few rounds. The check
passes when every final score (ACC, NMI, ARI) of the GPU run is within ``--tolerance`` (default
0.03, less than half the spread of HW's scores over seeds, 0.07 in ACC) of the CPU run's. The
two runs go side by side in two processes (each one thread, as
:func:`~simulations.iai.bench.benchmark` runs), so the check takes about as long as the CPU run
alone. It writes both records and the comparison to ``--out`` and exits with status 1 when the
check fails, 2 when no GPU is present (then nothing is compared; the CPU fallback of
``iai.device = "cuda"`` is what the test suite covers). ``simulations/iai/gpu_check_device.sh``
runs it on a machine without network access (the image's torch, the app and Flower from
carried wheels)::

    python -m simulations.iai.gpu_check --out gpu_check.json
    python -m simulations.iai.gpu_check --run missing-rate=0.9 seed=1 --tolerance 0.05
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simulations.iai.bench import benchmark
from simulations.overrides import parse_overrides

__all__ = ["DEFAULT_RUN", "compare", "main"]

log = logging.getLogger(__name__)

#: The check's run: HW, half the samples missing half their views, R = 5 training rounds, seed 0.
DEFAULT_RUN = {
    "algorithm": "fmvc-iai",
    "dataset": "hw",
    "num-clients": 6,
    "missing-rate": 0.5,
    "num-server-rounds": 6,
    "seed": 0,
}

SCORES = ("acc", "nmi", "ari")


def compare(cpu: dict[str, Any], gpu: dict[str, Any], tolerance: float) -> dict[str, Any]:
    """Final scores and mean training-round time of two :func:`~simulations.iai.bench.benchmark`
    records, and whether every score agrees within ``tolerance``.

    Parameters
    ----------
    cpu, gpu : dict
        Records with the same run config but ``iai.device``.
    tolerance : float
        Largest absolute difference allowed in each of ACC, NMI and ARI.

    Returns
    -------
    dict
        ``scores`` (``{"cpu": {...}, "gpu": {...}}``), ``max_difference``, ``tolerance``,
        ``passed`` and ``train_round_s`` (mean client seconds of a training round, per device).
    """
    final = {name: {k: rec["rounds"][-1][k] for k in SCORES} for name, rec in (("cpu", cpu), ("gpu", gpu))}
    difference = max(abs(final["cpu"][k] - final["gpu"][k]) for k in SCORES)
    return {
        "scores": final,
        "max_difference": difference,
        "tolerance": tolerance,
        "passed": bool(difference <= tolerance),
        "train_round_s": {
            name: float(np.mean([r["client_s"] for r in rec["rounds"][1:]]))
            if len(rec["rounds"]) > 1
            else None
            for name, rec in (("cpu", cpu), ("gpu", gpu))
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs="*", default=[], help="run-config overrides key=value")
    parser.add_argument("--tolerance", type=float, default=0.03, help="largest score difference allowed")
    parser.add_argument("--out", type=Path, help="write both records and the comparison here (JSON)")
    parser.add_argument(
        "--devices",
        default="cpu,cuda",
        help="the two devices compared (default cpu,cuda; cpu,cpu checks the comparison itself)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    first, second = args.devices.split(",")
    if "cuda" in (first, second) and not torch.cuda.is_available():
        log.error("no GPU is present (torch.cuda.is_available() is False): nothing to compare")
        return 2
    run = {**DEFAULT_RUN, **parse_overrides(args.run)}
    # spawn, not fork: CUDA cannot be initialised in a forked child of a process that used it
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        records = list(pool.map(benchmark, [{**run, "iai.device": device} for device in (first, second)]))
    result = compare(*records, args.tolerance)
    log.info("%s", json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"comparison": result, "records": records}, indent=1) + "\n")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
