"""Sample-ID alignment before round 1: shuffled, partially overlapping views give exactly the run on
the pre-aligned files; the server receives blinded points only; bad IDs stop the run clearly."""

import csv
import hashlib

import numpy as np
import pytest

from fedmf_app.common.psi import POINT_BYTES, hash_to_point
from fedmf_app.data import DataError
from fedmf_app.federated.handshake import FederationError
from fedmf_app.in_process import InProcessProxy, run_in_process
from fedmf_app.registry import FAMILIES

from support.data import SMALL_RUNS
from support.federation import signed_node_configs

N_COMMON, D = 48, 6
SONMF = {"algorithm": "fedsonmf", "num-server-rounds": 4, "sonmf.rank": 3, "sonmf.local-steps": 3}
#: The keys of a small run that describe synthetic data, not a run on files.
_DATA_KEYS = ("num-samples", "view-dim", "num-clients", "heterogeneity")


def _run_on_files(family):
    """The family's small run (``tests/support/data.py``), on the 48 common samples' files."""
    return {k: v for k, v in SMALL_RUNS[family].items() if k not in _DATA_KEYS}


def _views(seed=0):
    """Three views of N_COMMON common samples plus extras: a block-structured toy data set."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=N_COMMON + 12)
    centres = rng.uniform(0, 3, size=(3, 3, D))
    views = [centres[p][labels] + rng.uniform(0, 0.5, size=(labels.size, D)) for p in range(3)]
    return views, labels


def _write(path, x, y, ids, id_column):
    """``path`` (.csv or .npz) holding features ``x``, labels ``y`` and, unless ``id_column`` is
    empty, the IDs under ``id_column``."""
    if path.suffix == ".npz":
        arrays = {"X": x, "Y": y}
        if id_column:
            arrays[id_column] = ids
        np.savez(path, **arrays)
        return path
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(([id_column] if id_column else []) + [f"f{j}" for j in range(D)] + ["label"])
        for i in range(x.shape[0]):
            writer.writerow(([ids[i]] if id_column else []) + [repr(float(v)) for v in x[i]] + [int(y[i])])
    return path


def _files(tmp_path, ids):
    """Pre-aligned files (the common samples in ID order, no IDs) and each party's own file: its
    rows shuffled, with extra samples (two held by parties 0 and 1 only, the others by one party).

    Party 0: CSV with column ``id``; party 1: ``.npz`` with key ``id``; party 2: CSV with column
    ``patient`` (its node config ``sample-id``)."""
    views, labels = _views()
    order = np.array(sorted(range(N_COMMON), key=ids.__getitem__))  # numbers numerically, text as text
    extras = {0: [48, 49, 50, 51, 52], 1: [48, 49, 53, 54], 2: [55, 56, 57, 58, 59]}
    columns = {0: "id", 1: "id", 2: "patient"}
    suffix = {0: ".csv", 1: ".npz", 2: ".csv"}
    aligned, own, rows = {}, {}, {}
    rng = np.random.default_rng(7)
    for p in range(3):
        x, y = views[p], labels
        aligned[p] = _write(tmp_path / f"aligned{p}{suffix[p]}", x[order], y[order], None, "")
        held = rng.permutation(np.r_[np.arange(N_COMMON), extras[p]])
        rows[p] = held
        own[p] = _write(tmp_path / f"org{p}{suffix[p]}", x[held], y[held], np.asarray(ids)[held], columns[p])
    return aligned, own, rows, order


def _numbers(strategy):
    """Every number of a run but timings and memory."""
    data = strategy.recorder.data
    rounds = [
        {k: v for k, v in r.items() if not (k.endswith("_s") or "_s_" in k or "rss" in k)}
        for r in data["rounds"]
    ]
    final = {k: v for k, v in data["final"].items() if k != "sample_order"}
    return rounds, final


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
def test_shuffled_partial_views_give_exactly_the_pre_aligned_run(tmp_path, family):
    method = _run_on_files(family)
    rng = np.random.default_rng(1)
    ids = [int(i) for i in rng.choice(10**6, size=N_COMMON + 12, replace=False)]
    aligned, own, rows, order = _files(tmp_path, ids)
    cfg = {**method, "num-clients": 3, "num-clusters": 3, "seed": 3}
    reference = run_in_process(cfg, tmp_path / "ref", node_config=lambda p: {"data-file": str(aligned[p])})

    def node(p):
        extra = {"sample-id": "patient"} if p == 2 else {}
        return {"data-file": str(own[p]), "labels-file": str(tmp_path / f"labels{p}.csv"), **extra}

    run = run_in_process({**cfg, "sample-id": "id"}, tmp_path / "psi", node_config=node)
    assert run.recorder.data["status"] == "completed"
    assert run.alignment["num_common"] == N_COMMON and run.alignment["num_ids"] == [53, 52, 53]
    assert _numbers(run) == _numbers(reference)
    # every party maps the clusters to its own IDs and rows, in the same (ID) order
    common = sorted(ids[:N_COMMON])
    for p in range(3):
        with (tmp_path / f"labels{p}.csv").open() as handle:
            table = list(csv.DictReader(handle))
        assert [int(r["id"]) for r in table] == common
        assert [ids[rows[p][int(r["row"])]] for r in table] == common
        assert [int(r["cluster"]) for r in table] == run.recorder.data["final"]["labels"]


class _Recording(InProcessProxy):
    """Keeps every reply the server receives from the client during the alignment."""

    received: list = []

    def get_properties(self, ins, timeout, group_id):
        res = super().get_properties(ins, timeout, group_id)
        if str(ins.config.get("stage", "")).startswith("psi-"):
            _Recording.received.append((ins.config["stage"][4:], dict(res.properties), dict(ins.config)))
        return res


def _on_curve(point):
    p, u = 2**255 - 19, int.from_bytes(point, "little")
    rhs = (u**3 + 486662 * u * u + u) % p
    return u < p and pow(rhs, (p - 1) // 2, p) == 1


def _signed_nodes(tmp_path, own):
    """Node configs of the three parties' own files with long-term keys for signed points."""
    signed = signed_node_configs(tmp_path / "keys", 3)

    def node(p):
        return {"data-file": str(own[p]), **signed[p], **({"sample-id": "patient"} if p == 2 else {})}

    return node


