"""End to end: fmvc-imk through Flower's simulation engine gives the in-process numbers."""

import json
from pathlib import Path

import numpy as np
import pytest

from fedmf_app.deployment.superlink import LocalSuperLink

from imk_data import labelled_file, run

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.e2e


def test_fmvc_imk_run_matches_the_in_process_run(tmp_path):
    path, _ = labelled_file(tmp_path)
    overrides = {
        "algorithm": "fmvc-imk",
        "num-clients": 3,
        "dataset": path,
        "num-server-rounds": 4,
        "imk.tol": 0.0,
        "seed": 2,
        "out-dir": str(tmp_path),
        "run-name": "e2e",
    }
    with LocalSuperLink(tmp_path / "flwr-home") as link:
        proc = link.run(ROOT, overrides, num_supernodes=3, timeout=300)
    result_path = tmp_path / "e2e" / "result.json"
    assert result_path.exists(), proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed", result["error"]
    _, reference, _ = run(
        tmp_path / "reference", **{k: v for k, v in overrides.items() if k not in ("out-dir", "run-name")}
    )
    for key in ("objective", "acc", "nmi"):
        np.testing.assert_allclose(
            [r[key] for r in result["rounds"]], [r[key] for r in reference.recorder.data["rounds"]], rtol=1e-9
        )
    assert result["final"]["acc"] == reference.recorder.data["final"]["acc"] > 0.9
    setup = result["summary"]["setup"]
    # imk.graph = auto on 90 samples: the kNN graphs, the strict upper triangle in uint32 words
    assert setup["secure_sum"] == "masking" and setup["graph"] == "knn"
    assert setup["upload_bytes_per_client"] == 4 * 90 * 89 // 2
    assert result["summary"]["plots"] == ["convergence.png"]
    assert "[fmvc-imk] round 4/4" in proc.stdout
