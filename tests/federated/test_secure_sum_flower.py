"""The one secure-sum path through the real Strategies and NumPyClients (no Ray): what the server
receives, the key-substitution attack, replays, a client that drops out, and the same numbers as
without it."""

import numpy as np
import pytest
from flwr.common import FitIns, GetPropertiesIns, ndarrays_to_parameters, parameters_to_ndarrays
from scipy import stats

from fedmf_app.common.graphs import knn_similarity
from fedmf_app.common.key_signing import (
    KeyFileError,
    fingerprint,
    key_statement,
    load_fingerprints,
    load_private_key,
    load_public_key,
    sign,
)
from fedmf_app.common.secure_sum_math import (
    CHECK_WORDS,
    MaskIntegrityError,
    add_pairwise_masks,
    append_check_words,
    decode_fixed,
    derive_pair_key,
    generate_private_key,
    matrix_values,
    message_key,
    public_key_bytes,
    split_check_words,
    sum_words,
    upper_values,
    word_stream,
)
from fedmf_app.deployment.certificates import make_supernode_keys
from fedmf_app.federated.node_errors import NodeError
from fedmf_app.federated.secure_sum_flower import SecureAggregationError, masked_upload
from fedmf_app.federated.strategy import FederationError, ViewFederationStrategy
from fedmf_app.in_process import InProcessProxy
from fedmf_app.methods.imk.client_updates import preprocess_view, view_anchor_graph
from fedmf_app.methods.imk.model import anchor_indices
from fedmf_app.methods.imk.params import imk_options
from fedmf_app.methods.imk.strategy import FMVCIMKStrategy
from fedmf_app.registry import client_class, validate_run_config

from support.data import IMK_BASE, SMALL_RUNS, client_view
from support.federation import federation, node_context, run_federation, signed_node_configs

SONMF = {
    "num-clients": 3,
    "num-samples": 40,
    "num-server-rounds": 3,
    "heterogeneity": 0.6,
    "sonmf.local-steps": 3,
    "seed": 5,
    "connect-timeout-s": 0.2,
}

#: How a sum whose masks did not cancel is refused.
_NOT_CANCELLED = r"the sum is refused: the check words sum to .* expected 3 each: the masks did not cancel"


def _spy_uploads(monkeypatch):
    """What the server receives, per round and partition."""
    seen = {}
    original = ViewFederationStrategy._decode

    def spy(self, server_round, results, failures):
        replies = original(self, server_round, results, failures)
        seen[server_round] = [[a.copy() for a in r.arrays] for r in replies]
        return replies

    monkeypatch.setattr(ViewFederationStrategy, "_decode", spy)
    return seen


def _signed_node_configs(tmp_path, m):
    return signed_node_configs(tmp_path / "keys", m)


@pytest.mark.parametrize("algorithm", ["fedsonmf", "fedmavg", "fedmgs", "fedvra-u"])
def test_the_server_cannot_tell_the_sonmf_uploads_apart_and_only_their_sum_decodes(
    tmp_path, monkeypatch, algorithm
):
    seen = _spy_uploads(monkeypatch)
    plain_cfg = validate_run_config({**SONMF, "algorithm": algorithm})
    plain, _ = run_federation(tmp_path / "plain", plain_cfg)
    plain_uploads = seen.pop(1)
    cfg = validate_run_config({**SONMF, "algorithm": algorithm, "secure-aggregation": True})
    secure, _ = run_federation(tmp_path / "secure", cfg, node_configs=_signed_node_configs(tmp_path, 3))
    assert secure.recorder.data["status"] == "completed"
    # round 1 starts from the same V^1 and U_p^1: the clients' true values are the plain uploads
    truth = [np.concatenate([*(a.ravel() for a in arrays)]) for arrays in plain_uploads]
    r, n = plain.v.shape
    uploads = [arrays for arrays in seen[1]]
    assert all(
        len(a) == 1 and a[0].dtype == np.uint64 and a[0].shape == (2 * r * n + 2 + CHECK_WORDS,)
        for a in uploads
    )
    words = [a[0] for a in uploads]
    top = [(w >> np.uint64(56)).astype(np.int64) for w in words]
    assert stats.ks_2samp(top[0], top[1]).pvalue > 1e-4  # indistinguishable by their bytes
    for w, x in zip(words, truth):
        assert np.median(np.abs(decode_fixed(w, 36)[: x.size] - x)) > 1e6  # one alone: garbage
    total = decode_fixed(sum_words(words), 36)
    np.testing.assert_allclose(total[: 2 * r * n], np.sum(truth, axis=0), rtol=0, atol=3 * 2.0**-36)
    # the secure run's numbers are the plain run's up to the fixed point
    for key in ("residual", "objective"):
        np.testing.assert_allclose(
            [x[key] for x in secure.recorder.data["rounds"]],
            [x[key] for x in plain.recorder.data["rounds"]],
            rtol=1e-8,
        )
    assert secure.recorder.data["final"]["labels"] == plain.recorder.data["final"]["labels"]


