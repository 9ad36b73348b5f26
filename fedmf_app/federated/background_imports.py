"""Import the modules a run needs later on a thread, while the server waits for its clients.

A run's first exchange (the handshake) waits for every client: several seconds in a deployment,
where each ClientApp process starts afresh. The modules the server needs only once the clients
have answered (scikit-learn for the scores and the server's k-means, matplotlib for the figures:
about 2 s of CPU) would otherwise load on the run's path, or before the first message.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from logging import DEBUG

from flwr.common.logger import log

__all__ = ["import_in_background"]


def import_in_background(modules: Sequence[str]) -> threading.Thread:
    """Start importing ``modules`` on a daemon thread; ``join()`` it before using them.

    Joining before any of them (or anything they import) is used keeps the run's thread from
    importing the same packages at the same time. A module that fails to import here is left to
    fail where the run imports it, with its own error.

    Parameters
    ----------
    modules : sequence of str
        Dotted module names.

    Returns
    -------
    threading.Thread
        The started thread.
    """

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                log(DEBUG, "background import of %s failed: %s", name, exc)

    thread = threading.Thread(target=load, name="fedmf-later-imports", daemon=True)
    thread.start()
    return thread
