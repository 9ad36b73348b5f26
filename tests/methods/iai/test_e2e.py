"""FMVC-IAI end to end: the real ServerApp and ClientApp through Flower's simulation engine."""

import json
from pathlib import Path

import numpy as np
import pytest

from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.options.run_config import validate_run_config

from fakes import run_federation
from iai_data import SMALL

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.e2e


def test_short_run_completes_and_matches_the_in_process_run(tmp_path):
    overrides = {**SMALL, "out-dir": str(tmp_path), "run-name": "iai"}
    with LocalSuperLink(tmp_path / "flwr-home") as link:
        proc = link.run(ROOT, overrides, num_supernodes=3, timeout=300)
    path = tmp_path / "iai" / "result.json"
    assert path.exists(), proc.stdout[-3000:]
    result = json.loads(path.read_text())
    assert result["status"] == "completed", result["error"]
    assert [r["phase"] for r in result["rounds"]] == ["setup", "train", "train", "train"]
    assert "[fmvc-iai] round 4/4" in proc.stdout
    # the same seeds give the same clustering as the strategy and clients driven in process
    reference, _ = run_federation(tmp_path / "reference", validate_run_config(overrides))
    np.testing.assert_array_equal(result["final"]["labels"], reference.final_labels())
