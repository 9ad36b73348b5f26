"""A client's exception reaches the person watching a run as one line naming its cause, once; the
tracebacks go to a file."""

import logging
import traceback

from fedmf_app.data import DataError
from fedmf_app.federated.error_lines import TracebacksToFile, cause_of, one_line
from fedmf_app.federated.timeouts import node_failure

CAUSE = "/data/org2.csv: rows have different numbers of columns ([2, 21])"


def _client_traceback():
    try:
        try:
            raise DataError(CAUSE)
        except DataError as exc:
            raise DataError(f"SuperNode 7 (partition 2): {exc}") from exc
    except DataError:
        return traceback.format_exc()


def _ray_reason():
    return (
        "Message contains an Error (reason: <class 'ray.exceptions.RayTaskError(ClientAppException)'>:"
        f"<'ray::ClientAppActor.run() (pid=5235, ip=192.0.2.2)\n{_client_traceback()}'>)"
    )


def test_the_cause_is_the_last_exception_message_of_a_traceback():
    assert cause_of(_client_traceback()) == f"SuperNode 7 (partition 2): {CAUSE}"
    assert cause_of(_ray_reason()) == f"SuperNode 7 (partition 2): {CAUSE}"
    assert cause_of("Message Unavailable - expired") == "Message Unavailable - expired"
    assert one_line(f"round 2: no valid reply. Errors: {_ray_reason()}") == (
        f"round 2: no valid reply. Errors: SuperNode 7 (partition 2): {CAUSE}"
    )


def test_a_failed_exchange_names_the_cause_not_the_traceback():
    message = node_failure("SuperNode 7 failed the handshake", _ray_reason(), 600.0)
    assert message == f"SuperNode 7 failed the handshake: SuperNode 7 (partition 2): {CAUSE}"
    assert "Traceback" not in message and "\n" not in message


def _record(message, exc_info=None):
    return logging.LogRecord("flwr", logging.ERROR, __file__, 1, message, (), exc_info)


def test_tracebacks_go_to_the_file_and_each_cause_shows_once_in_one_line(tmp_path):
    routed = TracebacksToFile(tmp_path / "tracebacks.log")
    plain = _record("run stopped before round 1: SuperNode 7 failed the handshake")
    assert routed.filter(plain) and plain.getMessage().startswith("run stopped")  # untouched
    first = _record("An exception was raised when processing a message by RayBackend\n" + _ray_reason())
    assert routed.filter(first)
    shown = first.getMessage()
    assert "\n" not in shown and "File " not in shown and CAUSE in shown
    assert shown.endswith(f"(traceback in {tmp_path / 'tracebacks.log'})")
    # the same cause again, quoted by the error it caused: not shown
    try:
        raise RuntimeError(f"SuperNode 7 failed the handshake: SuperNode 7 (partition 2): {CAUSE}")
    except RuntimeError:
        import sys

        again = _record("Simulation raised an exception", sys.exc_info())
    assert not routed.filter(again)
    written = (tmp_path / "tracebacks.log").read_text()
    assert written.count("Traceback (most recent call last)") >= 3 and "RuntimeError" in written
