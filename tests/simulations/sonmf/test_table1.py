"""The Table-1 script: federated scores from result.json next to the centralised baselines."""

import json

import numpy as np

from fedmf_app.options.run_config import validate_run_config
from simulations.sonmf.table1 import baseline_scores, completed_runs, markdown


def _write_runs(tmp_path, dataset, accs):
    for seed, acc in enumerate(accs):
        folder = tmp_path / "sweep" / str(seed)
        folder.mkdir(parents=True)
        cfg = validate_run_config({"dataset": dataset, "num-clients": 2, "seed": seed})
        final = {"labels": [0, 1], "num_clusters": 2, "acc": acc, "nmi": 0.5, "purity": acc, "ari": 0.1}
        summary = {
            "rank": 2,
            "wall_s": 3.0 + seed,
            "peak_rss_mb_server": 100.0,
            "peak_rss_mb_client_max": 120.0 + seed,
        }
        (folder / "result.json").write_text(
            json.dumps({"config": cfg, "status": "completed", "summary": summary, "final": final})
        )
        (folder / "job_timing.json").write_text(json.dumps({"job_s": 10.0, "flwr_run_s": 8.0}))
    failed = tmp_path / "sweep" / "failed"
    failed.mkdir()
    (failed / "result.json").write_text(json.dumps({"config": {}, "status": "failed", "final": None}))


def test_table_reports_mean_and_spread_over_seeds_beside_the_baselines(tmp_path):
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1], 15)
    views = [np.vstack([rng.random((15, d)), 5 + rng.random((15, d))]) for d in (3, 4)]
    path = tmp_path / "toy.npz"
    np.savez(path, X_0=views[0], X_1=views[1], y=truth)
    _write_runs(tmp_path, str(path), [0.5, 0.7])
    groups = completed_runs(tmp_path / "sweep")
    assert list(groups) == [str(path)] and [r["config"]["seed"] for r in groups[str(path)]] == [0, 1]
    base = baseline_scores(str(path), groups[str(path)][0]["config"], 2, [0, 1])
    assert [s["acc"] for s in base["kmeans"]] == [1.0, 1.0]  # two far-apart groups
    text = markdown(groups, {str(path): base})
    assert (
        "| fedsonmf (federated, one view per client) | 60.0±10.0 / 50.0±0.0 / 60.0±10.0 / 10.0±0.0 |" in text
    )
    assert (
        "| k-means (centralised, concatenated views) | 100.0±0.0 / 100.0±0.0 / 100.0±0.0 / 100.0±0.0 |"
        in text
    )
    assert "| toy | 30 | 2 (3, 4) | 2 | 2 | 100 | 2 | 3.5±0.5 | 10.0 | 100 / 121 |" in text
