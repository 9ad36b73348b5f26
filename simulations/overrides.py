"""The one reader of the drivers' ``KEY=VALUE`` run-config overrides (no Flower, no app state)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_overrides"]


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Run-config overrides from ``key=value`` strings (values parsed as JSON where they parse).

    Parameters
    ----------
    pairs : list of str

    Returns
    -------
    dict
        ``2.0`` and ``5`` become numbers, ``true`` a boolean, any other text stays text.

    Raises
    ------
    ValueError
        A pair without ``=``, naming it.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"{pair!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out
