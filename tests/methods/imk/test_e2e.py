"""End to end: fmvc-imk through Flower's simulation engine gives the in-process numbers."""

import numpy as np
import pytest

from fedmf_app.common.secure_sum_math import CHECK_WORDS

from support.data import labelled_file
from support.federation import run_imk
from support.flower import flwr_run

pytestmark = pytest.mark.e2e


def test_fmvc_imk_run_matches_the_in_process_run(superlink, tmp_path):
    path, _ = labelled_file(tmp_path)
    overrides = {
        "algorithm": "fmvc-imk",
        "num-clients": 3,
        "dataset": path,
        "num-server-rounds": 4,
        "imk.tol": 0.0,
        "seed": 2,
    }
    result = flwr_run(superlink, tmp_path, overrides, num_supernodes=3)
    _, reference, _ = run_imk(tmp_path / "reference", **overrides)
    for key in ("objective", "acc", "nmi"):
        np.testing.assert_allclose(
            [r[key] for r in result.completed()["rounds"]],
            [r[key] for r in reference.recorder.data["rounds"]],
            rtol=1e-9,
        )
    assert result.result["final"]["acc"] == reference.recorder.data["final"]["acc"] > 0.9
    setup = result.result["summary"]["setup"]
    # imk.graph = auto on 90 samples: the kNN graphs, the strict upper triangle in uint64 words
    assert setup["graph"] == "knn"
    assert setup["upload_bytes_per_client"] == 8 * (90 * 89 // 2 + CHECK_WORDS)
    assert result.result["summary"]["plots"] == ["convergence.png"]
    assert "[fmvc-imk] round 4/4" in result.log
