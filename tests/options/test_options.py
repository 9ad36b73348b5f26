"""Run-config options: every key declared once, beside a field of its family's parameters, and its
default the same in the run config, the parameters, the kernels' parameters, pyproject, the key
table and the estimators; bad values are named and rejected, a key of another family is refused,
each family has its own default number of rounds."""

import ast
import dataclasses
import tomllib
from pathlib import Path

import pytest

from fedmf_app.estimators import FMVCIAI, FMVCIMK, FedSONMF
from fedmf_app.methods.iai.params import GAEParams, IAIParams, iai_params
from fedmf_app.methods.imk.params import IMKOptions, IMKParams
from fedmf_app.methods.sonmf.adapted_updates import FedVRAParams
from fedmf_app.methods.sonmf.nonneg_orth import BasisSolverOptions
from fedmf_app.methods.sonmf.params import SONMFOptions
from fedmf_app.methods.sonmf.updates import SONMFParams
from fedmf_app.options import ConfigError
from fedmf_app.options.constraints import Interval, OneOf
from fedmf_app.options.schema import declared_fields, from_run_config
from fedmf_app.options.shared import SharedParams, shared_params
from fedmf_app.registry import (
    FAMILIES,
    OPTIONS,
    defaults,
    markdown_table,
    nested_defaults,
    validate_run_config,
)

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_holds_every_default():
    # regenerate with: python -m fedmf_app.registry --toml
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    assert table == nested_defaults()
    assert set(table) - {f.name for f in FAMILIES} == {k for k in defaults() if "." not in k}


#: The kernels' parameter classes: each is a group of declared keys inside its family's parameters.
KERNEL_PARAMS = (IMKParams, SONMFParams, BasisSolverOptions, FedVRAParams, GAEParams)


def test_every_key_is_declared_once_by_a_field_of_the_shared_or_a_family_parameters():
    declared = [
        o.key for cls in (SharedParams, *(f.params for f in FAMILIES)) for _, o in declared_fields(cls)
    ]
    assert len(declared) == len(set(declared))
    assert ["algorithm", *declared] == [o.key for o in OPTIONS]


@pytest.mark.parametrize("cls", [SharedParams, *(f.params for f in FAMILIES), *KERNEL_PARAMS])
def test_every_field_default_is_its_keys_default(cls):
    for field, option in declared_fields(cls):
        convert = field.metadata["convert"] or (lambda value: value)
        assert field.default == convert(option.default) == convert(defaults()[option.key]), option.key


@pytest.mark.parametrize("cls", KERNEL_PARAMS)
def test_the_kernels_parameters_at_their_defaults_are_the_users(cls):
    """Kernel tests that build ``IMKParams()`` or ``GAEParams()`` run with the user's defaults."""
    family = next(f for f in FAMILIES if any(o.key.startswith(f.name + ".") for _, o in declared_fields(cls)))
    assert from_run_config(cls, validate_run_config({"algorithm": family.algorithms[0]})) == cls()


def test_imk_lambda_and_iai_epochs_are_the_users_in_the_kernels():
    cfg = validate_run_config({})
    assert IMKParams().lam == cfg["imk.lambda"] == 1.0
    assert GAEParams().epochs == cfg["iai.epochs"] == 20


def test_the_families_parameters_at_their_defaults_are_the_users():
    cfg = validate_run_config({"dataset": "hw"})
    assert from_run_config(IMKOptions, cfg) == IMKOptions()
    assert from_run_config(SONMFOptions, cfg) == SONMFOptions()
    shared = {f.name: f.default for f, _ in declared_fields(SharedParams)}
    expected = SharedParams("fedsonmf", **{**shared, "dataset": "hw", "num_server_rounds": 100})
    assert shared_params(cfg) == expected
    # IAIParams holds the adaptive sizes at 0 until iai_params resolves them
    params = iai_params(validate_run_config({"algorithm": "fmvc-iai"}), num_clusters=10, num_samples=2000)
    resolved = {"num_clusters", "knn", "anchor_neighbours", "rank_depth"}
    assert {k: v for k, v in dataclasses.asdict(params).items() if k not in resolved} == {
        k: v for k, v in dataclasses.asdict(IAIParams(10)).items() if k not in resolved
    }


@pytest.mark.parametrize("estimator", [FedSONMF, FMVCIMK, FMVCIAI])
def test_the_estimators_defaults_are_the_keys(estimator):
    params = estimator().get_params()
    for name, option in estimator._options.items():
        assert params[name] == defaults().get(option.key, option.default), option.key


def test_no_option_is_written_by_hand():
    """Keys come only from fields declared with ``option()``; ``algorithm``, whose values are the
    families', is the one key built in place (by the run config and by an estimator with a choice)."""
    allowed = {"options/schema.py", "options/run_config.py", "estimators/base.py"}
    package = ROOT / "fedmf_app"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Option":
                assert str(path.relative_to(package)) in allowed, f"{path}: Option() by hand"


def test_docs_hold_the_current_table_of_keys():
    # regenerate with: python -m fedmf_app.registry --update-docs docs/options.md
    page = (ROOT / "docs" / "options.md").read_text()
    between = page.split("<!-- options:start -->\n", 1)[1].split("\n<!-- options:end -->", 1)[0]
    assert between == markdown_table()


def test_the_defaults_validate_to_the_default_algorithms_rounds():
    assert validate_run_config({}) == {**defaults(), "num-server-rounds": FAMILIES[0].num_server_rounds}


@pytest.mark.parametrize(
    ("family", "algorithm"),
    [(f, a) for f in FAMILIES for a in f.algorithms],
    ids=lambda x: getattr(x, "name", x),
)
def test_rounds_default_to_the_methods_own(family, algorithm):
    assert family.num_server_rounds >= 1
    assert validate_run_config({"algorithm": algorithm})["num-server-rounds"] == family.num_server_rounds
    assert validate_run_config({"algorithm": algorithm, "num-server-rounds": 3})["num-server-rounds"] == 3


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
        ({"sonmf.mu": -1.0}, "'sonmf.mu' = -1.0 is invalid: must be a number >= 0"),
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


def test_generated_text_goes_between_the_pages_markers_only():
    from fedmf_app.registry import between_markers

    page = "intro\n<!-- compare:start -->\nold\n<!-- compare:end -->\nrest\n"
    assert between_markers(page, "compare", "new") == (
        "intro\n<!-- compare:start -->\nnew\n<!-- compare:end -->\nrest\n"
    )
    with pytest.raises(ValueError, match="compare:start"):
        between_markers("no markers", "compare", "new")
