"""Options and families: a key with its default, constraint and meaning; a method family with its keys.

The shared keys live at the top of ``[tool.flwr.app.config]``; each family's keys live in its own
nested table (``[tool.flwr.app.config.sonmf]``), which Flower flattens to ``"sonmf.mu"``.

Each key is written once, beside a field of typed parameters: a family's parameters (and the shared
keys') are a frozen dataclass whose fields are declared with :func:`option` (the key, its default,
constraint and help; the field's default is the key's). The rest is read from the dataclass: the
:class:`Option` list (:func:`declared_options`, from which the run config, ``pyproject.toml``,
``docs/options.md`` and the estimators' parameters derive) and the typed parameters of a validated
run config (:func:`from_run_config`). A field declared with :func:`group` holds a nested dataclass
of declared fields (the kernel steps a family's maths takes), whose keys belong to the outer one.
Adding a key is one edit, a field declared with :func:`option` in its family's parameters, then
``python -m fedmf_app.registry --update-docs docs/options.md --update-pyproject pyproject.toml``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from typing import Any

from fedmf_app.data.needs import DataNeeds
from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT
from fedmf_app.options.constraints import Constraint

__all__ = [
    "ConfigError",
    "Family",
    "Option",
    "convert",
    "declared_fields",
    "declared_options",
    "flatten",
    "from_run_config",
    "group",
    "option",
]


class ConfigError(ValueError):
    """A run-config value is unknown, of the wrong type or out of range."""


@dataclass(frozen=True)
class Option:
    """One run-config key.

    Parameters
    ----------
    key : str
        Flattened name, e.g. ``"num-clients"`` or ``"sonmf.mu"`` (family keys start with the
        family's name and a dot).
    default : int, float, bool or str
    constraint : Constraint
        Type, check and the words of the error message.
    help : str
        Meaning, for the key table; ``[A]`` marks a choice the papers do not state.
    """

    key: str
    default: Any
    constraint: Constraint
    help: str

    @property
    def kind(self) -> type:
        """``int``, ``float``, ``bool`` or ``str``."""
        return self.constraint.kind

    @property
    def allowed(self) -> str:
        """The allowed values, in words."""
        return str(self.constraint)

    def parse(self, value: Any) -> Any:
        """Convert and check ``value``.

        Raises
        ------
        ConfigError
            Naming the key, the value and the allowed values.
        """
        converted = convert(self.kind, value)
        if converted is None or not self.constraint.is_satisfied_by(converted):
            raise ConfigError(f"run config '{self.key}' = {value!r} is invalid: must be {self.allowed}")
        return converted


@dataclass(frozen=True)
class Family:
    """A method family and the keys it owns.

    Parameters
    ----------
    name : str
        Prefix of its keys and name of its run-config table.
    title : str
        One line for the key table.
    algorithms : tuple of str
        Values of ``algorithm`` that belong to it.
    num_server_rounds : int
        Rounds when ``num-server-rounds`` is 0 (the method's default).
    params : type
        Its parameters: a frozen dataclass whose fields declare its keys (:func:`option`), each
        starting with ``name + "."``.
    check : callable, optional
        Cross-key checks on a validated config (raise :class:`ConfigError`).
    reads_missing_mask : bool
        Whether its clients read the missing-view mask themselves (else missing rows are filled,
        run config ``missing-fill``).
    reads_sparse_views : bool
        Whether its clients take a view stored sparse as a ``scipy.sparse`` CSR matrix (memory
        proportional to the nonzeros); otherwise such a view is handed over dense.
    synthetic_rank : callable, optional
        The rank the synthetic generator plants for a validated config (default:
        :data:`~fedmf_app.data.synthetic.AUTO_RANK_DEFAULT`).
    """

    name: str
    title: str
    algorithms: tuple[str, ...]
    num_server_rounds: int
    params: type
    check: Callable[[dict[str, Any]], None] | None = None
    reads_missing_mask: bool = False
    reads_sparse_views: bool = False
    synthetic_rank: Callable[[dict[str, Any]], int] | None = None

    def data_needs(self, cfg: dict[str, Any]) -> DataNeeds:
        """What this family's clients need of their view, for the data layer
        (:func:`fedmf_app.data.load_client_view`)."""
        rank = AUTO_RANK_DEFAULT if self.synthetic_rank is None else self.synthetic_rank(cfg)
        return DataNeeds(
            sparse_views=self.reads_sparse_views,
            fill_missing_rows=not self.reads_missing_mask,
            synthetic_rank=rank,
        )

    @property
    def options(self) -> tuple[Option, ...]:
        """Its keys, as :attr:`params` declares them."""
        return declared_options(self.params)

    def __post_init__(self) -> None:
        stray = [o.key for o in self.options if not o.key.startswith(self.name + ".")]
        if stray:
            raise ValueError(f"family {self.name!r}: keys {stray} must start with '{self.name}.'")


def convert(kind: type, value: Any) -> Any:
    """``value`` as ``kind``, or ``None`` when it is not one (no silent truncation).

    Parameters
    ----------
    kind : {int, float, bool, str}
    value : any

    Returns
    -------
    int, float, bool, str or None
    """
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return None
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if kind is int:
            return int(value) if float(value).is_integer() else None
        return float(value) if math.isfinite(value) else None
    return value if isinstance(value, str) else None


def flatten(raw: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables to Flower's flat ``"table.key"`` names (flat input is returned as it is).

    Parameters
    ----------
    raw : mapping
    prefix : str

    Returns
    -------
    dict
    """
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


_OPTION = "option"
_CONVERT = "convert"
_GROUP = "group"


def option(
    key: str, default: Any, constraint: Constraint, help: str, *, convert: Callable[[Any], Any] | None = None
) -> Any:
    """A dataclass field that is the run-config key ``key``.

    Parameters
    ----------
    key : str
        Flattened name (``"imk.lambda"``; a family's keys start with its name and a dot).
    default : int, float, bool or str
        The key's default, as the run config holds it; the field's default is ``convert(default)``.
    constraint : Constraint
        Type, check and the words of the error message.
    help : str
        Meaning, for the key table; ``[A]`` marks a choice the papers do not state.
    convert : callable, optional
        The field's value from the key's (e.g. ``"256,128"`` -> ``(256, 128)``); default: the same.

    Returns
    -------
    dataclasses.Field
    """
    value = default if convert is None else convert(default)
    metadata = {_OPTION: Option(key, default, constraint, help), _CONVERT: convert}
    return field(default=value, metadata=metadata)


def group(cls: type) -> Any:
    """A dataclass field holding ``cls``, a dataclass of declared fields, at its defaults.

    Parameters
    ----------
    cls : type
        A frozen dataclass whose fields are declared with :func:`option`.

    Returns
    -------
    dataclasses.Field
    """
    return field(default_factory=cls, metadata={_GROUP: cls})


def declared_fields(cls: type) -> list[tuple[Field, Option]]:
    """Every declared field of ``cls`` with its option, nested groups' fields in their place.

    Parameters
    ----------
    cls : type
        A dataclass.

    Returns
    -------
    list of (dataclasses.Field, Option)
    """
    found: list[tuple[Field, Option]] = []
    for f in fields(cls):
        if _OPTION in f.metadata:
            found.append((f, f.metadata[_OPTION]))
        elif _GROUP in f.metadata:
            found += declared_fields(f.metadata[_GROUP])
    return found


def declared_options(cls: type) -> tuple[Option, ...]:
    """The run-config keys ``cls`` declares, in the order of its fields.

    Parameters
    ----------
    cls : type
        A dataclass.

    Returns
    -------
    tuple of Option
    """
    return tuple(o for _, o in declared_fields(cls))


def from_run_config(cls: type, cfg: Mapping[str, Any], **given: Any) -> Any:
    """``cls`` built from a validated run config: every declared field from its key.

    Parameters
    ----------
    cls : type
        A dataclass whose fields are declared with :func:`option` or :func:`group`.
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.
    **given
        Values of fields that are not keys, or that the caller resolves itself (an ``auto``).

    Returns
    -------
    cls
    """
    if not is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    stray = set(given) - {f.name for f in fields(cls)}
    if stray:
        raise TypeError(f"{cls.__name__} has no fields {sorted(stray)}")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in given:
            kwargs[f.name] = given[f.name]
        elif _OPTION in f.metadata:
            convert = f.metadata[_CONVERT]
            value = cfg[f.metadata[_OPTION].key]
            kwargs[f.name] = value if convert is None else convert(value)
        elif _GROUP in f.metadata:
            kwargs[f.name] = from_run_config(f.metadata[_GROUP], cfg)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} is not a run-config key: pass it")
    return cls(**kwargs)
