"""What a run says while it runs: each round line with the rounds left and an ETA, and after a
convergence stop the rounds that ran (also in Flower's closing line's config)."""

import logging

import pytest
from flwr.server import ServerConfig

from fedmf_app.federated.progress import format_seconds, time_left
from fedmf_app.in_process import InProcessFederation

BASE = {"num-clients": 3, "num-samples": 60, "seed": 1}


@pytest.mark.parametrize(
    "seconds, text", [(0.4, "0 s"), (42, "42 s"), (185, "3 min 05 s"), (3725, "1 h 02 min")]
)
def test_durations_read_at_a_glance(seconds, text):
    assert format_seconds(seconds) == text


def test_the_eta_is_the_rounds_left_times_the_recent_median_round():
    # the slow first (set-up) round leaves the estimate once later rounds exist
    assert time_left([30.0, 2.0, 4.0, 3.0], done=4, total=10) == "; 6 rounds left, ETA 18 s"
    assert time_left([30.0], done=1, total=3) == "; 2 rounds left, ETA 1 min 00 s"
    assert time_left([2.0] * 9 + [50.0], done=10, total=11) == "; 1 round left, ETA 2 s"
    assert time_left([2.0, 2.0], done=2, total=2) == ""


def _progress_lines(caplog):
    return [r.getMessage() for r in caplog.records if "] round " in r.getMessage()]


def test_every_round_line_carries_the_rounds_left_and_an_eta(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="flwr")
    InProcessFederation({**BASE, "num-server-rounds": 3, "sonmf.stop-ratio": 0.0}, tmp_path).run()
    lines = _progress_lines(caplog)
    assert [line.split("] ")[1].split()[1] for line in lines] == ["1/3", "2/3", "3/3"]
    assert "; 2 rounds left, ETA " in lines[0] and "; 1 round left, ETA " in lines[1]
    assert "left" not in lines[2]


def test_a_convergence_stop_says_how_many_rounds_ran_and_flowers_summary_counts_them(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="flwr")
    federation = InProcessFederation({**BASE, "num-server-rounds": 25, "sonmf.stop-ratio": 0.5}, tmp_path)
    federation.server.rounds_config = ServerConfig(num_rounds=25)
    federation.run()
    ran = len(federation.strategy.recorder.data["rounds"])
    assert 1 < ran < 25
    assert federation.server.rounds_config.num_rounds == ran
    assert f"stopped early: ran {ran} of 25 rounds" in [r.getMessage() for r in caplog.records]


def test_without_diagnostics_the_run_says_its_stop_rules_cannot_fire_and_runs_every_round(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="flwr")
    cfg = {
        **BASE,
        "num-server-rounds": 6,
        "sonmf.diagnostics": False,
        "sonmf.stop-ratio": 0.9,
        "sonmf.stop-label-change": 0.0,
    }
    federation = InProcessFederation(cfg, tmp_path)
    federation.run()
    assert len(federation.strategy.recorder.data["rounds"]) == 6
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("sonmf.diagnostics = false" in w and "runs all 6 rounds" in w for w in warnings)
    # with the label rule on, the warning says that rule alone can still end the run
    caplog.clear()
    InProcessFederation({**cfg, "sonmf.stop-label-change": 0.01}, tmp_path / "labels").run()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("only sonmf.stop-label-change can end it early" in w for w in warnings)
    # with diagnostics the same residual stop ends the run early (the rule itself works)
    stopped = InProcessFederation({**cfg, "sonmf.diagnostics": True}, tmp_path / "on")
    stopped.run()
    assert len(stopped.strategy.recorder.data["rounds"]) < 6
