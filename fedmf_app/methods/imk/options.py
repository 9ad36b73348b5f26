"""Paper B's FMVC-IMK as a family of the run config (``[tool.flwr.app.config.imk]``): its
algorithms, rounds and cross-key check; its keys are the fields of
:class:`~fedmf_app.methods.imk.params.IMKOptions`."""

from __future__ import annotations

from typing import Any

from fedmf_app.methods.imk.params import IMKOptions
from fedmf_app.options.schema import ConfigError, Family

__all__ = ["FAMILY"]


def _check(cfg: dict[str, Any]) -> None:
    """The masked graph sum needs two clients."""
    if cfg["num-clients"] == 1:
        raise ConfigError(
            "fmvc-imk needs 'num-clients' >= 2: the server learns only the masked sum of the graphs, "
            "and with one client the sum is its own graph"
        )


FAMILY = Family(
    name="imk",
    title="paper B: FMVC-IMK, integrated matrix factorisation and k-means",
    algorithms=("fmvc-imk",),
    num_server_rounds=100,
    params=IMKOptions,
    check=_check,
    reads_sparse_views=True,
)
