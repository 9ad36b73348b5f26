"""The no-op app's messages carry the bytes asked for (``simulations.bench_overhead --floor``)."""

import importlib.util

import pytest
from flwr.app import RecordDict

from simulations.bench_deployment import FLOOR_APP, floor_seconds

_spec = importlib.util.spec_from_file_location("floor_app", FLOOR_APP / "floor_app.py")
floor_app = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor_app)


def test_empty_by_default() -> None:
    assert floor_app.payload(0) == RecordDict()


@pytest.mark.parametrize("floats", [1, 60_000])
def test_payload_holds_that_many_float64(floats: int) -> None:
    array = floor_app.payload(floats)["payload"]["x"]
    assert array.numpy().shape == (floats,)
    assert len(array.data) >= 8 * floats
    assert len(array.data) < 8 * floats + 256  # the np.save header only


def test_round_seconds_read_from_the_log() -> None:
    text = "INFO :      floor round 1: 5.521 s\nINFO :      floor round 2: 0.104 s\n"
    assert floor_seconds(text, 2) == [5.521, 0.104]
    with pytest.raises(RuntimeError, match="1 of 2 rounds"):
        floor_seconds(text.splitlines()[0], 2)
