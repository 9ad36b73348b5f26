"""The convergence stop: the run ends after the first round that meets the rule, and is complete."""

import numpy as np
import pytest

from fedmf_app.in_process import run_in_process

BASE = {"num-clients": 3, "num-samples": 60, "num-server-rounds": 25, "seed": 1, "sonmf.stop-change": 0.0}


def test_fedsonmf_stops_at_the_first_round_within_the_tolerance_with_that_rounds_result(tmp_path):
    full = run_in_process({**BASE, "sonmf.stop-ratio": 0.0}, tmp_path, "full")
    ratios = [r["residual_ratio"] for r in full.recorder.data["rounds"]]
    tol = ratios[7] * 1.0001  # met first in round 8 (the ratio falls monotonically here)
    first = next(s for s, ratio in enumerate(ratios, start=1) if ratio <= tol)
    stopped = run_in_process({**BASE, "sonmf.stop-ratio": tol}, tmp_path, "stopped")
    data = stopped.recorder.data
    assert data["status"] == "completed" and len(data["rounds"]) == first < 25
    assert data["summary"]["stopped_early"]["round"] == first
    # the stopped run is the full run cut at that round: same records, same final V as round `first`
    for a, b in zip(data["rounds"], full.recorder.data["rounds"][:first]):
        assert a["residual"] == b["residual"] and a["objective"] == b["objective"]
    assert len(data["final"]["labels"]) == 60  # the final clustering was made after the stop


@pytest.mark.parametrize("patience", [1, 3])
def test_fedsonmf_stops_once_the_objective_has_been_flat_for_its_patience(tmp_path, patience):
    full = run_in_process({**BASE, "sonmf.stop-ratio": 0.0}, tmp_path, "full")
    objectives = np.array([r["objective"] for r in full.recorder.data["rounds"]])
    change = np.abs(np.diff(objectives)) / np.abs(objectives[:-1])  # change[t - 2]: round t vs t - 1
    tol = float(np.sort(change)[len(change) // 2])  # flat in about half of the rounds
    flat = change <= tol
    first = next(t for t in range(patience + 1, 26) if flat[t - 1 - patience : t - 1].all())
    overrides = {**BASE, "sonmf.stop-ratio": 0.0, "sonmf.stop-change": tol, "sonmf.stop-patience": patience}
    stopped = run_in_process(overrides, tmp_path, f"stopped-{patience}")
    data = stopped.recorder.data
    assert data["status"] == "completed" and len(data["rounds"]) == first < 25
    assert "sonmf.stop-change" in data["summary"]["stopped_early"]["reason"]
    assert [r["objective"] for r in data["rounds"]] == objectives[:first].tolist()


def test_without_the_stop_every_round_runs(tmp_path):
    strategy = run_in_process({**BASE, "num-server-rounds": 6, "sonmf.stop-ratio": 0.0}, tmp_path, "r")
    data = strategy.recorder.data
    assert len(data["rounds"]) == 6 and "stopped_early" not in data["summary"]


def test_round_records_give_the_bytes_each_client_sends_and_receives(tmp_path):
    strategy = run_in_process({**BASE, "num-server-rounds": 2}, tmp_path, "bytes")
    rank, n = strategy.v.shape
    for record, client_bytes in zip(
        strategy.recorder.data["rounds"], zip(*(c.upload_bytes for c in strategy.clients))
    ):
        assert record["bytes_up_per_client_max"] == max(client_bytes)
        # the broadcast holds at least one r x n float64 matrix; each reply at least the upload
        assert record["bytes_down_per_client"] >= rank * n * 8
        assert min(client_bytes) >= rank * n * 8
    assert np.isfinite(strategy.recorder.data["rounds"][-1]["objective"])


def test_a_stop_in_round_one_is_not_possible_the_ratio_starts_at_one(tmp_path):
    strategy = run_in_process({**BASE, "num-server-rounds": 4, "sonmf.stop-ratio": 0.9}, tmp_path, "one")
    assert strategy.recorder.data["rounds"][0]["residual_ratio"] == 1.0
    assert len(strategy.recorder.data["rounds"]) >= 2


def test_a_run_ended_by_its_convergence_stop_is_not_resumed(tmp_path):
    from fedmf_app.options import ConfigError
    from fedmf_app.registry import validate_run_config
    from fedmf_app.server_app import _resumed_strategy

    overrides = {**BASE, "sonmf.stop-ratio": 0.5}
    strategy = run_in_process(overrides, tmp_path, "stopped")
    assert strategy.recorder.data["summary"]["stopped_early"]["round"] < 25
    cfg = validate_run_config(
        {**overrides, "out-dir": str(tmp_path), "resume-from": str(tmp_path / "stopped")}
    )
    with pytest.raises(ConfigError, match=r"its convergence stop\); nothing to resume"):
        _resumed_strategy(cfg)