def test_the_server_receives_only_blinded_points_and_signed_ones_with_signed_keys(tmp_path):
    _Recording.received = []
    ids = [f"patient-{i:05d}-x" for i in np.random.default_rng(2).choice(10**5, N_COMMON + 12, replace=False)]
    _, own, _, _ = _files(tmp_path, ids)
    node = _signed_nodes(tmp_path, own)

    cfg = {**SONMF, "num-clients": 3, "sample-id": "id", "secure-aggregation-signed-keys": True}
    run = run_in_process(cfg, tmp_path / "psi", node_config=node, proxy_class=_Recording)
    assert run.recorder.data["status"] == "completed" and run.alignment["num_common"] == N_COMMON
    stages = [s for s, _, _ in _Recording.received]
    assert stages.count("blind") == 3 and stages.count("relay") == 6 and stages.count("keep") == 3
    forbidden = set()
    for i in ids:
        forbidden |= {i.encode(), hash_to_point(i), hashlib.sha256(i.encode()).digest()}
    partial, full = [], []
    for _stage, reply, sent in _Recording.received:
        for key, value in reply.items():
            assert key in ("psi-points", "psi-signature", "psi-kept")
            if isinstance(value, bytes):
                assert not any(f in value for f in forbidden)
            if key == "psi-points":
                assert len(value) % POINT_BYTES == 0
                split = [value[j : j + POINT_BYTES] for j in range(0, len(value), POINT_BYTES)]
                (full if sent.get("psi-hop") == 2 else partial).extend(split)
    assert all(_on_curve(x) for x in partial + full)
    assert len(partial) == 2 * (53 + 52 + 53) and len(set(partial)) == len(partial)
    assert not set(partial) & set(full)  # a partly blinded point matches nothing
    # fully blinded points match across parties: 48 held by all, 2 by parties 0 and 1 only
    assert len(full) == 53 + 52 + 53 and len(full) - len(set(full)) == 2 * N_COMMON + 2


class _Substituting(InProcessProxy):
    """A server that passes one point of its own (an ID's hash) off as partition 0's."""

    def get_properties(self, ins, timeout, group_id):
        if ins.config.get("stage") == "psi-relay" and ins.config["psi-origin"] == 0:
            points = bytes(ins.config["psi-points"])
            ins.config["psi-points"] = hash_to_point("patient-00001-x") + points[POINT_BYTES:]
        return super().get_properties(ins, timeout, group_id)


