"""Generated: every run-config key given an out-of-range value is refused before round 1, naming the key."""

import math

import pytest
from flwr.common import Context, RecordDict

from fedmf_app.options import ConfigError
from fedmf_app.options.constraints import Boolean, Interval, OneOf, PositiveIntegers, Text
from fedmf_app.registry import FAMILIES, OPTIONS, validate_run_config
from fedmf_app.server_app import server_fn

#: Keys that accept any string (a folder or a name): nothing is out of range.
ANY_STRING = {"out-dir", "run-name", "sample-id"}
#: Keys only the ServerApp can check (a folder on the server's machine), with a value it refuses.
SERVER_ONLY = {"resume-from": "/no/such/run-folder"}


def out_of_range(option):
    """A value the option's constraint refuses (None: every value of its type is allowed)."""
    c = option.constraint
    if isinstance(c, Interval):
        if c.low is not None:
            return c.low - 1 if c.closed in ("both", "left") else c.low
        if c.high is not None:
            return c.high + 1 if c.closed in ("both", "right") else c.high
        return math.nan
    if isinstance(c, OneOf):
        return "not-" + c.values[0]
    if isinstance(c, Boolean):
        return "maybe"
    if isinstance(c, PositiveIntegers):
        return "0,x"
    if option.key in SERVER_ONLY:
        return SERVER_ONLY[option.key]
    if isinstance(c, Text):
        return None if c.check is None else "no-such-thing.txt"
    raise AssertionError(f"no out-of-range value for constraint {type(c).__name__} of {option.key}")


def _algorithm_for(key):
    for family in FAMILIES:
        if key.startswith(family.name + "."):
            return family.algorithms[0]
    return "fedsonmf"


CASES = [(o.key, out_of_range(o)) for o in OPTIONS if o.key not in ANY_STRING]


def test_every_key_but_free_strings_has_an_out_of_range_value():
    assert all(value is not None for _, value in CASES)
    assert {o.key for o in OPTIONS} == {k for k, _ in CASES} | ANY_STRING


@pytest.mark.parametrize(("key", "value"), CASES, ids=[k for k, _ in CASES])
def test_an_out_of_range_value_is_refused_before_round_one_naming_the_key(key, value, tmp_path):
    run_config = {"algorithm": _algorithm_for(key), "out-dir": str(tmp_path), key: value}
    if key not in SERVER_ONLY:
        with pytest.raises(ConfigError, match=f"run config '{key}' = .* is invalid"):
            validate_run_config(run_config)
    # the ServerApp stops on it before anything else (no client contacted, no run folder)
    context = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=run_config)
    with pytest.raises(ConfigError, match=f"'{key}'"):
        server_fn(context)
    assert not any(tmp_path.iterdir())


def test_a_value_invalid_against_another_key_stops_the_serverapp_with_its_message_logged(tmp_path, caplog):
    # what `flwr run` shows for a bad config: the ServerApp's log line, before any round
    run_config = {"sonmf.rank": 30, "out-dir": str(tmp_path), "run-name": "bad"}
    context = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=run_config)
    message = "'sonmf.rank' = 30 is invalid: must be <= 'view-dim' = 20"
    with pytest.raises(ConfigError, match=message):
        server_fn(context)
    assert any(message in r.getMessage() and "invalid run config" in r.getMessage() for r in caplog.records)
    assert "[ROUND 1]" not in caplog.text
    assert not (tmp_path / "bad").exists()
