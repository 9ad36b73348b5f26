"""The one error type of the data layer."""

from __future__ import annotations

__all__ = ["DataError"]


class DataError(ValueError):
    """A client's data cannot be used (missing, unreadable, malformed, or inconsistent)."""
