"""Paper A's family as a family of the run config (``[tool.flwr.app.config.sonmf]``).

The family is the proposed method ``fedsonmf`` (with its ablation variants, which are values of
its keys), and the adapted baselines ``fedmavg``, ``fedmgs`` and ``fedvra-u``. Its keys are the
fields of :class:`~fedmf_app.methods.sonmf.params.SONMFOptions`.
"""

from __future__ import annotations

from fedmf_app.data.synthetic import planted_rank
from fedmf_app.methods.sonmf.params import SONMFOptions
from fedmf_app.options.schema import Family

__all__ = ["FAMILY"]

FAMILY = Family(
    name="sonmf",
    title="paper A: federated sparse orthogonal NMF, its adapted baselines and ablations",
    algorithms=("fedsonmf", "fedmavg", "fedmgs", "fedvra-u"),
    num_server_rounds=100,
    params=SONMFOptions,
    reads_sparse_views=True,
    synthetic_rank=lambda cfg: planted_rank(cfg["sonmf.rank"]),
)
