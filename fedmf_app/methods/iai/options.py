"""Paper C's FMVC-IAI as a family of the run config (``[tool.flwr.app.config.iai]``): its
algorithm, rounds and cross-key checks; its keys are the fields of
:class:`~fedmf_app.methods.iai.params.IAIParams`.
"""

from __future__ import annotations

from typing import Any

from fedmf_app.methods.iai.params import IAIParams
from fedmf_app.options.schema import ConfigError, Family

__all__ = ["FAMILY"]


def _check(cfg: dict[str, Any]) -> None:
    """Every sample's anchor graph needs one anchor more than its neighbours; `rank-spectral`
    clusters the rank-fused graph."""
    if cfg["iai.anchor-neighbours"] and cfg["iai.anchors"] < cfg["iai.anchor-neighbours"] + 1:
        raise ConfigError(
            f"run config 'iai.anchors' = {cfg['iai.anchors']} is invalid: must be >= "
            f"'iai.anchor-neighbours' + 1 = {cfg['iai.anchor-neighbours'] + 1}"
        )
    if cfg["iai.pseudo-labels"] == "rank-spectral" and cfg["iai.graph-update"] != "rank":
        raise ConfigError(
            f"run config 'iai.pseudo-labels' = 'rank-spectral' needs 'iai.graph-update' = 'rank' "
            f"(it clusters the rank-fused graph), got {cfg['iai.graph-update']!r}; set "
            "'iai.pseudo-labels' to 'anchor-kmeans' with the fused graph updates"
        )


FAMILY = Family(
    name="iai",
    title="paper C: FMVC-IAI, imputation, graph autoencoders and anchor graphs",
    algorithms=("fmvc-iai",),
    num_server_rounds=6,
    params=IAIParams,
    check=_check,
    reads_missing_mask=True,
    reads_sparse_views=True,
)
