"""Options and families: a key with its default, constraint and meaning; a method family with its keys.

The shared keys live at the top of ``[tool.flwr.app.config]``; each family's keys live in its own
nested table (``[tool.flwr.app.config.sonmf]``), which Flower flattens to ``"sonmf.mu"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fedmf_app.data.needs import DataNeeds
from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT
from fedmf_app.options.constraints import Constraint

__all__ = ["ConfigError", "Family", "Option", "convert", "flatten"]


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
    options : tuple of Option
        Its keys, each starting with ``name + "."``.
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
    options: tuple[Option, ...]
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