def test_switch_off_leaves_the_plain_messages(tmp_path, monkeypatch):
    seen = _spy_uploads(monkeypatch)
    cfg = validate_run_config(SONMF)
    assert cfg["secure-aggregation"] is False
    run_federation(tmp_path, cfg)
    assert all(a.dtype == np.float64 for arrays in seen[1] for a in arrays)


def _imk_federation(tmp_path, cfg, proxy_for=None, node_configs=None):
    """The strategy, its client manager and the clients (partition order) of an FMVC-IMK run."""
    fed = federation(tmp_path, cfg, node_configs=node_configs, proxy_class=proxy_for or {})
    return fed.strategy, fed.server.client_manager(), fed.clients


def _graph(cfg, p):
    """Partition ``p``'s graph as the dense values of the secure sum."""
    x = preprocess_view(client_view(cfg, p).features, cfg["imk.standardise"], imk_options(cfg).unit_norm)
    if cfg["imk.graph"] == "knn":
        return upper_values(knn_similarity(x, cfg["imk.neighbours"]))
    anchors = anchor_indices(cfg["seed"], x.shape[0], cfg["imk.anchors"])
    return matrix_values(view_anchor_graph(x, anchors, cfg["imk.neighbours"]))


class _RelayProxy(InProcessProxy):
    """A server that changes the peers' keys it relays to this client (:meth:`relay`): they ride with
    the first request after the handshake, whatever its message."""

    def relay(self, config: dict) -> None:
        """Change the rider in place."""

    def _changed(self, config):
        config = dict(config)
        if "secagg-context" in config:
            self.relay(config)
        return config

    def get_properties(self, ins, timeout, group_id):
        return super().get_properties(GetPropertiesIns(config=self._changed(ins.config)), timeout, group_id)

    def fit(self, ins, timeout, group_id):
        return super().fit(FitIns(ins.parameters, self._changed(ins.config)), timeout, group_id)


class _SubstitutingProxy(_RelayProxy):
    """A server that relays its own key-agreement keys to this client in place of the peers'."""

    attacker = {j: generate_private_key() for j in (1, 2)}
    signatures: dict = {}

    def relay(self, config):
        for j, key in self.attacker.items():
            config[f"secagg-public-key-{j}"] = public_key_bytes(key)
            if j in self.signatures:
                config[f"secagg-signature-{j}"] = self.signatures[j]
        _SubstitutingProxy.relayed = config


@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_key_substitution_recovers_a_graph_under_unsigned_keys(tmp_path, monkeypatch, graph):
    """The attack that works without signed keys: the server relays its own keys to partition 0 in
    place of the peers' and removes partition 0's masks from its graph upload."""
    cfg = validate_run_config({**IMK_BASE, "num-server-rounds": 1, "imk.graph": graph})
    assert cfg["secure-aggregation"] is False  # fmvc-imk's graph is masked in every run
    captured = {}
    original = FMVCIMKStrategy._fit_stage

    def capture(self, proxy, config):
        arrays, metrics = original(self, proxy, config)
        if proxy.cid == "node-0":
            captured["upload"] = arrays[0].copy()
        return arrays, metrics

    monkeypatch.setattr(FMVCIMKStrategy, "_fit_stage", capture)
    strategy, manager, clients = _imk_federation(tmp_path, cfg, {0: _SubstitutingProxy})
    with pytest.raises(FederationError, match="masked graph: the sum is refused"):
        strategy.initialize_parameters(client_manager=manager)  # the check words expose it, too late
    relayed = _SubstitutingProxy.relayed
    recovered = captured["upload"].copy()
    salt = b"fedmf-secagg|%d|" % clients[0].context.run_id + bytes(relayed["secagg-context"])
    for key in _SubstitutingProxy.attacker.values():  # partition 0 added its higher peers' streams
        pair = derive_pair_key(key, bytes(relayed["secagg-public-key-0"]), salt)
        recovered -= word_stream(message_key(pair, 0, "graph"), recovered.size)
    np.testing.assert_allclose(decode_fixed(recovered[:-CHECK_WORDS], 36), _graph(cfg, 0), atol=2.0**-36)


