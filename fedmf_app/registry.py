"""The one registry of the method families: the app's run config, and run-config ``algorithm`` ->
server Strategy and client classes.

The families are the folders :data:`fedmf_app.methods.FAMILY_NAMES` lists; each declares itself
(``options.py``: ``FAMILY``), its Strategy and NumPyClient per algorithm (``strategy.py``:
``STRATEGIES``, ``client.py``: ``CLIENTS``) and its protocol (``protocol.py``: ``PROTOCOL``), so
this module names none of them. :data:`RUN_CONFIG` joins the shared keys and the families' keys;
:func:`validate_run_config`, :func:`data_needs`, :func:`defaults` and the rest are its methods.
Strategy and client modules are imported when asked for, so a client process (one per message in a
deployment) imports only its own family's client code.

``python -m fedmf_app.registry`` prints the key table of ``docs/options.md``; ``--toml`` prints the
``pyproject.toml`` table instead, and ``--update-pyproject FILE`` rewrites it in FILE
(``pyproject.toml``); ``--update-docs PAGE`` rewrites the key table between the
``<!-- options:start -->`` and ``<!-- options:end -->`` lines of PAGE (``docs/options.md``);
``--update-privacy PAGE`` the tables of each family's protocol (:func:`protocol_of`) between the
``<!-- protocol:<family>:start -->`` and ``<!-- protocol:<family>:end -->`` lines of PAGE
(``docs/privacy.md``), and of the stages they share between ``<!-- protocol:shared:start -->``
and ``<!-- protocol:shared:end -->``; ``--check "k=v ..."`` checks a ``flwr run --run-config``
string as the ServerApp will (a misspelt key named with the keys it resembles, where Flower says
only "Invalid run configuration").
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

from fedmf_app.methods import FAMILY_NAMES
from fedmf_app.options.run_config import RunConfig
from fedmf_app.options.schema import Family, Option

__all__ = [
    "ALGORITHM_NAMES",
    "FAMILIES",
    "OPTIONS",
    "RUN_CONFIG",
    "between_markers",
    "client_class",
    "data_needs",
    "defaults",
    "family_of",
    "markdown_table",
    "nested_defaults",
    "protocol_of",
    "pyproject_table",
    "strategy_class",
    "validate_run_config",
]


def _family_module(family: str, module: str) -> Any:
    """``fedmf_app.methods.<family>.<module>``, imported."""
    return import_module(f"fedmf_app.methods.{family}.{module}")


#: The app's run config: the shared keys, then each family's, in :data:`FAMILY_NAMES` order.
RUN_CONFIG = RunConfig(tuple(_family_module(name, "options").FAMILY for name in FAMILY_NAMES))
FAMILIES: tuple[Family, ...] = RUN_CONFIG.families
ALGORITHM_NAMES: tuple[str, ...] = RUN_CONFIG.algorithm_names
OPTIONS: tuple[Option, ...] = RUN_CONFIG.options
validate_run_config = RUN_CONFIG.validate
data_needs = RUN_CONFIG.data_needs
family_of = RUN_CONFIG.family_of
defaults = RUN_CONFIG.defaults
nested_defaults = RUN_CONFIG.nested_defaults
markdown_table = RUN_CONFIG.markdown_table
pyproject_table = RUN_CONFIG.pyproject_table


def strategy_class(algorithm: str) -> Any:
    """Strategy class of ``algorithm`` (a validated name): its family's ``STRATEGIES[algorithm]``."""
    return _family_module(family_of(algorithm).name, "strategy").STRATEGIES[algorithm]


def client_class(algorithm: str) -> Any:
    """NumPyClient class of ``algorithm`` (a validated name): its family's ``CLIENTS[algorithm]``."""
    return _family_module(family_of(algorithm).name, "client").CLIENTS[algorithm]


def protocol_of(family: str) -> Any:
    """The protocol of family ``family`` (its ``protocol.py``'s ``PROTOCOL``).

    Parameters
    ----------
    family : str
        A family's name (``"sonmf"``, ``"imk"``, ``"iai"``).

    Returns
    -------
    fedmf_app.federated.protocol.Protocol
    """
    return _family_module(family, "protocol").PROTOCOL


