"""The time left, for the per-round progress line.

:func:`time_left` estimates it from the rounds finished so far: the median wall time of the last
few (a set-up round, often slower, leaves the estimate once later rounds exist) times the rounds
left. For a method with a convergence stop it is an upper bound: the run may end sooner.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["format_seconds", "time_left"]

#: Rounds whose median wall time estimates the next ones.
RECENT_ROUNDS = 5


def format_seconds(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"`` or ``"1 h 02 min"``.

    Parameters
    ----------
    seconds : float

    Returns
    -------
    str
    """
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def time_left(walls: Sequence[float], done: int, total: int) -> str:
    """``"; 3 rounds left, ETA 12 s"``, or ``""`` after the last round.

    Parameters
    ----------
    walls : sequence of float
        Wall seconds of the rounds run so far by this server, in order (the latest last).
    done : int
        The round just finished.
    total : int
        The run's last round.

    Returns
    -------
    str
    """
    left = total - done
    if left <= 0 or not walls:
        return ""
    recent = list(walls[1:] if len(walls) > 1 else walls)[-RECENT_ROUNDS:]
    eta = format_seconds(left * statistics.median(recent))
    return f"; {left} round{'s' if left > 1 else ''} left, ETA {eta}"
