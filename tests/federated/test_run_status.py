"""Scripts can tell a failed run from a completed one (``flwr run`` exits 0 either way)."""

import json

import pytest

from fedmf_app.federated.results import RunRecorder, main, run_status


def test_exit_codes_follow_the_status_in_result_json(tmp_path):
    done = RunRecorder(tmp_path, "done", {})
    done.start([])
    done.record_round({"round": 1})
    done.finish({})
    failed = RunRecorder(tmp_path, "failed", {})
    failed.start([])
    failed.fail("round 2: no valid reply from partition(s) [1]")
    running = RunRecorder(tmp_path, "running", {})
    running.start([])
    assert run_status(tmp_path / "done")[0] == 0
    code, line = run_status(tmp_path / "failed")
    assert code == 1 and "no valid reply from partition(s) [1]" in line
    assert run_status(tmp_path / "running")[0] == 1
    assert run_status(tmp_path / "absent")[0] == 2
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "result.json").write_text("{")
    assert run_status(tmp_path / "garbled")[0] == 2
    assert main([str(tmp_path / "done")]) == 0
    assert main([str(tmp_path / "done"), str(tmp_path / "failed")]) == 1
    assert json.loads((tmp_path / "failed" / "result.json").read_text())["status"] == "failed"
    with pytest.raises(SystemExit):
        main([])