def privacy_tables(page: str) -> str:
    """``page`` with every family's generated protocol table between its markers.

    Parameters
    ----------
    page : str
        The text of ``docs/privacy.md``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When the page lacks a family's markers.
    """
    from fedmf_app.federated.protocol import protocol_table, shared_table

    tables = {family.name: protocol_table(protocol_of(family.name)) for family in FAMILIES}
    tables["shared"] = shared_table(protocol_of(FAMILIES[0].name))
    for name, table in tables.items():
        page = between_markers(page, f"protocol:{name}", table)
    return page


def between_markers(page: str, marker: str, text: str) -> str:
    """``page`` with ``text`` between its ``<!-- marker:start -->`` and ``<!-- marker:end -->`` lines.

    Raises
    ------
    ValueError
        When the page lacks them.
    """
    start, end = f"<!-- {marker}:start -->\n", f"<!-- {marker}:end -->"
    if start not in page or end not in page:
        raise ValueError(f"no '{start.strip()}' ... '{end}' lines to write the table between")
    head, rest = page.split(start, 1)
    return head + start + text + "\n" + end + rest.split(end, 1)[1]


def with_pyproject_table(text: str) -> str:
    """``pyproject.toml``'s text with its ``[tool.flwr.app.config]`` tables replaced by
    :func:`pyproject_table`.

    Parameters
    ----------
    text : str
        The text of ``pyproject.toml``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When the text has no ``[tool.flwr.app.config]`` table.
    """
    lines = text.split("\n")
    head = "[tool.flwr.app.config]"
    if head not in lines:
        raise ValueError(f"no '{head}' table to write")
    start = lines.index(head)
    end = start + 1
    while end < len(lines) and not (
        lines[end].startswith("[") and not lines[end].startswith("[tool.flwr.app.config.")
    ):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join([*lines[:start], pyproject_table(), *lines[end:]])


def options_table(page: str) -> str:
    """``docs/options.md``'s text ``page`` with the key table (:func:`markdown_table`) between its
    ``options`` markers (a :class:`ValueError` when it has none)."""
    return between_markers(page, "options", markdown_table())


def main(argv: list[str] | None = None) -> None:
    """``python -m fedmf_app.registry``: print the key table, or the ``pyproject.toml`` table
    (``--toml``), or rewrite the key table of a page (``--update-docs PAGE``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).
    """
    parser = argparse.ArgumentParser(prog="python -m fedmf_app.registry", description="Print the key table.")
    parser.add_argument("--toml", action="store_true", help="print the pyproject.toml table")
    parser.add_argument("--update-docs", type=Path, metavar="PAGE", help="rewrite the key table of PAGE")
    parser.add_argument(
        "--update-pyproject", type=Path, metavar="FILE", help="rewrite the run-config table of FILE"
    )
    parser.add_argument(
        "--update-privacy", type=Path, metavar="PAGE", help="rewrite the protocol tables of PAGE"
    )
    parser.add_argument(
        "--check", metavar="RUN_CONFIG", help='check a --run-config string, e.g. "num-server-rounds=5 seed=2"'
    )
    args = parser.parse_args(argv)
    if args.check is not None:
        from flwr.common.config import parse_config_args

        try:
            overrides = parse_config_args([args.check])
            cfg = validate_run_config(overrides)
        except ValueError as exc:
            sys.exit(f"invalid run config: {exc}")
        sys.stdout.write(f"valid: {', '.join(f'{k}={cfg[k]!r}' for k in overrides) or 'the defaults'}\n")
        return
    updates = (
        (args.update_pyproject, with_pyproject_table),
        (args.update_privacy, privacy_tables),
        (args.update_docs, options_table),
    )
    for path, rewrite in updates:
        if path is not None:
            try:
                path.write_text(rewrite(path.read_text()))
            except ValueError as exc:
                sys.exit(f"{path}: {exc}")
    if not any(path is not None for path, _ in updates):
        sys.stdout.write((pyproject_table() if args.toml else markdown_table()) + "\n")


if __name__ == "__main__":
    main()
