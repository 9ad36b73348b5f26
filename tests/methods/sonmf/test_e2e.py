"""End to end: the real ServerApp and ClientApp through Flower's simulation engine."""

import json
from pathlib import Path

import numpy as np
import pytest

from fedmf_app.deployment.superlink import LocalSuperLink
from fedmf_app.methods.sonmf.options import sonmf_params
from fedmf_app.methods.sonmf.reference import KernelFederation, synthetic_views
from fedmf_app.options.run_config import validate_run_config

from fakes import run_federation

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def superlink(tmp_path_factory):
    with LocalSuperLink(tmp_path_factory.mktemp("flwr-home")) as link:
        yield link


def test_three_clients_run_matches_the_kernel_reference(superlink, tmp_path):
    overrides = {
        "num-clients": 3,
        "num-server-rounds": 5,
        "heterogeneity": 0.3,
        "seed": 3,
        "out-dir": str(tmp_path),
        "run-name": "e2e",
    }
    proc = superlink.run(ROOT, overrides, num_supernodes=3, timeout=300)
    result_path = tmp_path / "e2e" / "result.json"
    assert result_path.exists(), proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed", result["error"]
    assert result["config"] == validate_run_config(overrides)
    rounds = result["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
    assert all(r["wall_s"] > 0 and r["client_kernel_s_max"] > 0 for r in rounds)
    # same config and seed -> the same numbers as the in-process kernels
    reference = KernelFederation(
        [v.x for v in synthetic_views(m=3, h=0.3, seed=3)], sonmf_params(result["config"]), seed=3
    )
    for _ in range(5):
        reference.round()
    np.testing.assert_allclose(
        [r["residual"] for r in rounds], [h["residual"] for h in reference.history], rtol=1e-9
    )
    residuals = [r["residual"] for r in rounds]
    assert all(b < a for a, b in zip(residuals, residuals[1:]))
    assert result["summary"]["plots"] == ["residuals.png"]
    assert (tmp_path / "e2e" / "residuals.png").exists()
    assert "[fedsonmf] round 5/5" in proc.stdout


def test_invalid_config_stops_before_round_one(superlink, tmp_path):
    proc = superlink.run(
        ROOT, {"sonmf.rank": 30, "out-dir": str(tmp_path), "run-name": "bad"}, num_supernodes=10, timeout=300
    )
    assert "'sonmf.rank' = 30 is invalid: must be <= 'view-dim' = 20" in proc.stdout
    assert "[ROUND 1]" not in proc.stdout
    assert not (tmp_path / "bad").exists()


def test_supernode_count_must_match_the_clients(superlink, tmp_path):
    proc = superlink.run(
        ROOT,
        {"num-clients": 3, "connect-timeout-s": 2.0, "out-dir": str(tmp_path), "run-name": "count"},
        num_supernodes=2,
        timeout=300,
    )
    assert "needs exactly 3 SuperNodes" in proc.stdout and "num-supernodes=3" in proc.stdout
    assert "[ROUND 1]" not in proc.stdout
    assert not (tmp_path / "count").exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"algorithm": "fedmavg"},
        {"algorithm": "fedmgs"},
        {"algorithm": "fedvra-u"},
        {"sonmf.v-update": "server"},
        {"sonmf.drift-correction": False, "sonmf.local-steps": 1},
    ],
    ids=["fedmavg", "fedmgs", "fedvra-u", "server-update", "uncorrected-tau1"],
)
def test_compared_methods_and_variants_match_their_in_process_runs(superlink, tmp_path, overrides):
    overrides = {
        "num-clients": 2,
        "num-server-rounds": 3,
        "heterogeneity": 0.6,
        "seed": 1,
        "num-samples": 60,
        "out-dir": str(tmp_path),
        "run-name": "e2e",
        **overrides,
    }
    proc = superlink.run(ROOT, overrides, num_supernodes=2, timeout=300)
    result_path = tmp_path / "e2e" / "result.json"
    assert result_path.exists(), proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed", result["error"]
    cfg = validate_run_config(overrides)
    assert result["config"] == cfg
    # the same strategy and clients driven in process (no Ray) give the same numbers
    reference, _ = run_federation(tmp_path / "reference", cfg)
    for key in ("residual", "residual_min", "objective"):
        np.testing.assert_allclose(
            [r[key] for r in result["rounds"]], [r[key] for r in reference.recorder.data["rounds"]], rtol=1e-9
        )


def test_secure_aggregation_in_simulation_gives_the_in_process_numbers(superlink, tmp_path):
    overrides = {
        "num-clients": 3,
        "num-server-rounds": 3,
        "heterogeneity": 0.3,
        "seed": 3,
        "out-dir": str(tmp_path),
        "run-name": "secure",
        "secure-aggregation": True,
    }
    proc = superlink.run(ROOT, overrides, num_supernodes=3, timeout=300)
    result_path = tmp_path / "secure" / "result.json"
    assert result_path.exists(), proc.stdout[-3000:]
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed", result["error"]
    assert "secure aggregation: keys agreed" in proc.stdout
    strategy, _ = run_federation(tmp_path / "in-process", validate_run_config(overrides))
    np.testing.assert_allclose(
        [r["residual"] for r in result["rounds"]],
        [r["residual"] for r in strategy.recorder.data["rounds"]],
        rtol=1e-12,
    )
