"""Paper A's Fig. 3 claims under the documented alternatives of the adapted baselines.

Runs, in this process (:mod:`fedmf_app.in_process`, the numbers of ``flwr run``), the Fig. 3
setting (synthetic data, ``h`` in {0, 0.3, 0.6, 0.9}, 50 rounds) for adapted FedMAvg with both
local-step schedules and adapted FedVRA-U over its dual step ``a`` and aggregation step ``d``,
leaving the proposed method as it is, then writes the Fig. 3 panels and the curve-shape table
(:func:`simulations.sonmf.figures.shape_table`). Usage::

    python -m simulations.sonmf.fig3_adaptations --runs runs/fig3-adaptations --out docs/sonmf
"""

from __future__ import annotations

import argparse
import itertools
import logging
from pathlib import Path

from fedmf_app.in_process import run_in_process
from simulations.sonmf import figures

__all__ = ["ADAPTATIONS", "HETEROGENEITY"]

#: (algorithm, run-config overrides) of every curve.
ADAPTATIONS: tuple[tuple[str, dict[str, object]], ...] = (
    ("fedmavg", {"sonmf.fedmavg-schedule": "decreasing"}),
    ("fedmavg", {"sonmf.fedmavg-schedule": "constant"}),
    *(
        ("fedvra-u", {"sonmf.fedvra-dual-step": a, "sonmf.fedvra-aggregation-step": d})
        for a, d in itertools.product((1.0, 0.5, 0.1), (1.0, 0.5))
    ),
)
HETEROGENEITY = (0.0, 0.3, 0.6, 0.9)


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/fig3-adaptations"))
    parser.add_argument("--out", type=Path, default=Path("docs/sonmf"))
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("flwr").setLevel(logging.WARNING)
    for (algorithm, overrides), h, seed in itertools.product(ADAPTATIONS, HETEROGENEITY, args.seeds):
        name = "_".join(
            [algorithm, f"h{h:g}", f"seed{seed}", *(f"{k.split('.')[1]}{v}" for k, v in overrides.items())]
        )
        if (args.runs / name / "result.json").exists():
            continue
        cfg = {
            "algorithm": algorithm,
            "heterogeneity": h,
            "seed": seed,
            "num-server-rounds": args.rounds,
            "sonmf.stop-ratio": 0.0,  # the figure plots every round
            "sonmf.stop-change": 0.0,
            "sonmf.stop-label-change": 0.0,
        }
        run_in_process({**cfg, **overrides}, args.runs, name)
        logging.info("%s done", name)
    figures.main(["fig3-adaptations", str(args.runs), "--out", str(args.out)])


if __name__ == "__main__":
    main()