def test_with_signed_keys_a_client_refuses_points_the_server_changed(tmp_path):
    _, own, _, _ = _files(tmp_path, list(range(N_COMMON + 12)))
    node = _signed_nodes(tmp_path, own)

    cfg = {"sample-id": "id", "secure-aggregation-signed-keys": True}
    _run_expecting(
        tmp_path,
        node,
        r"partition 1: the blinded points relayed as partition 0's .* not signed",
        proxy_class=_Substituting,
        **cfg,
    )


def test_an_unsigned_psi_dictionary_attack_is_refused_by_a_node_requiring_signed_points(tmp_path):
    # unsigned, the server could have a client blind a dictionary of guessed IDs in one message;
    # a node requiring signed PSI refuses the run before blinding anything
    _, own, _, _ = _files(tmp_path, list(range(N_COMMON + 12)))
    signed = _signed_nodes(tmp_path, own)

    def node(p):
        return {**{k: v for k, v in signed(p).items() if k != "signing-key"}, "require-signed-psi": True}

    cfg = {"sample-id": "id", "secure-aggregation-signed-keys": False}
    match = r"refuses this run: its policy \(node config 'require-signed-psi' = true\) needs signed PSI"
    _run_expecting(tmp_path, node, match, **cfg)


def test_a_node_with_a_signing_key_checks_the_points_even_when_the_run_says_unsigned(tmp_path):
    _, own, _, _ = _files(tmp_path, list(range(N_COMMON + 12)))
    node = _signed_nodes(tmp_path, own)
    cfg = {"sample-id": "id", "secure-aggregation-signed-keys": False}
    match = r"partition 1: the blinded points relayed as partition 0's .* not signed"
    _run_expecting(tmp_path, node, match, proxy_class=_Substituting, **cfg)


def _run_expecting(tmp_path, node, match, error=FederationError, proxy_class=InProcessProxy, **cfg):
    with pytest.raises(error, match=match):
        run_in_process(
            {**SONMF, "num-clients": 3, **cfg}, tmp_path / "run", node_config=node, proxy_class=proxy_class
        )
    assert not (tmp_path / "run" / "run").exists()  # stopped before round 1: no run folder


def test_no_common_sample_stops_the_run_before_round_1(tmp_path):
    ids = list(range(100, 100 + N_COMMON + 12))
    _, own, _, _ = _files(tmp_path, ids)
    _write(tmp_path / "other.csv", np.ones((4, D)), np.zeros(4, int), [1, 2, 3, 4], "patient")

    def node(p):
        return {
            "data-file": str(own[p] if p < 2 else tmp_path / "other.csv"),
            "sample-id": ["id", "id", "patient"][p],
        }

    _run_expecting(tmp_path, node, r"no sample ID is held by every party.*partition 2: .*other\.csv")


def test_an_id_column_on_some_nodes_only_stops_the_run_naming_the_others(tmp_path):
    ids = list(range(N_COMMON + 12))
    aligned, own, _, _ = _files(tmp_path, ids)

    def node(p):
        return {"data-file": str(own[p]), "sample-id": "id"} if p == 0 else {"data-file": str(aligned[p])}

    _run_expecting(tmp_path, node, r"partition 1 \(.*aligned1\.npz.*\), partition 2 .* no ID column")


def test_an_id_column_missing_from_a_nodes_file_names_the_file_and_the_key(tmp_path):
    ids = list(range(N_COMMON + 12))
    aligned, own, _, _ = _files(tmp_path, ids)

    def node(p):
        return {"data-file": str(own[p] if p < 2 else aligned[p])}

    _run_expecting(
        tmp_path,
        node,
        r"aligned2\.csv: run config 'sample-id' = 'id': no such column",
        DataError,
        **{"sample-id": "id"},
    )


def test_a_client_that_lost_its_alignment_refuses_to_train(tmp_path):
    from flwr.common import Context, RecordDict

    from fedmf_app.federated.saved_state import ClientStateError, load_state

    cfg = {"sample-id": "id"}
    context = Context(
        run_id=1, node_id=1, node_config={"partition-id": 0}, state=RecordDict(), run_config=cfg
    )
    with pytest.raises(ClientStateError, match="partition 0: .* holds no sample-ID alignment"):
        load_state(context, cfg, "fedsonmf", 1)
    assert load_state(Context(1, 1, {"partition-id": 0}, RecordDict(), {}), {}, "fedsonmf", 1) == {}
