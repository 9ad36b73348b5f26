"""The GPU check's comparison, its refusal without a GPU, and a whole (CPU against CPU) check."""

import json

import pytest
import torch

from simulations.iai import gpu_check
from simulations.iai.gpu_check import compare

from support.data import IAI_SMALL as SMALL
from support.data import iai_labelled_file


def _record(acc, seconds):
    rounds = [{"client_s": 9.0, "acc": 0.5, "nmi": 0.5, "ari": 0.5}]
    rounds += [{"client_s": s, "acc": acc, "nmi": 0.8, "ari": 0.7} for s in seconds]
    return {"rounds": rounds}


def test_scores_within_the_tolerance_pass_and_others_fail():
    result = compare(_record(0.80, [4.0, 6.0]), _record(0.82, [1.0, 1.0]), tolerance=0.03)
    assert result["passed"] and result["max_difference"] == pytest.approx(0.02)
    assert result["train_round_s"] == {"cpu": 5.0, "gpu": 1.0}  # the set-up round is left out
    assert not compare(_record(0.80, [1.0]), _record(0.85, [1.0]), tolerance=0.03)["passed"]


def test_without_a_gpu_nothing_is_compared(monkeypatch, caplog):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 2
    assert "no GPU is present" in caplog.text


def test_the_same_device_twice_gives_the_same_scores(tmp_path):
    run = {**SMALL, "dataset": iai_labelled_file(tmp_path), "num-server-rounds": 3}
    overrides = [f"{k}={json.dumps(v)}" for k, v in run.items()]
    out = tmp_path / "check.json"
    assert gpu_check.main(["--devices", "cpu,cpu", "--out", str(out), "--run", *overrides]) == 0
    comparison = json.loads(out.read_text())["comparison"]
    assert comparison["max_difference"] == 0.0 and comparison["passed"]
