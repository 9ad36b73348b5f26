"""Every method family keeps the one contract of docs/families.md: the same files, the same names
defined in them, Flower only in its Strategy and client, no import of another family, a README
that lists every file, and a small run for the cross-family tests."""

import ast
import dataclasses
import inspect
import re
import typing
from importlib import import_module
from pathlib import Path

import pytest

from fedmf_app.common.federation_reference import FederationReference
from fedmf_app.federated.client import ViewClient
from fedmf_app.federated.strategy import ViewFederationStrategy
from fedmf_app.methods import FAMILY_NAMES
from fedmf_app.options.schema import declared_options
from fedmf_app.registry import FAMILIES, client_class, protocol_of, strategy_class

from support.data import SMALL_RUNS

ROOT = Path(__file__).resolve().parents[2]
METHODS = ROOT / "fedmf_app" / "methods"
#: The modules that may import Flower.
FLOWER_MODULES = {"client.py", "strategy.py"}


def _contract() -> dict[str, str]:
    """File -> the name it must define (empty: none), read from docs/families.md's table."""
    page = (ROOT / "docs" / "families.md").read_text()
    table = page.split("<!-- contract:start -->\n", 1)[1].split("<!-- contract:end -->", 1)[0]
    rows = [line.split("|")[1:-1] for line in table.splitlines()[2:]]
    return {cells[0].strip().strip("`"): re.sub(r"`([A-Z_]+)`.*", r"\1", cells[2].strip()) for cells in rows}


def _imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


def test_the_registry_lists_every_family_folder_and_each_has_a_small_run():
    folders = sorted(p.name for p in METHODS.iterdir() if (p / "__init__.py").exists())
    assert sorted(FAMILY_NAMES) == folders
    assert tuple(f.name for f in FAMILIES) == FAMILY_NAMES
    assert set(SMALL_RUNS) == set(FAMILY_NAMES)


def test_the_contract_names_the_files_and_what_they_define():
    contract = _contract()
    assert {"options.py", "params.py", "protocol.py", "strategy.py", "client.py", "reference.py"} <= set(
        contract
    )
    assert contract["options.py"] == "FAMILY" and contract["strategy.py"] == "STRATEGIES"
    assert contract["reference.py"] == "REFERENCE"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_family_folder_holds_the_contracts_files_and_names(family):
    folder = METHODS / family.name
    for name, defines in _contract().items():
        assert (folder / name).is_file(), f"{family.name}: no {name}"
        if name.endswith(".py") and name != "__init__.py" and re.fullmatch(r"[A-Z_]+", defines):
            module = import_module(f"fedmf_app.methods.{family.name}.{name[:-3]}")
            assert hasattr(module, defines), f"{family.name}/{name} does not define {defines}"
    options = import_module(f"fedmf_app.methods.{family.name}.options")
    assert options.FAMILY is family
    assert dataclasses.is_dataclass(family.params) and family.params.__dataclass_params__.frozen
    assert family.params.__module__ == f"fedmf_app.methods.{family.name}.params"
    assert declared_options(family.params) == family.options


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_family_declares_a_strategy_and_a_client_per_algorithm_on_its_protocol(family):
    strategies = import_module(f"fedmf_app.methods.{family.name}.strategy").STRATEGIES
    clients = import_module(f"fedmf_app.methods.{family.name}.client").CLIENTS
    assert tuple(strategies) == tuple(clients) == family.algorithms
    for algorithm in family.algorithms:
        assert strategy_class(algorithm) is strategies[algorithm]
        assert client_class(algorithm) is clients[algorithm]
        assert issubclass(strategies[algorithm], ViewFederationStrategy)
        assert issubclass(clients[algorithm], ViewClient)
        assert strategies[algorithm].protocol is clients[algorithm].protocol is protocol_of(family.name)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_flower_only_in_the_strategy_and_client_and_no_family_imports_another(family):
    others = {f"fedmf_app.methods.{name}" for name in FAMILY_NAMES if name != family.name}
    for path in sorted((METHODS / family.name).glob("*.py")):
        imports = _imports(path)
        if path.name not in FLOWER_MODULES:
            assert not any(m == "flwr" or m.startswith("flwr.") for m in imports), (
                f"{path.name} imports Flower"
            )
        crossing = [m for m in imports if any(m == o or m.startswith(o + ".") for o in others)]
        assert not crossing, f"{family.name}/{path.name} imports another family: {crossing}"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_readme_lists_every_file_of_its_folder(family):
    folder = METHODS / family.name
    readme = (folder / "README.md").read_text()
    missing = [
        p.name for p in sorted(folder.glob("*.py")) if p.name != "__init__.py" and f"`{p.name}`" not in readme
    ]
    assert not missing, f"{family.name}/README.md does not list {missing}"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_family_reference_keeps_the_one_interface(family):
    reference = import_module(f"fedmf_app.methods.{family.name}.reference").REFERENCE
    wanted = inspect.signature(FederationReference.__init__).parameters
    given = inspect.signature(reference.__init__).parameters
    assert list(given) == list(wanted), f"{family.name}: REFERENCE{tuple(given)}"
    assert [p.default for p in given.values()] == [p.default for p in wanted.values()]
    assert typing.get_type_hints(reference.__init__)["params"] is family.params
    for method in ("round", "labels"):
        assert callable(getattr(reference, method, None)), f"{family.name}: REFERENCE.{method}"
