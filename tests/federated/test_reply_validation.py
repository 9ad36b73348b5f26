"""Every reply is checked per partition before it is used: a client (or a server in the middle)
sending NaN, 1e300, a wrong shape, a wrong dtype or an out-of-range index stops the run naming the
partition, the round and the array; ``result.json`` says failed and the checkpoint keeps the last
good round (driven in process, no Ray)."""

import json

import numpy as np
import pytest
from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

from fedmf_app.federated.checkpoint import load_checkpoint
from fedmf_app.federated.replies import ReplyError, check_arrays, check_finite_state
from fedmf_app.federated.strategy import FederationError
from fedmf_app.in_process import InProcessProxy, run_in_process
from fedmf_app.methods.sonmf.strategy import FedSONMFStrategy

from support.data import IAI_SMALL, IMK_BASE, SONMF_SMALL

SONMF = {**SONMF_SMALL, "num-server-rounds": 4}


def _tampering(alter, in_round=2):
    """A proxy whose client's fit reply in ``in_round`` goes through ``alter(arrays)``."""

    class Tampering(InProcessProxy):
        def fit(self, ins, timeout, group_id):
            res = super().fit(ins, timeout, group_id)
            if int(ins.config.get("server-round", 0)) == in_round:
                res.parameters = ndarrays_to_parameters(alter(parameters_to_ndarrays(res.parameters)))
            return res

    return {1: Tampering}


def _first_set(value):
    def alter(arrays):
        arrays[0] = arrays[0].copy()
        arrays[0].flat[0] = value
        return arrays

    return alter


def _run_fails(tmp_path, cfg, proxies, match):
    with pytest.raises(FederationError, match=match):
        run_in_process(cfg, tmp_path, proxy_class=proxies)
    run_dir = tmp_path / "run"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and result["error"] is not None
    return result, run_dir


@pytest.mark.parametrize(
    "value, what", [(np.nan, "non-finite"), (np.inf, "non-finite"), (1e300, "magnitude above")]
)
def test_a_nan_or_huge_reply_stops_the_run_naming_partition_round_and_array(tmp_path, value, what):
    cfg = {**SONMF, "sonmf.stop-ratio": 0.5}  # NaN must not count as convergence either
    result, run_dir = _run_fails(
        tmp_path, cfg, _tampering(_first_set(value)), rf"round 2: partition 1 .*array 0 \(upload\).*{what}"
    )
    assert [r["round"] for r in result["rounds"]] == [1]
    assert load_checkpoint(run_dir, FedSONMFStrategy.checkpoint_types)["round"] == 1  # the last good round
    assert "final" not in result or result["final"] is None


def test_a_wrong_shape_reply_stops_the_run_naming_the_array(tmp_path):
    _run_fails(
        tmp_path,
        SONMF,
        _tampering(lambda arrays: [arrays[0][:, :-1], *arrays[1:]]),
        r"round 2: partition 1 .*array 'upload' has shape \(\d+, 39\), declared \(\d+, 40\) \(r x n\)",
    )


def test_a_missing_or_extra_array_stops_the_run(tmp_path):
    _run_fails(
        tmp_path,
        SONMF,
        _tampering(lambda arrays: arrays + arrays),
        r"partition 1 .*the reply holds 4 array\(s\), declared 2 \(upload, gradient\)",
    )


def test_a_masked_upload_of_the_wrong_length_or_dtype_stops_the_run(tmp_path):
    cfg = {**SONMF, "secure-aggregation": True}
    _run_fails(
        tmp_path,
        cfg,
        _tampering(lambda arrays: [arrays[0].astype(np.float64)]),
        r"round 2: partition 1 .*the masked sum has dtype float64 and shape \(\d+,\), declared uint64",
    )


def test_fmvc_imk_wrong_shape_of_h_stops_the_run(tmp_path):
    _run_fails(
        tmp_path,
        {**IMK_BASE, "num-server-rounds": 3},
        _tampering(lambda arrays: [arrays[0].T.copy()]),
        r"round 2: partition 1 .*array 'H\^\(m\)' has shape",
    )


@pytest.mark.parametrize(
    "options, array",
    [
        ({}, "code neighbour lists"),  # the defaults upload rank lists of the imputed codes
        ({"iai.graph-update": "fused", "iai.pseudo-labels": "anchor-kmeans"}, "anchor indices"),
    ],
)
def test_fmvc_iai_out_of_range_index_stops_the_run(tmp_path, options, array):
    def alter(arrays):
        arrays[1] = arrays[1].copy()
        arrays[1][0, 0] = 10**6
        return arrays

    _run_fails(
        tmp_path,
        {**IAI_SMALL, "num-server-rounds": 3, **options},
        _tampering(alter),
        rf"round 2: partition 1 .*array '{array}' holds indices .*\.\.1000000, declared",
    )


def test_check_arrays_names_the_array_and_its_bad_values():
    check_arrays([np.zeros((2, 7)), np.arange(3)], ["a", "b"])
    for arrays, match in [
        ([np.zeros((2, 7), dtype=object)], r"array 0 \(a\) has dtype object, expected a numeric one"),
        (
            [np.zeros(2), np.array([0.0, np.nan])],
            r"array 1 \(b\) holds 1 non-finite value\(s\) \(first at index 1\)",
        ),
        ([np.array([1e200])], r"array 0 \(a\) holds 1 value\(s\) of magnitude above 1e\+100"),
    ]:
        with pytest.raises(ReplyError, match=match):
            check_arrays(arrays, ["a", "b"])


def test_a_non_finite_server_state_is_refused():
    check_finite_state([np.ones(3)], {"residual": 1.0, "alpha": [0.5], "nested": {"x": None}})
    with pytest.raises(ReplyError, match="broadcast's array 0"):
        check_finite_state([np.array([1.0, np.inf])], {})
    with pytest.raises(ReplyError, match=r"'residual_ratio' = nan"):
        check_finite_state([np.ones(3)], {"residual_ratio": float("nan")})
    with pytest.raises(ReplyError, match=r"'alpha\[1\]' = inf"):
        check_finite_state([], {"alpha": [0.5, float("inf")]})