def test_key_substitution_also_works_on_later_sums(tmp_path):
    cfg = validate_run_config({**IMK_BASE, "num-server-rounds": 1, "secure-aggregation": True})
    strategy, manager, clients = _imk_federation(tmp_path, cfg, {0: _SubstitutingProxy})
    with pytest.raises(FederationError, match="masked graph: the sum is refused"):
        strategy.initialize_parameters(client_manager=manager)  # the first sum fails
    relayed = _SubstitutingProxy.relayed
    victim = clients[0]
    upload = masked_upload(victim.context, cfg, 0, [np.arange(4.0)], 7, "probe")
    recovered = upload.copy()
    salt = b"fedmf-secagg|%d|" % victim.context.run_id + bytes(relayed["secagg-context"])
    for key in _SubstitutingProxy.attacker.values():
        pair = derive_pair_key(key, bytes(relayed["secagg-public-key-0"]), salt)
        recovered -= word_stream(message_key(pair, 7, "probe"), upload.size)
    np.testing.assert_allclose(decode_fixed(recovered[:4], 36), np.arange(4.0), atol=2.0**-36)


@pytest.mark.parametrize("run_says_signed", [True, False], ids=["signed-run", "downgraded-run"])
def test_signed_keys_stop_the_key_substitution_before_round_one_naming_the_node(tmp_path, run_says_signed):
    # a node holding a signing key signs and verifies even when the run config says unsigned
    cfg = validate_run_config(
        {**IMK_BASE, "secure-aggregation": True, "secure-aggregation-signed-keys": run_says_signed}
    )
    nodes = _signed_node_configs(tmp_path, 3)
    strategy, manager, _ = _imk_federation(tmp_path, cfg, {0: _SubstitutingProxy}, nodes)
    with pytest.raises(FederationError) as err:
        strategy.initialize_parameters(client_manager=manager)
    message = str(err.value)
    assert "SuperNode node-0 failed the setup" in message  # the request the peers' keys rode with
    assert "(partition 0) refused stage 'peers'" in message
    assert "relayed for partition 1 is not signed by partition 1's long-term key" in message
    assert not (tmp_path / "run").exists()  # before round 1: no run folder


@pytest.mark.parametrize(
    "earlier_run_id, match",
    [
        # a key signed for another run: refused at the key agreement
        (99, "partition 0.*relayed for partition 1 is not signed"),
        # a key from a run that reused this run id: its signature is valid and the key agreement
        # passes, but its pair masks do not cancel, and the first sum's check words show it
        (1, f"fmvc-imk set-up, masked graph: {_NOT_CANCELLED}"),
    ],
    ids=["other-run-id", "reused-run-id"],
)
def test_a_replayed_key_is_refused(tmp_path, earlier_run_id, match):
    cfg = validate_run_config(
        {**IMK_BASE, "secure-aggregation": True, "secure-aggregation-signed-keys": True}
    )
    nodes = _signed_node_configs(tmp_path, 3)
    # an earlier run: record partition 1's signed key
    earlier = client_class("fmvc-imk")(node_context(cfg, 1, 3, nodes[1]), cfg, 1, 3, client_view(cfg, 1))
    earlier.context.run_id = earlier_run_id
    old = earlier.get_properties({"stage": "handshake"})

    class Replaying(_RelayProxy):
        """This run's server relays the earlier run's key of partition 1, with its valid signature."""

        def relay(self, config):
            config["secagg-public-key-1"] = old["secagg-public-key"]
            config["secagg-signature-1"] = old["secagg-signature"]

    with pytest.raises(FederationError, match=match):
        run_federation(tmp_path, cfg, node_configs=nodes, proxy_class={0: Replaying})


