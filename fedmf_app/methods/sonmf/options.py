"""Paper A's family as a family of the run config (``[tool.flwr.app.config.sonmf]``).

The family is the proposed method ``fedsonmf`` (with its ablation variants, which are values of
its keys), and the adapted baselines ``fedmavg``, ``fedmgs`` and ``fedvra-u``. Its keys are the
fields of :class:`~fedmf_app.methods.sonmf.params.SONMFOptions`.
"""

from __future__ import annotations

from typing import Any

from fedmf_app.data.synthetic import planted_rank
from fedmf_app.methods.sonmf.params import SONMFOptions
from fedmf_app.options.schema import ConfigError, Family

__all__ = ["FAMILY"]


def _check(cfg: dict[str, Any]) -> None:
    """On synthetic data the rank is planted in views of ``view-dim`` features."""
    rank = planted_rank(cfg["sonmf.rank"])
    if cfg["dataset"] == "synthetic" and rank > cfg["view-dim"]:
        raise ConfigError(
            f"run config 'sonmf.rank' = {rank} is invalid: must be <= 'view-dim' = "
            f"{cfg['view-dim']} (a nonnegative orthonormal basis U_p needs d_p >= r)"
        )


FAMILY = Family(
    name="sonmf",
    title="paper A: federated sparse orthogonal NMF, its adapted baselines and ablations",
    algorithms=("fedsonmf", "fedmavg", "fedmgs", "fedvra-u"),
    num_server_rounds=100,
    params=SONMFOptions,
    check=_check,
    reads_sparse_views=True,
    synthetic_rank=lambda cfg: planted_rank(cfg["sonmf.rank"]),
)
