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


class _SilentGrid:
    """A Grid whose SuperLink stopped answering: every pull blocks."""

    def __init__(self):
        import threading

        self.blocked = threading.Event()

    def push_messages(self, messages):
        return [f"id-{i}" for i, _ in enumerate(messages)]

    def pull_messages(self, message_ids):
        self.blocked.wait()
        return []


def test_a_serverapp_that_loses_its_superlink_marks_the_run_interrupted(tmp_path):
    import time

    from fedmf_app.federated.prompt_grid import PromptGrid, SuperLinkLost
    from fedmf_app.server_app import mark_interrupted

    grid = _SilentGrid()
    prompt = PromptGrid(grid, poll_s=0.01, lost_after=0.3)
    started = time.monotonic()
    with pytest.raises(SuperLinkLost, match="did not answer a pull of replies within 0.3 s"):
        prompt.send_and_receive([object(), object()], timeout=None)
    assert time.monotonic() - started < 5
    grid.blocked.set()

    class _Strategy:
        recorder = RunRecorder(tmp_path, "lost", {})

    _Strategy.recorder.start([])
    _Strategy.recorder.record_round({"round": 1})
    mark_interrupted(_Strategy, SuperLinkLost("the SuperLink did not answer"))
    code, line = run_status(tmp_path / "lost")
    assert code == 1 and "interrupted: interrupted after round 1" in line
    assert "python -m fedmf_app.resume" in line
    assert json.loads((tmp_path / "lost" / "result.json").read_text())["status"] == "interrupted"