@pytest.mark.parametrize("family", sorted(SMALL_RUNS))
def test_the_key_agreement_takes_no_message_of_its_own(tmp_path, family):
    """Each client's key travels in its handshake reply and the peers' keys with the first request
    after the handshake (every client's, whatever its stage), never in a message of their own."""
    cfg = validate_run_config({**SMALL_RUNS[family], "num-server-rounds": 3, "secure-aggregation": True})
    sent: list[tuple[str, str, bool]] = []  # (client, stage, carries the peers' keys)

    class Watching(_RelayProxy):
        def relay(self, config):
            pass

        def _changed(self, config):
            sent.append((self.cid, str(config["stage"]), "secagg-context" in config))
            return super()._changed(config)

        def evaluate(self, ins, timeout, group_id):
            sent.append((self.cid, str(ins.config["stage"]), "secagg-context" in ins.config))
            return super().evaluate(ins, timeout, group_id)

    strategy, _ = run_federation(tmp_path, cfg, proxy_class={p: Watching for p in range(3)})
    assert strategy.recorder.data["status"] == "completed"
    for cid in {c for c, _, _ in sent}:
        stages = [(stage, rides) for c, stage, rides in sent if c == cid]
        assert stages[0] == ("handshake", False)
        assert stages[1][1] and not any(rides for _, rides in stages[2:])  # the first request after it
        assert {"keys", "peers"}.isdisjoint(stage for stage, _ in stages)
    replies = strategy.client_info
    assert all(len(bytes(info["secagg-public-key"])) == 32 for info in replies)
    assert "secagg-public-key" not in strategy.recorder.data["clients"][0]  # not written to result.json


def test_a_client_draws_one_key_per_run_and_masks_each_message_once(tmp_path):
    cfg = validate_run_config({**SONMF, "secure-aggregation": True})
    strategy, _ = run_federation(tmp_path, cfg)
    client = client_class("fedsonmf")(node_context(cfg, 0, 3), cfg, 0, 3, client_view(cfg, 0))
    first = client.get_properties({"stage": "handshake"})  # the key rides in the handshake reply
    other = [public_key_bytes(generate_private_key()) for _ in range(2)]
    peers = {
        "secagg-context": b"c",
        "secagg-public-key-0": first["secagg-public-key"],
        "secagg-public-key-1": other[0],
        "secagg-public-key-2": other[1],
    }
    with pytest.raises(NodeError, match="'peers' travels only inside another request"):
        client.get_properties({"stage": "peers", **peers})
    # the peers' keys ride with the next request (here the handshake after an alignment)
    handshake = {"stage": "handshake", **peers}
    with pytest.raises(NodeError, match="not the key it sent"):
        client.get_properties({**handshake, "secagg-public-key-0": other[0]})
    with pytest.raises(NodeError, match="the same key-agreement key"):
        client.get_properties({**handshake, "secagg-public-key-2": other[0]})
    assert client.get_properties(handshake) == first  # one key per run: the same key again
    with pytest.raises(NodeError, match=r"stage 'peers' is answered at most 1 time\(s\) per run"):
        client.get_properties(handshake)
    with pytest.raises(NodeError, match=r"stage 'handshake' is answered at most 2 time\(s\) per run"):
        client.get_properties({"stage": "handshake"})
    masked_upload(client.context, cfg, 0, [np.ones(3)], 1, "upload")
    with pytest.raises(SecureAggregationError, match="a mask is used once"):
        masked_upload(client.context, cfg, 0, [np.zeros(3)], 1, "upload")


def test_signed_keys_need_the_node_config_keys_naming_them(tmp_path):
    cfg = validate_run_config({**SONMF, "secure-aggregation": True, "secure-aggregation-signed-keys": True})
    with pytest.raises(FederationError, match="needs node config 'signing-key'"):
        run_federation(tmp_path, cfg)


