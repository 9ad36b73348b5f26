"""Run-config options: pyproject holds the declared defaults, bad values are named and rejected,
a key of another family is refused, each family has its own default number of rounds."""

import tomllib
from pathlib import Path

import pytest

from fedmf_app.options import ConfigError
from fedmf_app.options.constraints import Interval, OneOf
from fedmf_app.registry import FAMILIES, defaults, markdown_table, nested_defaults, validate_run_config

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_holds_every_default():
    # regenerate with: python -m fedmf_app.registry --toml
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert table == nested_defaults()
    assert set(table) - {f.name for f in FAMILIES} == {k for k in defaults() if "." not in k}


def test_docs_hold_the_current_table_of_keys():
    # regenerate with: python -m fedmf_app.registry --update-docs docs/options.md
    page = (ROOT / "docs" / "options.md").read_text()
    between = page.split("<!-- options:start -->\n", 1)[1].split("\n<!-- options:end -->", 1)[0]
    assert between == markdown_table()


def test_defaults_validate_and_rounds_default_to_the_methods_own():
    assert validate_run_config({}) == {**defaults(), "num-server-rounds": 100}
    rounds = {
        a: validate_run_config({"algorithm": a})["num-server-rounds"] for f in FAMILIES for a in f.algorithms
    }
    assert rounds == {
        "fedsonmf": 100,
        "fedmavg": 100,
        "fedmgs": 100,
        "fedvra-u": 100,
        "fmvc-imk": 100,
        "fmvc-iai": 6,
    }
    assert validate_run_config({"algorithm": "fmvc-iai", "num-server-rounds": 3})["num-server-rounds"] == 3


def test_validation_is_idempotent_and_takes_nested_tables():
    cfg = validate_run_config({"algorithm": "fmvc-imk", "imk": {"lambda": 0.0}, "seed": 3})
    assert cfg["imk.lambda"] == 0.0 and validate_run_config(cfg) == cfg


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_key_of_another_family_is_refused_unless_at_its_default(family):
    other = next(f for f in FAMILIES if f is not family)
    algorithm = family.algorithms[0]
    for option in other.options:
        validate_run_config({"algorithm": algorithm, option.key: option.default})  # harmless
        changed = _another_valid_value(option)
        if changed is None:
            continue
        with pytest.raises(ConfigError) as err:
            validate_run_config({"algorithm": algorithm, option.key: changed})
        assert f"'{option.key}'" in str(err.value) and f"algorithm '{algorithm}'" in str(err.value)
        assert other.algorithms[0] in str(err.value)


def _another_valid_value(option):
    c = option.constraint
    if option.kind is bool:
        return not option.default
    if isinstance(c, OneOf):
        return next((v for v in c.values if v != option.default), None)
    if isinstance(c, Interval):
        candidate = option.default + 1
        return candidate if c.is_satisfied_by(candidate) else None
    return None


def test_every_family_key_is_in_its_own_table():
    for family in FAMILIES:
        assert all(o.key.startswith(family.name + ".") for o in family.options)
    assert len({o.key for f in FAMILIES for o in f.options}) == sum(len(f.options) for f in FAMILIES)


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"sonmf.local-steps": -1}, "'sonmf.local-steps' = -1 is invalid: must be an integer >= 1"),
        ({"sonmf.local-lr": 0.0}, "'sonmf.local-lr' = 0.0 is invalid: must be a number > 0"),
        ({"heterogeneity": 1.5}, "'heterogeneity' = 1.5 is invalid: must be a number in [0, 1]"),
        ({"algorithm": "fedavg"}, "'algorithm' = 'fedavg' is invalid: must be one of: fedsonmf"),
        ({"sonmf.rank": 30}, "'sonmf.rank' = 30 is invalid: must be <= 'view-dim' = 20"),
        ({"num-server-rounds": 2.5}, "'num-server-rounds' = 2.5 is invalid"),
        ({"sonmf.diagnostics": "yes"}, "'sonmf.diagnostics' = 'yes' is invalid: must be true or false"),
        ({"sonmf.mu": float("nan")}, "'sonmf.mu' = nan is invalid"),
        ({"locl-steps": 3}, "unknown run-config key 'locl-steps' (did you mean 'sonmf.local-steps'?);"),
        ({"num-client": 3}, "unknown run-config key 'num-client' (did you mean 'num-clients'?);"),
        ({"xyz": 3}, "unknown run-config key 'xyz'; every key and its meaning: docs/options.md"),
        (
            {"local-steps": 3},
            "'local-steps' (family keys live in their own table: it is 'sonmf.local-steps')",
        ),
        ({"imk-lambda": 3}, "it is 'imk.lambda'"),
        ({"missing-rate": 1.0}, "'missing-rate' = 1.0 is invalid: must be a number in [0, 1)"),
        ({"missing-fill": "median"}, "'missing-fill' = 'median' is invalid: must be one of: mean, zeros"),
        (
            {"algorithm": "fmvc-iai", "iai.anchors": 5, "iai.anchor-neighbours": 10},
            "must be >= 'iai.anchor-neighbours' + 1 = 11",
        ),
        ({"iai.ae-hidden": "256,x"}, "'iai.ae-hidden' = '256,x' is invalid"),
    ],
)
def test_invalid_values_name_the_key_and_allowed_values(override, fragment):
    with pytest.raises(ConfigError) as err:
        validate_run_config(override)
    assert fragment in str(err.value)


def test_values_are_converted_to_their_types():
    cfg = validate_run_config({"sonmf.mu": 1, "num-server-rounds": 3.0, "sonmf.drift-correction": "false"})
    assert cfg["sonmf.mu"] == 1.0 and isinstance(cfg["sonmf.mu"], float)
    assert cfg["num-server-rounds"] == 3 and isinstance(cfg["num-server-rounds"], int)
    assert cfg["sonmf.drift-correction"] is False


def test_the_registry_checks_a_run_config_string_naming_a_misspelt_key(capsys):
    from fedmf_app.registry import main

    main(["--check", 'num-server-rounds=5 dataset="hw"'])
    assert capsys.readouterr().out == "valid: num-server-rounds=5, dataset='hw'\n"
    with pytest.raises(SystemExit) as exit_:
        main(["--check", "num-server-rounds=5 seeed=2"])
    assert str(exit_.value).startswith(
        "invalid run config: unknown run-config key 'seeed' (did you mean 'seed'?)"
    )
