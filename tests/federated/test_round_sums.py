"""The base classes' secure sums: every family's server update reads a round only through the sums
of its summed parts, in the clear exactly the mean a plain server would take, masked the same
sums within the fixed point; a client sends nothing its stage does not declare."""

import numpy as np
import pytest

from fedmf_app.federated.protocol import ProtocolError, reply_layout
from fedmf_app.federated.strategy import ViewFederationStrategy
from fedmf_app.methods import FAMILY_NAMES
from fedmf_app.registry import client_class, validate_run_config

from support.data import SMALL_RUNS, client_view
from support.federation import federation, node_context


def _spy_sums(monkeypatch):
    """Record every round's replies and the sums the family's update was given."""
    seen = []
    original = ViewFederationStrategy.round_sums

    def spy(self, server_round, replies):
        sums = original(self, server_round, replies)
        seen.append((self, server_round, replies, sums))
        return sums

    monkeypatch.setattr(ViewFederationStrategy, "round_sums", spy)
    return seen


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_in_the_clear_the_sums_are_the_replies_added_up_bit_for_bit(tmp_path, monkeypatch, family):
    seen = _spy_sums(monkeypatch)
    cfg = validate_run_config({**SMALL_RUNS[family], "num-server-rounds": 3})
    federation(tmp_path, cfg).run()
    assert seen, f"{family}: the server update never read the sums"
    for strategy, server_round, replies, sums in seen:
        stage = strategy.protocol.round_stage(server_round)
        _, arrays, scalars = reply_layout(stage, strategy.sizes(0))
        summed = [p.name for p in arrays + scalars if p.summed]
        assert sorted(sums) == sorted(summed) and summed
        m = len(replies)
        for index, part in enumerate(arrays):
            if part.summed:
                parts = [r.arrays[index] for r in replies]
                # what a server holding every reply would compute: np.mean, to the last bit
                assert np.array_equal(sums[part.name] / m, np.mean(parts, axis=0))
        for part in scalars:
            if part.summed:
                assert sums[part.name] / m == float(np.mean([r.metrics[part.name] for r in replies]))
        assert "secagg_server_s" not in strategy.recorder.data["rounds"][server_round - 1]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_masked_the_same_sums_within_the_fixed_point_and_their_cost_recorded(tmp_path, monkeypatch, family):
    sums = {}
    for secure in (False, True):
        seen = _spy_sums(monkeypatch)
        overrides = {"num-server-rounds": 2, "secure-aggregation": secure}
        cfg = validate_run_config({**SMALL_RUNS[family], **overrides})
        strategy = federation(tmp_path / str(secure), cfg).run()
        sums[secure] = [s for *_, s in seen]
        monkeypatch.undo()
    rounds = strategy.recorder.data["rounds"]
    assert all(r["secagg_server_s"] >= 0 and r["secagg_client_s_max"] >= 0 for r in rounds if r["round"] > 1)
    # the first round's sums start from the same state in both runs (later ones follow the run)
    plain, masked = sums[False][0], sums[True][0]
    assert sorted(plain) == sorted(masked)
    m = cfg["num-clients"]
    for name, value in plain.items():
        tolerance = m * 2.0 ** -cfg["secure-aggregation-frac-bits"]
        np.testing.assert_allclose(masked[name], value, rtol=0, atol=tolerance, err_msg=f"{family}: {name}")


def test_a_client_refuses_to_send_a_value_its_stage_does_not_declare(tmp_path):
    cfg = validate_run_config(SMALL_RUNS["imk"])
    client = client_class("fmvc-imk")(node_context(cfg, 0, 3), cfg, 0, 3, client_view(cfg, 0))
    stage = client.protocol.stage("round")
    values = {"H^(m)": np.zeros((60, 3)), "residual": 1.0, "ortho": 0.0, "h_squared_norm": 0.0}
    with pytest.raises(ProtocolError, match=r"stage 'round' declares no part \['labels'\]: not sent"):
        client.reply(stage, {**values, "alpha": 0.5, "kernel_s": 0.1, "labels": np.zeros(60)}, [], 1)
