"""simulations/overrides.py: the drivers' KEY=VALUE run-config overrides."""

import pytest

from simulations.overrides import parse_overrides


def test_values_are_read_as_json_where_they_parse_and_as_text_otherwise():
    pairs = ["imk.rho=2.0", "iai.epochs=5", 'sonmf.start="random"', "x=word", "b=true", "e=a=b"]
    assert parse_overrides(pairs) == {
        "imk.rho": 2.0,
        "iai.epochs": 5,
        "sonmf.start": "random",
        "x": "word",
        "b": True,
        "e": "a=b",
    }


def test_a_pair_without_a_value_is_refused_by_name():
    with pytest.raises(ValueError, match="'imk.rho': expected KEY=VALUE"):
        parse_overrides(["imk.rho"])
