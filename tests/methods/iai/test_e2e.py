"""FMVC-IAI end to end: the real ServerApp and ClientApp through Flower's simulation engine."""

import numpy as np
import pytest

from support.data import IAI_SMALL
from support.federation import run_federation
from support.flower import flwr_run

pytestmark = pytest.mark.e2e


def test_short_run_completes_and_matches_the_in_process_run(superlink, tmp_path):
    run = flwr_run(superlink, tmp_path, IAI_SMALL, num_supernodes=3, run_name="iai")
    result = run.completed()
    assert [r["phase"] for r in result["rounds"]] == ["setup", "train", "train", "train"]
    assert "[fmvc-iai] round 4/4" in run.log
    # the same seeds give the same clustering as the strategy and clients driven in process
    reference, _ = run_federation(tmp_path / "reference", IAI_SMALL)
    np.testing.assert_array_equal(result["final"]["labels"], reference.final_labels())