def test_a_value_beyond_the_overflow_bound_fails_the_round_naming_the_partition(tmp_path):
    cfg = validate_run_config({**SONMF, "secure-aggregation": True, "secure-aggregation-frac-bits": 56})
    # the client's refusal reaches the server as a failed reply, as through Flower
    with pytest.raises(FederationError, match=r"partition \d, round 1 \(upload\).*overflow bound"):
        run_federation(tmp_path, cfg)


@pytest.mark.parametrize(
    "missing", [{}, {"missing-rate": 0.5, "imk.missing-graph": "observed"}], ids=["complete", "observed"]
)
@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_imk_with_secure_aggregation_matches_the_plain_run(tmp_path, monkeypatch, graph, missing):
    seen = _spy_uploads(monkeypatch)
    runs = {}
    for secure in (False, True):
        cfg = validate_run_config({**IMK_BASE, "secure-aggregation": secure, "imk.graph": graph, **missing})
        strategy = federation(tmp_path / str(secure), cfg).run()
        runs[secure] = (strategy, [seen[s] for s in sorted(seen)])
        seen.clear()
    plain, secure = runs[False][0], runs[True][0]
    assert all(a[0].dtype == np.uint64 and len(a) == 1 for r in runs[True][1] for a in r)
    for key in ("objective", "graph_term"):
        np.testing.assert_allclose(
            [r[key] for r in secure.recorder.data["rounds"]],
            [r[key] for r in plain.recorder.data["rounds"]],
            rtol=1e-9,
        )
    # the consensus gap comes from sums (cancellation): agreement to the fixed point's scale
    np.testing.assert_allclose(
        [r["consensus"] for r in secure.recorder.data["rounds"]],
        [r["consensus"] for r in plain.recorder.data["rounds"]],
        rtol=1e-3,
    )
    assert np.array_equal(secure.final_labels(), plain.final_labels())


def test_imks_setup_is_answered_once_and_without_keys_refused(tmp_path):
    cfg = validate_run_config({**IMK_BASE, "num-server-rounds": 1})
    strategy, manager, clients = _imk_federation(tmp_path, cfg)
    strategy.initialize_parameters(client_manager=manager)
    assert strategy.key_agreement["key_agreement_bytes_per_client"] > 0  # the run's one key agreement
    with pytest.raises(NodeError, match=r"stage 'setup' is answered at most 1 time\(s\) per run"):
        clients[0].fit([], {"stage": "setup", "fact-clusters": 3})
    fresh = client_class("fmvc-imk")(node_context(cfg, 0, 3), cfg, 0, 3, client_view(cfg, 0))
    with pytest.raises(NodeError, match="has no secure-aggregation keys"):
        fresh.fit([], {"stage": "setup", "fact-clusters": 3})


def test_a_client_that_drops_out_of_the_graph_sum_fails_the_run_cleanly(tmp_path, monkeypatch):
    """A partial sum is noise: with one upload missing the check words refuse it, naming the sum."""
    cfg = validate_run_config({**IMK_BASE, "num-server-rounds": 1})
    original = FMVCIMKStrategy._parallel

    def lose_one(self, call):
        return original(self, call)[:-1]

    monkeypatch.setattr(FMVCIMKStrategy, "_parallel", lose_one)
    with pytest.raises(
        FederationError, match=r"fmvc-imk set-up, masked graph: the sum is refused: .* expected 2"
    ):
        run_federation(tmp_path, cfg)
    assert not (tmp_path / "run").exists()  # before round 1: no run folder


