"""The node answers only the protocol: every attack of an active server on a client's answers is
refused by the client (or, for a masked sum out of bounds, by the server), through the real
Strategies and NumPyClients in process."""

import os
import stat

import numpy as np
import pytest
from flwr.common import Context, RecordDict

from fedmf_app.client_app import client_fn
from fedmf_app.deployment.certificates import make_supernode_keys
from fedmf_app.federated.node_errors import NodeError, public_reason
from fedmf_app.federated.protocol import ProtocolError
from fedmf_app.federated.strategy import FederationError
from fedmf_app.in_process import InProcessFederation
from fedmf_app.methods.sonmf.client import FedSONMFClient, LocalWork
from fedmf_app.options import ConfigError
from fedmf_app.registry import validate_run_config

from support.data import IAI_SMALL, SONMF_SMALL, labelled_file
from support.federation import federation


def _real_sonmf(tmp_path, **overrides):
    """A fedsonmf run on three labelled views (n = 90, K = 3, 40-50 features): the sketch start, rank 9."""
    path, _ = labelled_file(tmp_path, dims=(40, 50, 45))
    return {"dataset": path, "num-clients": 3, "num-server-rounds": 3, "seed": 4, **overrides}


def _sketch_request(fed, **facts):
    return {"stage": "sketch", **{f"fact-{k}": v for k, v in {**fed.strategy.run_facts(), **facts}.items()}}


def _handshake(fed):
    for client in fed.clients:
        client.get_properties({"stage": "handshake"})


def test_a_sketch_width_raised_by_the_server_is_refused(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path))
    fed.start()  # the honest start: rank 9, a sketch of 19 columns
    assert fed.strategy.rank == 9
    fresh = federation(tmp_path / "again", _real_sonmf(tmp_path))
    _handshake(fresh)
    # asking the sketch at rank n - 10 (width n: the whole Gram matrix) is refused before anything
    # is computed: the run config's auto rank is at most 3 per cluster
    with pytest.raises(NodeError, match=r"rank = 80: the run config's auto rank is at most 9"):
        fresh.clients[0].get_properties({"stage": "sketch", "fact-clusters": 3, "fact-rank": 80})
    # and a run config that raises the rank itself meets the node's cap
    raised = federation(tmp_path / "raised", _real_sonmf(tmp_path, **{"sonmf.rank": 40}))
    with pytest.raises(FederationError, match=r"above the node's cap 'max-rank' = 9"):
        raised.start()


def test_a_second_sketch_is_refused(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path))
    fed.start()
    with pytest.raises(NodeError, match=r"stage 'sketch' is answered at most 1 time\(s\) per run"):
        fed.clients[1].get_properties(_sketch_request(fed))


def test_a_sketch_in_a_random_start_run_is_refused(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path, **{"sonmf.start": "random"}))
    fed.start()
    with pytest.raises(NodeError, match=r"stage 'sketch' is not part of this run"):
        fed.clients[0].get_properties(_sketch_request(fed))


def test_the_sketch_after_round_one_and_an_undeclared_key_are_refused(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path))
    fed.start()
    fed.round(1)
    with pytest.raises(NodeError, match="comes before round 1"):
        fed.clients[0].get_properties(_sketch_request(fed))
    with pytest.raises(NodeError, match=r"undeclared key\(s\) \['sonmf-sketch'\]"):
        fed.clients[0].get_properties({**_sketch_request(fed), "sonmf-sketch": 90})


def test_the_same_round_is_never_answered_twice_whatever_the_broadcast(tmp_path):
    fed = federation(tmp_path, {**SONMF_SMALL, "num-server-rounds": 4})
    broadcast = fed.start()
    fed.round(1)
    client = fed.clients[0]
    config = {
        "stage": "round",
        "server-round": 1,
        **{f"fact-{k}": v for k, v in fed.strategy.run_facts().items()},
    }
    for request in (broadcast, [broadcast[0] * 0.5]):
        with pytest.raises(NodeError, match="it answered round 1 already"):
            client.fit(request, config)
    with pytest.raises(NodeError, match="the last round it answered is 1"):
        client.fit(broadcast, {**config, "server-round": 3})
    with pytest.raises(NodeError, match=r"states rank = 7, but this run stated 6 before"):
        client.fit(broadcast, {**config, "server-round": 2, "fact-rank": 7})


def _nodes(tmp_path, **extra):
    return {p: {"state-dir": str(tmp_path / f"state-{p}"), **extra} for p in range(3)}


def _round_config(fed, server_round):
    facts = {f"fact-{k}": v for k, v in fed.strategy.run_facts().items()}
    return {"stage": "round", "server-round": server_round, **facts}


