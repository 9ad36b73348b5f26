"""The in-process driver of the imk tables gives the Flower run's numbers, run for run."""

import os
from pathlib import Path

import pytest

from fedmf_app.in_process import run_in_process
from simulations.imk.datasets import run_one

# ../shared/data from the project root, or FEDMF_DEV_DATA (e.g. from a git worktree elsewhere)
SHARED = Path(os.environ.get("FEDMF_DEV_DATA", Path(__file__).resolve().parents[4] / "shared" / "data"))


def test_the_driver_gives_the_federation_s_run_on_bbcsport_whose_duplicate_documents_tie(tmp_path):
    # BBCSport's word counts are stored sparse and hold duplicate documents (kNN ties at distance
    # 0): read otherwise than the clients read them, or on more threads, the driver's runs were others
    path = SHARED / "bbcsport" / "BBCSport.mat"
    if not path.exists():
        pytest.skip(f"{path} is absent (development data, not part of the product)")
    overrides = {"num-server-rounds": 8, "imk.tol": 0.0}
    ours = run_one(str(path), 0, overrides)
    strategy = run_in_process(
        {"algorithm": "fmvc-imk", "dataset": str(path), "num-clients": 2, "seed": 0, **overrides}, tmp_path
    )
    final = strategy.recorder.data["final"]
    assert ours["rounds"] == len(strategy.recorder.data["rounds"]) == 8
    assert (ours["acc"], ours["nmi"]) == (final["acc"], final["nmi"])
