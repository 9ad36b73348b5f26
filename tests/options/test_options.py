"""Run-config schema: defaults agree with pyproject, bad values are named and rejected."""

import tomllib
from pathlib import Path

import pytest

from fedmf_app.options import ConfigError, defaults, markdown_table, validate_run_config

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_holds_every_default():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert table == defaults()


def test_readme_holds_the_current_table_of_keys():
    # regenerate with: python -m fedmf_app.options
    assert markdown_table() in (ROOT / "README.md").read_text()


def test_defaults_validate():
    assert validate_run_config({}) == defaults()


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"local-steps": -1}, "'local-steps' = -1 is invalid: must be an integer >= 1"),
        ({"local-lr": 0.0}, "'local-lr' = 0.0 is invalid: must be a number > 0"),
        ({"heterogeneity": 1.5}, "'heterogeneity' = 1.5 is invalid: must be a number in [0, 1]"),
        ({"algorithm": "fedavg"}, "'algorithm' = 'fedavg' is invalid: must be one of: fedsonmf"),
        ({"rank": 30}, "'rank' = 30 is invalid: must be <= 'view-dim' = 20"),
        ({"num-server-rounds": 2.5}, "'num-server-rounds' = 2.5 is invalid"),
        ({"diagnostics": "yes"}, "'diagnostics' = 'yes' is invalid: must be true or false"),
        ({"mu": float("nan")}, "'mu' = nan is invalid"),
        ({"locl-steps": 3}, "unknown run-config key(s) 'locl-steps'; allowed keys:"),
        ({"missing-rate": 1.0}, "'missing-rate' = 1.0 is invalid: must be a number in [0, 1)"),
        ({"missing-fill": "median"}, "'missing-fill' = 'median' is invalid: must be one of: mean, zeros"),
        ({"algorithm": "fmvc-iai", "iai-anchors": 5}, "must be >= 'iai-anchor-neighbours' + 1 = 11"),
        ({"iai-ae-hidden": "256,x"}, "'iai-ae-hidden' = '256,x' is invalid"),
    ],
)
def test_invalid_values_name_the_key_and_allowed_values(override, fragment):
    with pytest.raises(ConfigError) as err:
        validate_run_config(override)
    assert fragment in str(err.value)


def test_values_are_converted_to_their_types():
    cfg = validate_run_config({"mu": 1, "num-server-rounds": 3.0, "drift-correction": "false"})
    assert cfg["mu"] == 1.0 and isinstance(cfg["mu"], float)
    assert cfg["num-server-rounds"] == 3 and isinstance(cfg["num-server-rounds"], int)
    assert cfg["drift-correction"] is False
