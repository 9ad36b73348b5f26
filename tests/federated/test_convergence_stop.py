"""The convergence stop: the run ends after the first round that meets the rule, and is complete."""

import itertools

import numpy as np
import pytest

from fedmf_app.in_process import run_in_process

BASE = {
    "num-clients": 3,
    "num-samples": 60,
    "num-server-rounds": 25,
    "seed": 1,
    "sonmf.stop-change": 0.0,
    "sonmf.stop-label-change": 0.0,
}


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


def _label_changes(overrides, tmp_path, name):
    """A run with the label rule on but never met (its patience beyond the rounds)."""
    cfg = {**overrides, "sonmf.stop-label-change": 0.5, "sonmf.stop-label-patience": 100}
    return run_in_process(cfg, tmp_path, name)


def test_the_label_change_is_the_matched_change_of_the_rounds_clusterings(tmp_path):
    full = _label_changes({**BASE, "sonmf.stop-ratio": 0.0}, tmp_path, "full")
    rounds, history = full.recorder.data["rounds"], full.label_history
    assert len(rounds) == 25 and rounds[0]["label_change"] is None
    for t in range(2, 26):
        a, b = history[t - 1], history[t]
        least = min(np.mean(a != np.array(p)[b]) for p in itertools.permutations(range(b.max() + 1)))
        assert rounds[t - 1]["label_change"] == pytest.approx(least)
    # the rule leaves the run as it was: the same objectives and the same final clustering
    plain = run_in_process({**BASE, "sonmf.stop-ratio": 0.0}, tmp_path, "plain")
    assert [r["objective"] for r in rounds] == [r["objective"] for r in plain.recorder.data["rounds"]]
    assert full.recorder.data["final"]["labels"] == plain.recorder.data["final"]["labels"]
    assert "label_change" not in plain.recorder.data["rounds"][-1] and not plain.label_history


@pytest.mark.parametrize(("tol", "patience"), [(0.1, 2), (0.05, 3)])
def test_fedsonmf_stops_once_its_labels_have_settled_for_their_patience(tmp_path, tol, patience):
    full = _label_changes({**BASE, "sonmf.stop-ratio": 0.0}, tmp_path, "full")
    changes = [r["label_change"] for r in full.recorder.data["rounds"]]
    first = next(
        t
        for t in range(patience + 1, 26)
        if all(c is not None and c <= tol for c in changes[t - patience : t])
    )
    assert first < 25  # the case stops early (checked, not assumed)
    cfg = {
        **BASE,
        "sonmf.stop-ratio": 0.0,
        "sonmf.stop-label-change": tol,
        "sonmf.stop-label-patience": patience,
    }
    stopped = run_in_process(cfg, tmp_path, f"stopped-{tol}")
    data = stopped.recorder.data
    assert data["status"] == "completed" and len(data["rounds"]) == first
    assert "sonmf.stop-label-change" in data["summary"]["stopped_early"]["reason"]
    # the output is the clustering of the round it stopped after
    assert data["final"]["labels"] == full.label_history[first].tolist()


def test_the_label_rule_stops_a_run_without_diagnostics(tmp_path):
    cfg = {**BASE, "sonmf.diagnostics": False, "sonmf.stop-label-change": 0.1, "sonmf.stop-label-patience": 2}
    data = run_in_process(cfg, tmp_path, "no-diagnostics").recorder.data
    assert data["summary"]["stopped_early"]["round"] < 25
    assert "objective" not in data["rounds"][-1] and data["rounds"][-1]["label_change"] <= 0.1


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
