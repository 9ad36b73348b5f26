"""FMVC-IMK prepares its view once per run: the setup message standardises and scales it and keeps it
in the node's ``context.state``; the rounds' messages reuse it, with the numbers of a run that
prepares it in every message (dense and CSR views)."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import fedmf_app.methods.imk.client as imk_client
from fedmf_app.registry import client_class, validate_run_config

from support.data import IMK_BASE, client_view, sparse_file
from support.federation import node_context, run_imk, views_as_csr


@pytest.fixture
def preparations(monkeypatch):
    """The shape of the view given to every call of the client's ``preprocess_view``."""
    calls = []
    original = imk_client.preprocess_view

    def counted(x, standardise, unit_norm):
        calls.append(x.shape)
        return original(x, standardise, unit_norm)

    monkeypatch.setattr(imk_client, "preprocess_view", counted)
    return calls


def _numbers(strategy):
    rounds = [
        {k: v for k, v in r.items() if not k.endswith("_s") and "_s_" not in k}
        for r in strategy.recorder.data["rounds"]
    ]
    return rounds, strategy.recorder.data["final"]["labels"], strategy.h


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_the_view_is_prepared_once_per_node_and_the_numbers_do_not_change(
    tmp_path, monkeypatch, preparations, sparse
):
    overrides = {"num-server-rounds": 4, "imk.graph": "anchor", "imk.anchors": 24}
    if sparse:
        overrides["dataset"] = sparse_file(tmp_path)
        views_as_csr(monkeypatch)
    cfg, kept, clients = run_imk(tmp_path / "kept", **overrides)
    m = cfg["num-clients"]
    assert len(preparations) == m  # the setup message of each node; none in the 4 rounds
    assert all(sp.issparse(c._view()) == sparse for c in clients)

    # every message prepares again (a fresh key each time): the run before the view was kept
    fresh = itertools.count()
    monkeypatch.setattr(imk_client, "_view_key", lambda cfg, features: f"message-{next(fresh)}")
    preparations.clear()
    _, again, _ = run_imk(tmp_path / "again", **overrides)
    assert len(preparations) == m * (1 + cfg["num-server-rounds"])
    rounds, labels, h = _numbers(kept)
    rounds_again, labels_again, h_again = _numbers(again)
    assert rounds == rounds_again and labels == labels_again
    assert np.array_equal(h, h_again)


def test_the_kept_view_is_the_prepared_view_and_another_run_prepares_its_own(preparations):
    cfg = validate_run_config(IMK_BASE)
    context = node_context(cfg, 1, 3)
    view = client_view(cfg, 1)
    make = client_class("fmvc-imk")
    first = make(context, cfg, 1, 3, view)._view()
    second = make(context, cfg, 1, 3, view)._view()  # Flower rebuilds the client for every message
    assert len(preparations) == 1 and np.array_equal(first, second)
    np.testing.assert_array_equal(second, imk_client.preprocess_view(view.features, "auto", True))
    other = validate_run_config({**IMK_BASE, "imk.standardise": "none"})
    preparations.clear()
    raw = make(context, other, 1, 3, view)._view()
    assert len(preparations) == 1 and not np.array_equal(raw, first)
