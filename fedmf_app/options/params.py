"""The shared keys a method's Flower adapters read, typed, built once from the validated run config.

:func:`shared_params` turns the shared keys of a validated run config into one
:class:`SharedParams`; the base Strategy and client build it (``self.shared``) and the families'
adapters read it, never the config's keys. The keys themselves (defaults, constraints, help) are
:mod:`fedmf_app.options.shared`; each family's own keys have their ``params.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SharedParams", "shared_params"]


@dataclass(frozen=True)
class SharedParams:
    """The shared run-config keys that the families' adapters read (see docs/options.md).

    Attributes
    ----------
    algorithm : str
    dataset : str
        An embedded data set, ``synthetic``, or a data file's path.
    seed : int
        The run's seed, from which every seeded stream is drawn.
    num_clients : int
    heterogeneity : float
        ``h`` of the synthetic generator.
    missing_rate : float
    missing_views_dropped : int
    secure_aggregation : bool
    frac_bits : int
        ``secure-aggregation-frac-bits``: fractional bits of the masked sums' fixed point.
    round_timeout_s : float
    """

    algorithm: str
    dataset: str
    seed: int
    num_clients: int
    heterogeneity: float
    missing_rate: float
    missing_views_dropped: int
    secure_aggregation: bool
    frac_bits: int
    round_timeout_s: float


def shared_params(cfg: Mapping[str, Any]) -> SharedParams:
    """The shared keys of a validated run config, as :class:`SharedParams`.

    Parameters
    ----------
    cfg : mapping
        Output of :func:`fedmf_app.registry.validate_run_config`.

    Returns
    -------
    SharedParams
    """
    return SharedParams(
        algorithm=cfg["algorithm"],
        dataset=cfg["dataset"],
        seed=cfg["seed"],
        num_clients=cfg["num-clients"],
        heterogeneity=cfg["heterogeneity"],
        missing_rate=cfg["missing-rate"],
        missing_views_dropped=cfg["missing-views-dropped"],
        secure_aggregation=cfg["secure-aggregation"],
        frac_bits=cfg["secure-aggregation-frac-bits"],
        round_timeout_s=cfg["round-timeout-s"],
    )
