"""End to end on the embedded real data set: the FAB carries it, every client loads its view, the
run ends with the final clustering scored against the ground truth."""

import json
from pathlib import Path

import numpy as np
import pytest

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.multiview import load_multiview
from fedmf_app.deployment.superlink import LocalSuperLink

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e


def test_embedded_hw_runs_under_flwr_run_and_is_scored(tmp_path):
    overrides = {
        "dataset": "hw",
        "num-clients": 6,
        "num-server-rounds": 2,
        "sonmf.diagnostics": False,
        "out-dir": str(tmp_path),
        "run-name": "hw",
    }
    with LocalSuperLink(tmp_path / "flwr-home") as link:
        proc = link.run(ROOT, overrides, num_supernodes=6, timeout=300)
    result_path = tmp_path / "hw" / "result.json"
    assert result_path.exists(), proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed", result["error"]
    assert [c["source"] for c in result["clients"]] == [f"embedded:hw view {p}" for p in range(6)]
    assert result["summary"]["rank"] == 6  # auto: 10 classes, capped by the 6-feature mor view
    final = result["final"]
    truth = load_multiview("hw").labels
    assert len(final["labels"]) == truth.size == 2000 and final["num_clusters"] == 10
    scores = clustering_scores(truth, np.array(final["labels"]))
    assert {k: final[k] for k in scores} == pytest.approx(scores)
    assert result["summary"]["peak_rss_mb_client_max"] > 0
