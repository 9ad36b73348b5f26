"""The one registry of algorithms: run-config ``algorithm`` -> server Strategy and client classes.

Classes are imported lazily by dotted path, so a client process (one per message in a deployment)
imports only its own algorithm's client code.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from fedmf_app.options.run_config import ALGORITHM_NAMES

__all__ = ["ALGORITHMS", "client_class", "strategy_class"]

#: algorithm -> (strategy "module:Class", client "module:Class")
ALGORITHMS: dict[str, tuple[str, str]] = {
    "fedsonmf": (
        "fedmf_app.methods.sonmf.strategy:FedSONMFStrategy",
        "fedmf_app.methods.sonmf.client:FedSONMFClient",
    ),
    "fedmavg": (
        "fedmf_app.methods.sonmf.strategy:FedMAvgStrategy",
        "fedmf_app.methods.sonmf.client:FedMAvgClient",
    ),
    "fedmgs": (
        "fedmf_app.methods.sonmf.strategy:FedMGSStrategy",
        "fedmf_app.methods.sonmf.client:FedMGSClient",
    ),
    "fedvra-u": (
        "fedmf_app.methods.sonmf.strategy:FedVRAUStrategy",
        "fedmf_app.methods.sonmf.client:FedVRAUClient",
    ),
    "fmvc-imk": (
        "fedmf_app.methods.imk.strategy:FMVCIMKStrategy",
        "fedmf_app.methods.imk.client:FMVCIMKClient",
    ),
    "fmvc-iai": (
        "fedmf_app.methods.iai.strategy:FMVCIAIStrategy",
        "fedmf_app.methods.iai.client:FMVCIAIClient",
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