def test_a_new_run_cannot_query_a_clients_saved_state_without_the_nodes_consent(tmp_path):
    cfg = {**SONMF_SMALL, "num-server-rounds": 5}
    first = federation(tmp_path, cfg, node_configs=_nodes(tmp_path), run_id=11)
    first.start()
    for r in (1, 2):
        broadcast = first.round(r)  # the broadcast of round 3
    config = _round_config(first, 3)

    def run(run_id, **node):
        fed = federation(
            tmp_path / f"run-{run_id}", cfg, node_configs=_nodes(tmp_path, **node), run_id=run_id
        )
        _handshake(fed)
        return fed.clients[0]

    # a new run finds no state of its own: the saved state is run 11's
    with pytest.raises(NodeError, match="the last round it answered is 0"):
        run(12).fit(broadcast, config)
    # the node's own config lets run 13 continue run 11, from round 3 on
    answer, _, _ = run(13, **{"resume-run-id": "11"}).fit(broadcast, config)
    # a later run that names run 11 again does not get to re-query the state run 13 moved on from
    with pytest.raises(NodeError, match="the last round it answered is 0"):
        run(14, **{"resume-run-id": "11"}).fit([broadcast[0] * 0.5], config)
    # continuing run 13 (the node consents), round 3 is not answered again for another broadcast...
    with pytest.raises(NodeError, match="it answered round 3 already"):
        run(15, **{"resume-run-id": "13"}).fit([broadcast[0] * 0.5], config)
    # ... and for the identical request (the round a resumed server lost) the answer is the same
    again, _, _ = run(16, **{"resume-run-id": "13"}).fit(broadcast, config)
    assert all(np.array_equal(a, b) for a, b in zip(answer, again))


def test_a_deeper_neighbour_list_than_the_node_allows_is_refused(tmp_path):
    deep = {**IAI_SMALL, "iai.rank-depth": IAI_SMALL["num-samples"] - 1, "num-server-rounds": 2}
    fed = federation(tmp_path, deep)
    fed.start()
    with pytest.raises(
        FederationError,
        match=r"lists of depth L = 119, above the node's cap 'max-list-depth' = 100 \(its default\)",
    ):
        fed.round(1)
    allowed = federation(
        tmp_path / "allowed", deep, node_configs={p: {"max-list-depth": 119} for p in range(3)}
    )
    allowed.start()
    allowed.round(1)  # the node's own cap lets it through


def test_signed_keys_without_pinned_fingerprints_are_refused_at_start_up(tmp_path):
    pairs = make_supernode_keys(tmp_path / "keys", 3)
    nodes = {
        p: {"require-signed-keys": True, "signing-key": str(pairs[p][0]), "peer-keys": str(tmp_path / "keys")}
        for p in range(3)
    }
    cfg = {**SONMF_SMALL, "secure-aggregation": True, "secure-aggregation-signed-keys": True}
    with pytest.raises(FederationError, match="pins no peer keys; add node config 'peer-fingerprints'"):
        federation(tmp_path, cfg, node_configs=nodes).start()


def test_a_server_chosen_state_folder_is_refused_and_the_nodes_state_is_private(tmp_path):
    with pytest.raises(ConfigError, match="client-state-dir"):
        validate_run_config({"client-state-dir": str(tmp_path / "server-chosen")})
    fed = federation(tmp_path, {**SONMF_SMALL, "num-server-rounds": 2}, node_configs=_nodes(tmp_path))
    fed.run()
    files = [f for f in (tmp_path / "state-0").rglob("*.npz")]
    assert files
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(os.stat(files[0].parent).st_mode) == 0o700


def test_errors_sent_to_the_server_name_stage_and_cause_never_the_nodes_paths(tmp_path):
    secret = tmp_path / "secret-folder"
    node_config = {
        "partition-id": 0,
        "num-partitions": 3,
        "data-file": str(secret / "missing.csv"),
        "signing-key": str(secret / "own.key"),
        "peer-keys": str(secret / "peers"),
        "peer-fingerprints": str(secret / "pins.txt"),
        "state-dir": str(secret / "state"),
    }
    context = Context(run_id=1, node_id=7, node_config=node_config, state=RecordDict(), run_config={})
    with pytest.raises(NodeError) as caught:
        client_fn(context)
    text = str(caught.value)
    assert text.startswith("SuperNode 7 (partition 0) refused the run: DataError: <path>: no such file")
    assert "secret-folder" not in text and str(tmp_path) not in text
    for key in ("signing-key", "peer-keys", "state-dir", "labels-file"):
        assert key + "=" not in text
    assert public_reason(ValueError(f"{secret}/a.key has fingerprint SHA256:abcDEF12+/=")) == (
        "ValueError: <path> has fingerprint <fingerprint>"
    )


