"""Resume: a run interrupted after round s, continued from its run folder, ends with the numbers of an
uninterrupted run (server checkpoint + clients' state on disk; driven in process, no Ray)."""

import json
import pickle

import numpy as np
import pytest
from flwr.common import Context

from fedmf_app.federated.checkpoint import CHECKPOINT_FILE, load_checkpoint, write_checkpoint
from fedmf_app.federated.handshake import FederationError
from fedmf_app.federated.results import RunRecorder
from fedmf_app.in_process import InProcessFederation
from fedmf_app.options import ConfigError
from fedmf_app.registry import FAMILIES, strategy_class, validate_run_config
from fedmf_app.resume import main as resume_main
from fedmf_app.server_app import server_fn

from support.data import IAI_SMALL, SMALL_RUNS, iai_labelled_file

SONMF = {"num-clients": 3, "num-samples": 40, "heterogeneity": 0.6, "sonmf.local-steps": 3, "seed": 5}
#: Every family's small run, stopped half way; then the other algorithms and settings worth a case.
CASES = {
    **{f.algorithms[0]: (SMALL_RUNS[f.name], SMALL_RUNS[f.name]["num-server-rounds"] // 2) for f in FAMILIES},
    "fedvra-u": ({**SONMF, "algorithm": "fedvra-u", "num-server-rounds": 6}, 2),
    "fedsonmf-secure": ({**SONMF, "num-server-rounds": 5, "secure-aggregation": True}, 2),
    # with ground truth: every round's pseudo-labels are kept across the restart and scored at the end
    "fmvc-iai-labelled": ({**IAI_SMALL, "num-server-rounds": 4}, 2),
}


def _nodes(tmp_path, resume=None):
    """Node configs: each SuperNode's own state folder; with ``resume``, the run it may continue."""
    extra = {} if resume is None else {"resume-run-id": str(resume)}
    return lambda p: {"state-dir": str(tmp_path / "state" / f"node-{p}"), **extra}


def _drive(strategy, cfg, flower_rounds, die_in_next_round=False, node_config=None, run_id=1):
    """The ServerApp's round loop for ``flower_rounds`` rounds on fresh SuperNodes (a restarted
    node has an empty ``context.state``) with ``node_config`` and ``run_id``; ``die_in_next_round``:
    then the clients run the next round and the server dies before it aggregates (the clients'
    state is one round ahead of the server's)."""
    fed = InProcessFederation(
        cfg, strategy.recorder.run_dir.parent, strategy=strategy, node_config=node_config, run_id=run_id
    )
    fed.start()
    for r in range(1, flower_rounds + 1):
        fed.round(r)
    if die_in_next_round:
        r = flower_rounds + 1
        manager = fed.server.client_manager()
        for proxy, ins in strategy.configure_fit(
            server_round=r, parameters=fed.server.parameters, client_manager=manager
        ):
            proxy.fit(ins, None, r)


def _strategy(cfg, out, name="run"):
    return strategy_class(cfg["algorithm"])(cfg, RunRecorder(out, name, cfg))


def _resumed(cfg, run_dir):
    run_config = {**cfg, "out-dir": str(run_dir.parent), "resume-from": str(run_dir)}
    context = Context(run_id=2, node_id=0, node_config={}, state=None, run_config=run_config)
    components = server_fn(context)
    return components.server.strategy, components.config.num_rounds


@pytest.mark.parametrize("case", list(CASES))
def test_a_resumed_run_ends_with_the_numbers_of_an_uninterrupted_run(tmp_path, case):
    overrides, stop = CASES[case]
    if case.endswith("-labelled"):
        overrides = {**overrides, "dataset": iai_labelled_file(tmp_path)}
    whole = validate_run_config(overrides)
    reference = _strategy(whole, tmp_path / "whole")
    _drive(reference, whole, whole["num-server-rounds"])
    cfg = whole
    first = _strategy(cfg, tmp_path / "out")
    # ... the server dies after the clients answered round stop + 1; every SuperNode restarts
    _drive(first, cfg, stop, die_in_next_round=True, node_config=_nodes(tmp_path), run_id=1)
    run_dir = tmp_path / "out" / "run"
    assert json.loads((run_dir / "result.json").read_text())["status"] == "running"
    strategy, flower_rounds = _resumed(cfg, run_dir)
    assert flower_rounds == cfg["num-server-rounds"] - stop
    # the nodes consent to continue run 1 (node config resume-run-id), which asks round stop + 1
    # again with the identical broadcast
    _drive(strategy, cfg, flower_rounds, node_config=_nodes(tmp_path, resume=1), run_id=2)
    result = json.loads((run_dir / "result.json").read_text())
    expected = reference.recorder.data
    assert result["status"] == "completed" and result["resumed"] == [
        {"after_round": stop, "status": "running", "code_version": result["code_version"], "run_id": 1}
    ]
    assert [r["round"] for r in result["rounds"]] == [r["round"] for r in expected["rounds"]]
    timing = {"wall_s", "elapsed_s", "server_s", "client_kernel_s_max", "client_kernel_s_sum"}
    timing |= {"secagg_server_s", "secagg_client_s_max"}
    for got, want in zip(result["rounds"], expected["rounds"]):
        assert {k: v for k, v in got.items() if k not in timing} == {
            k: v for k, v in want.items() if k not in timing
        }
    assert result["final"] == json.loads(json.dumps(expected["final"]))
    if case.endswith("-labelled"):
        assert all("acc" in r for r in result["rounds"])


def test_resume_refuses_a_changed_config_a_finished_run_and_a_missing_checkpoint(tmp_path):
    cfg = validate_run_config({**SONMF, "num-server-rounds": 2})
    first = _strategy(cfg, tmp_path)
    _drive(first, cfg, 1, node_config=_nodes(tmp_path))
    with pytest.raises(ConfigError, match=r"differs from the run's: seed = 6 \(the run had 5\)"):
        _resumed({**cfg, "seed": 6}, tmp_path / "run")
    with pytest.raises(ConfigError, match="no checkpoint"):
        _resumed(cfg, tmp_path / "elsewhere")
    strategy, rounds = _resumed(cfg, tmp_path / "run")
    _drive(strategy, cfg, rounds, node_config=_nodes(tmp_path, resume=1), run_id=2)
    with pytest.raises(ConfigError, match="finished all 2 rounds; nothing to resume"):
        _resumed(cfg, tmp_path / "run")


def test_without_a_state_folder_a_restarted_client_still_refuses_to_continue(tmp_path):
    cfg = validate_run_config({**SONMF, "num-server-rounds": 3})
    first = _strategy(cfg, tmp_path)
    _drive(first, cfg, 1)
    strategy, rounds = _resumed(cfg, tmp_path / "run")
    # the client's refusal reaches the server as a failed reply, as through Flower
    with pytest.raises(FederationError, match="asked for round 2, but the last round it answered is 0"):
        _drive(strategy, cfg, rounds, run_id=2)


class _Payload:
    """What a pickle-based checkpoint would run on load: here, it writes a marker file."""

    marker = None

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _interrupted(tmp_path):
    cfg = validate_run_config({**SONMF, "num-server-rounds": 3})
    _drive(_strategy(cfg, tmp_path), cfg, 1, node_config=_nodes(tmp_path))
    return cfg, tmp_path / "run"


def test_a_tampered_checkpoint_cannot_run_code_and_is_refused(tmp_path):
    cfg, run_dir = _interrupted(tmp_path)
    path = run_dir / CHECKPOINT_FILE
    _Payload.marker = tmp_path / "code-ran"
    with path.open("wb") as f:  # a pickle in place of the checkpoint
        pickle.dump({"round": 1, "broadcast": [], "state": {"v": _Payload()}}, f)
    with pytest.raises(ConfigError, match="not a checkpoint of this app"):
        _resumed(cfg, run_dir)
    assert resume_main([str(run_dir)]) == 2  # the command refuses too, before starting anything
    np.savez(path, __tree__=np.frombuffer(b"{}", np.uint8), a0=np.array([_Payload()], dtype=object))
    with pytest.raises(ConfigError, match="not a checkpoint of this app"):
        _resumed(cfg, run_dir)
    call = {"object": "os.system", "fields": {"dict": [["command", "touch code-ran"]]}}
    tree = {"round": 1, "broadcast": [], "state": {"dict": [["v", call]]}}
    np.savez(path, __tree__=np.frombuffer(json.dumps(tree).encode(), np.uint8))
    with pytest.raises(ConfigError, match=r"names class 'os.system'; allowed: [^o]"):
        _resumed(cfg, run_dir)
    assert not _Payload.marker.exists() and not (tmp_path / "code-ran").exists()


def test_a_checkpoint_that_other_code_wrote_is_refused_naming_what_it_lacks(tmp_path):
    cfg, run_dir = _interrupted(tmp_path)
    types = strategy_class(cfg["algorithm"]).checkpoint_types
    checkpoint = load_checkpoint(run_dir, types)
    state = dict(checkpoint["state"])
    state["v_old"] = state.pop("v")  # an attribute another version of the strategy kept
    write_checkpoint(run_dir, checkpoint["round"], checkpoint["broadcast"], state, types)
    with pytest.raises(ConfigError, match=r"lacks \['v'\] and holds \['v_old'\] .* cannot resume it"):
        _resumed(cfg, run_dir)
    assert resume_main([str(run_dir)]) == 2


def test_resume_from_outside_the_runs_out_dir_is_refused(tmp_path):
    cfg, run_dir = _interrupted(tmp_path)
    context = Context(
        run_id=2,
        node_id=0,
        node_config={},
        state=None,
        run_config={**cfg, "out-dir": str(tmp_path / "other"), "resume-from": str(run_dir)},
    )
    with pytest.raises(ConfigError, match="is not a run folder of run config 'out-dir'"):
        server_fn(context)


def test_a_resumed_run_refuses_views_that_do_not_match_the_run_naming_the_partition(tmp_path):
    cfg = validate_run_config({**SONMF, "num-server-rounds": 3})
    _drive(_strategy(cfg, tmp_path), cfg, 1, node_config=_nodes(tmp_path))
    strategy, rounds = _resumed(cfg, tmp_path / "run")
    other = tmp_path / "other-view.npy"  # the same 40 samples, 9 features instead of 20
    np.save(other, np.abs(np.random.default_rng(0).standard_normal((40, 9))))

    def nodes(p):
        return {**_nodes(tmp_path, resume=1)(p), **({"data-file": str(other)} if p == 1 else {})}

    with pytest.raises(FederationError, match=r"resume: partition 1's view is 40 x 9 .* had 40 x 20"):
        _drive(strategy, cfg, rounds, node_config=nodes, run_id=2)
