"""End to end: paper A's method through Flower's simulation engine, on the embedded real data set.

One ``flwr run`` (the real ServerApp and ClientApp, the FAB carrying the embedded HW views, secure
aggregation on, the sketch start) and several checks on it: it completes, every client loads its
view, the numbers are those of the same run in process, the final clustering is scored against the
ground truth."""

import numpy as np
import pytest

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.multiview import load_multiview
from fedmf_app.in_process import run_in_process
from fedmf_app.registry import validate_run_config

from support.flower import flwr_run

pytestmark = pytest.mark.e2e

OVERRIDES = {"dataset": "hw", "num-clients": 6, "num-server-rounds": 2, "secure-aggregation": True, "seed": 3}


@pytest.fixture(scope="module")
def run(superlink, tmp_path_factory):
    return flwr_run(superlink, tmp_path_factory.mktemp("sonmf"), OVERRIDES, num_supernodes=6)


def test_the_run_completes_and_records_every_round(run):
    result = run.completed()
    assert result["config"] == validate_run_config(
        {**OVERRIDES, "out-dir": str(run.run_dir.parent), "run-name": "e2e"}
    )
    assert [r["round"] for r in result["rounds"]] == [1, 2]
    assert all(r["wall_s"] > 0 and r["client_kernel_s_max"] > 0 for r in result["rounds"])
    assert "secure aggregation: every client sent its key in the handshake" in run.log
    assert "[fedsonmf] round 2/2" in run.log
    assert result["summary"]["plots"] == ["residuals.png"]
    assert (run.run_dir / "residuals.png").stat().st_size > 0
    assert result["summary"]["peak_rss_mb_client_max"] > 0


def test_every_client_loads_its_embedded_view(run):
    result = run.completed()
    assert [c["source"] for c in result["clients"]] == [f"embedded:hw view {p}" for p in range(6)]
    assert [c["partition-id"] for c in result["clients"]] == list(range(6))
    assert result["summary"]["rank"] == 30  # auto: 3 per cluster x 10 classes; the mor view uses <= 6
    assert result["summary"]["start_s"] > 0  # real data: the sketch start's masked shares went through Flower


def test_flower_gives_the_in_process_numbers(run, tmp_path):
    result = run.completed()
    reference = run_in_process(OVERRIDES, tmp_path).recorder.data
    for key in ("residual", "residual_min", "objective"):
        np.testing.assert_allclose(
            [r[key] for r in result["rounds"]], [r[key] for r in reference["rounds"]], rtol=1e-12
        )
    assert result["final"]["labels"] == reference["final"]["labels"]


def test_the_final_clustering_is_scored_against_the_ground_truth(run):
    final = run.completed()["final"]
    truth = load_multiview("hw").labels
    assert len(final["labels"]) == truth.size == 2000 and final["num_clusters"] == 10
    scores = clustering_scores(truth, np.array(final["labels"]))
    assert {k: final[k] for k in scores} == pytest.approx(scores)