class _Poisoning(FedSONMFClient):
    """A client that uploads ``scale`` times its honest upload, correctly masked, without checking
    its own bound (an attacker)."""

    scale = 1e3

    def local_work(self, *args, **kwargs):
        work = super().local_work(*args, **kwargs)
        return LocalWork(work.upload * self.scale, work.u, work.v, work.state, work.xvt)

    def reply(self, stage, values, request, server_round, bound_context=None):
        return super().reply(stage, values, request, server_round, None)


def _with_client(fed, partition, cls):
    honest = fed.proxies[partition].client
    fed.proxies[partition].client = cls(honest.context, honest.cfg, partition, 3, honest.view)


def test_an_out_of_bound_masked_sum_is_refused_naming_no_partition(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path, **{"secure-aggregation": True}))
    _with_client(fed, 1, _Poisoning)
    fed.start()
    with pytest.raises(FederationError) as caught:
        fed.round(1)
    message = str(caught.value)
    assert "'upload' has norm" in message and "no partition is named" in message
    assert "partition 1" not in message


def test_an_out_of_bound_upload_in_the_clear_names_its_partition(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path))
    _with_client(fed, 2, _Poisoning)
    fed.start()
    with pytest.raises(
        FederationError, match=r"round 1: partition 2 sent an invalid reply: its reply: 'upload' has norm"
    ):
        fed.round(1)


class _Overflowing(FedSONMFClient):
    """An honest client whose own upload breaks its bound (it checks, and refuses to send it)."""

    def local_work(self, *args, **kwargs):
        work = super().local_work(*args, **kwargs)
        return LocalWork(work.upload * 1e3, work.u, work.v, work.state, work.xvt)


def test_a_client_whose_own_upload_breaks_its_bound_is_the_only_one_named(tmp_path):
    fed = federation(tmp_path, _real_sonmf(tmp_path, **{"secure-aggregation": True}))
    _with_client(fed, 0, _Overflowing)
    fed.start()
    with pytest.raises(FederationError) as caught:
        fed.round(1)
    message = str(caught.value)
    assert "no valid reply from partition(s) [0]" in message
    assert "partition 0's own upload: 'upload' has norm" in message


def test_honest_uploads_stay_within_their_bounds_with_room(tmp_path):
    """The bounds hold for honest runs of every bounded method (their checks never fire), and the
    sum of m uploads stays below m times the bound."""
    for algorithm in ("fedsonmf", "fedmgs", "fedmavg"):
        cfg = _real_sonmf(tmp_path, algorithm=algorithm, **{"num-server-rounds": 6})
        strategy = InProcessFederation(cfg, tmp_path / algorithm).run()
        assert strategy.recorder.data["status"] == "completed"
        assert strategy.upload_bounds.upload > 0


def test_the_protocol_check_refuses_what_it_does_not_declare():
    from fedmf_app.federated.protocol import Sizes, check_reply
    from fedmf_app.methods.imk.protocol import PROTOCOL

    cfg = validate_run_config({"algorithm": "fmvc-imk", "num-clusters": 3})
    sizes = Sizes(cfg, 10, 4, 10, {"clusters": 3})
    stage = PROTOCOL.stage("round")
    good = {"residual": 1.0, "ortho": 0.0, "h_squared_norm": 3.0, "alpha": 0.5, "kernel_s": 0.1}
    check_reply(stage, sizes, [np.zeros((10, 3))], good)
    with pytest.raises(ProtocolError, match=r"undeclared scalar\(s\) \['features'\]"):
        check_reply(stage, sizes, [np.zeros((10, 3))], {**good, "features": 1.0})
    with pytest.raises(ProtocolError, match=r"array 'H\^\(m\)' has shape \(10, 4\), declared \(10, 3\)"):
        check_reply(stage, sizes, [np.zeros((10, 4))], good)
    with pytest.raises(ProtocolError, match="the reply holds 2 array"):
        check_reply(stage, sizes, [np.zeros((10, 3)), np.zeros(3)], good)


def test_privacy_md_is_generated_from_the_declarations():
    from pathlib import Path

    from fedmf_app.registry import privacy_tables

    page = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text()
    assert privacy_tables(page) == page, "run python -m fedmf_app.registry --update-privacy docs/privacy.md"


def test_every_family_declares_its_protocol_once_and_both_sides_use_it():
    from fedmf_app.registry import ALGORITHM_NAMES, client_class, family_of, protocol_of, strategy_class

    for algorithm in ALGORITHM_NAMES:
        protocol = protocol_of(family_of(algorithm).name)
        assert client_class(algorithm).protocol is protocol is strategy_class(algorithm).protocol
        names = [stage.name for stage in protocol.stages]
        assert len(names) == len(set(names)) and names[0] == "handshake" and names[-1] == "evaluate"
        assert all(stage.rounds is None or stage.rounds[0] >= 1 for stage in protocol.stages)
