"""The run config of a set of method families: its keys and their validation.

Flower reads the defaults from ``pyproject.toml``: the shared keys at the top of
``[tool.flwr.app.config]`` and each family's keys in its own nested table
(``[tool.flwr.app.config.sonmf]``, ``.imk``, ``.iai``), which reach the apps flattened
(``"sonmf.mu"``); ``flwr run . --run-config "sonmf.mu=0.1"`` overrides one. Every key is declared
once, beside a field of typed parameters (:func:`~fedmf_app.options.schema.option`): the shared
keys in :class:`~fedmf_app.options.shared.SharedParams`, each family's in the parameters its
``options.py`` names; ``pyproject.toml``'s table is generated from them (a test keeps it equal),
and the hydra sweeps build their defaults from ``pyproject.toml``.

:class:`RunConfig` joins the shared keys and the keys of the families it is given, and imports no
family; the app's run config, over its three families, is built where the families are known
(:data:`fedmf_app.registry.RUN_CONFIG`). :meth:`RunConfig.validate` turns a raw run config into a
complete, type-checked dict, or raises :class:`ConfigError` naming the key, the value and what is
allowed, so that a bad run stops before round 1. A key of another family than the algorithm's, set
to anything but its default, is refused. The key table of ``docs/options.md`` is printed by
``python -m fedmf_app.registry``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from fedmf_app.data.needs import DataNeeds
from fedmf_app.data.view_files import names_view_files
from fedmf_app.options.constraints import OneOf
from fedmf_app.options.schema import ConfigError, Family, Option, flatten
from fedmf_app.options.shared import SHARED_OPTIONS

__all__ = ["RunConfig"]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


class RunConfig:
    """Every key of a run: ``algorithm``, the shared keys, then each family's.

    Parameters
    ----------
    families : tuple of Family
        The method families, in the order of the key table; the first algorithm of the first
        family is the default ``algorithm``.

    Attributes
    ----------
    families : tuple of Family
    algorithm_names : tuple of str
        Every family's algorithms, in order.
    options : tuple of Option
        Every key: ``algorithm``, the shared keys, then each family's.
    """

    def __init__(self, families: tuple[Family, ...]) -> None:
        self.families = families
        self.algorithm_names: tuple[str, ...] = tuple(a for f in families for a in f.algorithms)
        self.options: tuple[Option, ...] = (
            Option("algorithm", self.algorithm_names[0], OneOf(self.algorithm_names), "Algorithm to run."),
            *SHARED_OPTIONS,
            *(o for f in families for o in f.options),
        )
        self._by_key = {o.key: o for o in self.options}
        self._family_of_key = {o.key: f for f in families for o in f.options}

    def data_needs(self, cfg: dict[str, Any]) -> DataNeeds:
        """What the run's family needs from the data layer (:meth:`Family.data_needs`).

        Parameters
        ----------
        cfg : dict
            Validated run config.

        Returns
        -------
        DataNeeds
        """
        return self.family_of(cfg["algorithm"]).data_needs(cfg)

    def family_of(self, algorithm: str) -> Family:
        """The family an algorithm belongs to.

        Parameters
        ----------
        algorithm : str
            A name in :attr:`algorithm_names`.

        Returns
        -------
        Family
        """
        return next(f for f in self.families if algorithm in f.algorithms)

    def defaults(self) -> dict[str, Any]:
        """Default value of every key, flattened (``"sonmf.mu"``).

        Returns
        -------
        dict
        """
        return {o.key: o.default for o in self.options}

    def nested_defaults(self) -> dict[str, Any]:
        """The defaults as ``pyproject.toml``'s ``[tool.flwr.app.config]`` nests them.

        Returns
        -------
        dict
            Shared keys at the top, one sub-dict per family.
        """
        nested: dict[str, Any] = {}
        for key, value in self.defaults().items():
            table, _, name = key.rpartition(".")
            (nested.setdefault(table, {}) if table else nested)[name] = value
        return nested

    def _unknown_key_message(self, unknown: list[str]) -> str:
        # an old flat name: the short key itself, or "<family>-<key>"
        known_as = {}
        for name in self._by_key:
            table, _, short = name.rpartition(".")
            if table:
                for old in (short, f"{table}-{short}"):
                    known_as.setdefault(old, name)
        named = []
        for key in unknown:
            if key in known_as:
                named.append(f"'{key}' (family keys live in their own table: it is '{known_as[key]}')")
            elif close := self._close_keys(key):
                named.append(f"'{key}' (did you mean {' or '.join(map(repr, close))}?)")
            else:
                named.append(repr(key))
        return (
            f"unknown run-config key{'s' if len(unknown) > 1 else ''} {', '.join(named)}; every key and "
            "its meaning: docs/options.md (python -m fedmf_app.registry)"
        )

    def _close_keys(self, key: str) -> list[str]:
        """Keys spelt like ``key`` (a family key also by its name without the family's prefix)."""
        table, _, short = key.rpartition(".")
        names: dict[str, set[str]] = {}
        for name in self._by_key:
            names.setdefault(name, set()).add(name)
            if not table:
                names.setdefault(name.rpartition(".")[2], set()).add(name)
        found = difflib.get_close_matches(key, names, n=3, cutoff=0.75)
        return sorted({full for name in found for full in names[name]})

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Check a run config and fill in defaults.

        Parameters
        ----------
        raw : mapping
            Run config as Flower passes it (``context.run_config``, flat ``"sonmf.mu"`` keys), a
            nested one (``{"sonmf": {"mu": 0.1}}``, as hydra composes it), or a partial override.

        Returns
        -------
        dict
            Every key of :attr:`options` (flat names), converted to its type, with
            ``num-server-rounds = 0`` replaced by the family's default.

        Raises
        ------
        ConfigError
            On an unknown key, a value of the wrong type or out of range, a key of another family
            set to anything but its default, or an inconsistent combination (e.g. ``sonmf.rank``
            larger than ``view-dim``).
        """
        flat = flatten(raw)
        unknown = sorted(set(flat) - set(self._by_key))
        if unknown:
            raise ConfigError(self._unknown_key_message(unknown))
        cfg = self.defaults()
        for key, value in flat.items():
            cfg[key] = self._by_key[key].parse(value)
        family = self.family_of(cfg["algorithm"])
        for key in flat:
            owner = self._family_of_key.get(key)
            if owner is not None and owner is not family and cfg[key] != self._by_key[key].default:
                raise ConfigError(
                    f"run config '{key}' = {flat[key]!r} belongs to {owner.name} "
                    f"({', '.join(owner.algorithms)}) and is not used by algorithm "
                    f"'{cfg['algorithm']}'; remove it or set algorithm to one of "
                    f"{', '.join(owner.algorithms)}"
                )
        if cfg["num-server-rounds"] == 0:
            cfg["num-server-rounds"] = family.num_server_rounds
        if cfg["dataset"] == "synthetic" and cfg["views"]:
            raise ConfigError(
                f"run config 'views' = {cfg['views']!r} is invalid with dataset = 'synthetic' (it "
                "generates num-clients views): set views only for a data file or an embedded data set"
            )
        if cfg["views"] and names_view_files(cfg["dataset"]):
            raise ConfigError(
                f"run config 'views' = {cfg['views']!r} is invalid with per-view files in 'dataset' "
                "(one file per client): list the files you want, in client order, instead"
            )
        if family.check is not None:
            family.check(cfg)
        rank = family.data_needs(cfg).synthetic_rank
        if cfg["dataset"] == "synthetic" and rank > cfg["view-dim"]:
            raise ConfigError(
                f"run config 'view-dim' = {cfg['view-dim']} is invalid with dataset = 'synthetic': the "
                f"generator plants rank {rank} in every view, so it must be >= {rank}"
            )
        return cfg

    def markdown_table(self) -> str:
        """The key table of ``docs/options.md`` (the page embeds exactly this text).

        Returns
        -------
        str
            One table for the shared keys, then one per family.
        """

        def cell(text: str) -> str:
            return text.replace("|", "\\|")

        def table(options: tuple[Option, ...]) -> list[str]:
            rows = ["| key | default | allowed | meaning |", "|---|---|---|---|"]
            rows += [
                f"| `{o.key}` | `{_toml(o.default)}` | {cell(o.allowed)} | {cell(o.help)} |" for o in options
            ]
            return rows

        lines = ["### Shared keys", "", *table(self.options[: 1 + len(SHARED_OPTIONS)])]
        for f in self.families:
            lines += [
                "",
                f"### `{f.name}.*`: {f.title} ({', '.join(f'`{a}`' for a in f.algorithms)})",
                "",
                *table(f.options),
            ]
        return "\n".join(lines)

    def pyproject_table(self) -> str:
        """``[tool.flwr.app.config]`` with every default, as ``pyproject.toml`` holds it.

        Returns
        -------
        str
        """
        nested = self.nested_defaults()
        lines = ["[tool.flwr.app.config]"]
        lines += [f"{k} = {_toml(v)}" for k, v in nested.items() if not isinstance(v, dict)]
        for f in self.families:
            lines += ["", f"[tool.flwr.app.config.{f.name}]"]
            lines += [f"{k} = {_toml(v)}" for k, v in nested[f.name].items()]
        return "\n".join(lines)
