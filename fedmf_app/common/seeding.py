"""Independent, reproducible random streams derived from one run seed.

Every consumer (the shared synthetic factor, one client's view, one client's initial basis, the
server's initial V) draws from its own ``numpy.random.Generator`` built from the run seed and a
fixed spawn key, so that a client can rebuild exactly its own part from ``(seed, partition id)``
without knowing how many other clients exist.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

__all__ = ["Stream", "rng_for"]


class Stream(IntEnum):
    """Purpose of a random stream (part of its spawn key; never renumber)."""

    SYNTHETIC_SHARED = 0
    SYNTHETIC_VIEW = 1
    CLIENT_INIT = 2
    SERVER_INIT = 3
    FINAL_CLUSTERING = 4
    MISSING_VIEWS = 10
    IAI_CLIENT = 11
    IAI_SERVER = 12
    NOISY_MNIST = 13
    SECURE_AGG_ROUNDING = 14
    IMK_ANCHORS = 15
    SONMF_SKETCH = 16


def rng_for(seed: int, stream: Stream, index: int = 0, *more: int) -> np.random.Generator:
    """Generator for ``(seed, stream, index)``.

    Parameters
    ----------
    seed : int
        Run seed (nonnegative).
    stream : Stream
        What the numbers are for.
    index : int
        Sub-stream, e.g. the client's partition id.
    *more : int
        Further sub-stream indices, e.g. the round (none: the stream of ``(seed, stream, index)``).

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(int(stream), index, *more)))
