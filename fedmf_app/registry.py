"""The one registry of algorithms: run-config ``algorithm`` -> server Strategy and client classes.

Classes are imported lazily by dotted path, so a client process (one per message in a deployment)
imports only its own algorithm's client code.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from fedmf_app.config import ALGORITHM_NAMES

__all__ = ["ALGORITHMS", "client_class", "strategy_class"]

#: algorithm -> (strategy "module:Class", client "module:Class")
ALGORITHMS: dict[str, tuple[str, str]] = {
    "fedsonmf": (
        "fedmf_app.strategies.fedsonmf:FedSONMFStrategy",
        "fedmf_app.clients.fedsonmf:FedSONMFClient",
    ),
    "fedmavg": (
        "fedmf_app.strategies.adapted:FedMAvgStrategy",
        "fedmf_app.clients.adapted:FedMAvgClient",
    ),
    "fedmgs": (
        "fedmf_app.strategies.adapted:FedMGSStrategy",
        "fedmf_app.clients.adapted:FedMGSClient",
    ),
    "fedvra-u": (
        "fedmf_app.strategies.adapted:FedVRAUStrategy",
        "fedmf_app.clients.adapted:FedVRAUClient",
    ),
    "fmvc-imk": (
        "fedmf_app.strategies.fmvc_imk:FMVCIMKStrategy",
        "fedmf_app.clients.fmvc_imk:FMVCIMKClient",
    ),
}

assert tuple(ALGORITHMS) == ALGORITHM_NAMES, "registry and config disagree on algorithm names"


def _load(path: str) -> Any:
    module, name = path.split(":")
    return getattr(import_module(module), name)


def strategy_class(algorithm: str) -> Any:
    """Strategy class of ``algorithm`` (a validated name).

    Parameters
    ----------
    algorithm : str

    Returns
    -------
    type
    """
    return _load(ALGORITHMS[algorithm][0])


def client_class(algorithm: str) -> Any:
    """NumPyClient class of ``algorithm`` (a validated name).

    Parameters
    ----------
    algorithm : str

    Returns
    -------
    type
    """
    return _load(ALGORITHMS[algorithm][1])
