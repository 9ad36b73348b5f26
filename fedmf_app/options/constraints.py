"""Constraint objects: each checks a run-config value and says, in words, what it allows.

Modelled on scikit-learn's ``_parameter_constraints``: one object is both the check and the text
of the error message, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Boolean", "Constraint", "Interval", "OneOf", "PositiveIntegers", "Text"]


class Constraint:
    """What values a key accepts.

    Attributes
    ----------
    kind : type
        ``int``, ``float``, ``bool`` or ``str``: the value is converted to it before the check.
    """

    kind: type = str

    def is_satisfied_by(self, value: Any) -> bool:
        """Whether the (converted) ``value`` is allowed."""
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Interval(Constraint):
    """A number in an interval.

    Parameters
    ----------
    kind : {int, float}
    low, high : float or None
        Bounds; ``None`` for none.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.
    text : str, optional
        Description to show instead of the generated one (when another key bounds the value).
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    text: str = ""

    def is_satisfied_by(self, value: Any) -> bool:
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and (value < self.low if left else value <= self.low):
            return False
        return not (self.high is not None and (value > self.high if right else value >= self.high))

    def __str__(self) -> str:
        if self.text:
            return self.text
        noun = "an integer" if self.kind is int else "a number"
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.high is None:
            return f"{noun} {'>=' if left else '>'} {self.low:g}"
        if self.low is None:
            return f"{noun} {'<=' if right else '<'} {self.high:g}"
        return f"{noun} in {'[' if left else '('}{self.low:g}, {self.high:g}{']' if right else ')'}"


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of a fixed set of strings.

    Parameters
    ----------
    values : tuple of str
    """

    values: tuple[str, ...]

    def is_satisfied_by(self, value: Any) -> bool:
        return value in self.values

    def __str__(self) -> str:
        return "one of: " + ", ".join(self.values)


class Boolean(Constraint):
    """``true`` or ``false``."""

    kind = bool

    def is_satisfied_by(self, value: Any) -> bool:
        return True

    def __str__(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text(Constraint):
    """A string that passes ``check`` (any string by default).

    Parameters
    ----------
    text : str
        What the string must be, in words.
    check : callable, optional
        Predicate on the string.
    """

    text: str
    check: Callable[[str], bool] | None = None

    def is_satisfied_by(self, value: Any) -> bool:
        return self.check is None or self.check(value)

    def __str__(self) -> str:
        return self.text


class PositiveIntegers(Constraint):
    """Comma-separated positive integers, e.g. ``"256,128"``."""

    def is_satisfied_by(self, value: Any) -> bool:
        return all(p.strip().isdigit() and int(p) > 0 for p in value.split(","))

    def __str__(self) -> str:
        return "comma-separated positive integers"