def test_iai_sends_the_anchor_distances_masked_and_keeps_its_numbers(tmp_path, monkeypatch):
    from support.data import IAI_SMALL as SMALL

    seen = _spy_uploads(monkeypatch)
    finals = {}
    for secure in (False, True):
        cfg = validate_run_config({**SMALL, "out-dir": str(tmp_path), "secure-aggregation": secure})
        strategy, _ = run_federation(tmp_path / str(secure), cfg)
        finals[secure] = strategy.recorder.data
        if secure:
            n, r = 120, SMALL["iai.anchors"]  # D^(m): squared distances to the r shared anchors
            for s in range(2, cfg["num-server-rounds"] + 1):
                assert all(
                    a[0].dtype == np.uint64 and a[0].shape == (n * r + 3 + CHECK_WORDS,) for a in seen[s]
                )
    assert finals[True]["final"]["labels"] == finals[False]["final"]["labels"]
    for got, want in zip(finals[True]["rounds"][1:], finals[False]["rounds"][1:]):
        assert got["label_change"] == want["label_change"]
        # rtol 1e-6, was 1e-9 with the prototype distances: the masked sum rounds every D^(m) entry
        # to 2^-36, and the landmark MDS behind P (division by the anchors' small eigenvalues)
        # amplifies that rounding to ~1e-8 relative in the next round's clustering loss
        np.testing.assert_allclose(got["loss_clustering"], want["loss_clustering"], rtol=1e-6)


# ------------------------------------------------- integrity of every masked sum (check words)


def _fails_naming(tmp_path, cfg, proxies, stage, node_configs=None):
    with pytest.raises(FederationError, match=rf"{stage}: {_NOT_CANCELLED}") as err:
        run_federation(tmp_path, validate_run_config(cfg), node_configs=node_configs, proxy_class=proxies)
    assert "frac-bits" not in str(err.value)  # an honest client is never blamed


def test_a_client_sending_random_words_fails_the_round_naming_the_sum(tmp_path):
    class RandomWords(InProcessProxy):
        def fit(self, ins, timeout, group_id):
            res = super().fit(ins, timeout, group_id)
            if int(ins.config["server-round"]) == 2:
                (words,) = parameters_to_ndarrays(res.parameters)
                noise = np.random.default_rng(0).integers(0, 2**63, words.size, dtype=np.uint64)
                res.parameters = ndarrays_to_parameters([noise])
            return res

    cfg = {**SONMF, "secure-aggregation": True}
    _fails_naming(tmp_path, cfg, {1: RandomWords}, r"secure aggregation, round 2, masked 'upload'")


def test_a_different_key_agreement_context_for_one_client_fails_round_one(tmp_path):
    class OtherContext(_RelayProxy):
        def relay(self, config):
            config["secagg-context"] = bytes(16)

    cfg = {**SONMF, "secure-aggregation": True}
    _fails_naming(tmp_path, cfg, {2: OtherContext}, r"secure aggregation, round 1, masked 'upload'")


def test_check_words_refuse_a_sum_whose_masks_did_not_cancel():
    keys = {(0, 1): b"a" * 32, (0, 2): b"b" * 32, (1, 2): b"c" * 32}

    def upload(me, pairs):
        words = append_check_words(np.arange(5, dtype=np.uint64))
        mine = {j: pairs[tuple(sorted((me, j)))] for j in range(3) if j != me}
        return add_pairwise_masks(words, me, mine)

    total = sum_words([upload(p, keys) for p in range(3)])
    np.testing.assert_array_equal(split_check_words(total, 3), 3 * np.arange(5))
    replayed = {**keys, (0, 1): b"z" * 32}
    wrong = sum_words([upload(0, replayed), upload(1, keys), upload(2, keys)])
    with pytest.raises(MaskIntegrityError, match="masks did not cancel"):
        split_check_words(wrong, 3)
    with pytest.raises(MaskIntegrityError, match="masks did not cancel"):  # a client dropped out
        split_check_words(sum_words([upload(p, keys) for p in range(2)]), 2)


# --------------------------------------- no sum over fewer than two contributors (missing views)
@pytest.mark.parametrize(
    "cfg",
    [
        {**IMK_BASE, "imk.missing-graph": "observed"},  # the default masked graph sum, no secagg
        {**IMK_BASE, "secure-aggregation": True},
        {**SONMF, "secure-aggregation": True, "missing-fill": "zeros"},
        {**SONMF, "secure-aggregation": True},  # the mean fill: exposed up to one offset
    ],
    ids=["imk-observed-graph", "imk-secagg", "sonmf-zeros", "sonmf-mean"],
)
def test_single_view_rows_are_never_released_by_a_masked_sum(tmp_path, cfg):
    # 3 views, 2 dropped per selected sample: those samples are seen by one view only, and the
    # public mask tells the server which; every client refuses before answering anything
    cfg = {**cfg, "missing-rate": 0.5, "missing-views-dropped": 2}
    with pytest.raises(FederationError, match=r"refuses this run: .* samples are observed by one view only"):
        run_federation(tmp_path, validate_run_config(cfg))
    # with two views left per sample the same run goes ahead
    ok = {**cfg, "missing-views-dropped": 1, "num-server-rounds": 1}
    assert run_federation(tmp_path / "ok", validate_run_config(ok))[0].recorder.data["status"] == "completed"


# ------------------------------------------ keys pinned by fingerprint, not trusted from the coordinator
def test_coordinator_supplied_keys_are_refused_against_the_pinned_fingerprints(tmp_path):
    """The coordinator, who also runs the server, hands partition 0 a peer-keys folder in which
    partition 1's long-term key is its own, and signs a substituted X25519 key with it: the
    signature checks out against that folder, but not against the fingerprint partition 0 agreed
    with partition 1 out of band."""
    real = make_supernode_keys(tmp_path / "keys", 3)
    ((fake_key, fake_pub),) = make_supernode_keys(tmp_path / "coordinator-own", 1)
    handed = tmp_path / "handed-out"
    handed.mkdir()
    for j, (_, public) in enumerate(real):
        (handed / public.name).write_bytes((fake_pub if j == 1 else public).read_bytes())
    pins = tmp_path / "pins.txt"
    pins.write_text("".join(f"{j} {fingerprint(load_public_key(pub))}\n" for j, (_, pub) in enumerate(real)))
    cfg = validate_run_config(
        {**IMK_BASE, "secure-aggregation": True, "secure-aggregation-signed-keys": True}
    )
    attacker = generate_private_key()

    class Coordinator(_RelayProxy):
        def relay(self, config):
            public = public_key_bytes(attacker)
            config["secagg-public-key-1"] = public
            config["secagg-signature-1"] = sign(load_private_key(fake_key), key_statement(1, 1, 3, public))

    def nodes(pinned):
        own = {
            p: {
                "signing-key": str(real[p][0]),
                "peer-keys": str(tmp_path / "keys"),
                "peer-fingerprints": str(pins),
            }
            for p in range(3)
        }
        own[0] = {"signing-key": str(real[0][0]), "peer-keys": str(handed)}
        if pinned:
            own[0]["peer-fingerprints"] = str(pins)
        return own

    # without pins partition 0 would accept the coordinator's key: it refuses to take part at all
    strategy, manager, _ = _imk_federation(tmp_path / "unpinned", cfg, {0: Coordinator}, nodes(False))
    with pytest.raises(FederationError, match="partition 0.*pins no peer keys"):
        strategy.initialize_parameters(client_manager=manager)
    strategy, manager, _ = _imk_federation(tmp_path / "pinned", cfg, {0: Coordinator}, nodes(True))
    with pytest.raises(FederationError) as err:
        strategy.initialize_parameters(client_manager=manager)
    message = str(err.value)  # the server learns the cause, not the node's paths or pinned keys
    assert "partition 0: node config 'peer-keys'" in message
    assert (
        "<path> has fingerprint <fingerprint>" in message and "pins <fingerprint> for partition 1" in message
    )
    assert str(tmp_path) not in message and fingerprint(load_public_key(real[1][1])) not in message


def test_fingerprints_are_ssh_style_and_pin_files_are_checked(tmp_path):
    (_, a), (_, b) = make_supernode_keys(tmp_path, 2)
    fa, fb = fingerprint(load_public_key(a)), fingerprint(load_public_key(b))
    assert fa.startswith("SHA256:") and len(fa) == 7 + 43 and fa != fb
    (tmp_path / "pins").write_text(f"# peers\n0 {fa}\n1 {fb}  # organisation B\n")
    assert load_fingerprints(tmp_path / "pins") == {0: fa, 1: fb}
    (tmp_path / "bad").write_text("0 md5:abc\n")
    with pytest.raises(KeyFileError, match="bad, line 1"):
        load_fingerprints(tmp_path / "bad")
