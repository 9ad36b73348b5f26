"""What a method family needs from the data layer; the family says it, the data layer is told.

:func:`fedmf_app.data.load_client_view` takes a :class:`DataNeeds` (built by the family from the
run config: :meth:`fedmf_app.options.Family.data_needs`), so that the data layer reads no family's
keys and imports nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedmf_app.data.synthetic import AUTO_RANK_DEFAULT

__all__ = ["DataNeeds"]


@dataclass(frozen=True)
class DataNeeds:
    """What a family's clients need of their view.

    Attributes
    ----------
    sparse_views : bool
        They take a view stored sparse as a CSR matrix (when its dense form exceeds run config
        ``sparse-view-min-mb``); otherwise every view is handed over dense.
    fill_missing_rows : bool
        Under ``missing-rate > 0`` the data layer fills the rows the run's mask marks missing
        (run config ``missing-fill``); ``False``: the clients read the mask themselves.
    synthetic_rank : int
        The rank the synthetic generator plants (paper A: its ``sonmf.rank``).
    """

    sparse_views: bool = False
    fill_missing_rows: bool = True
    synthetic_rank: int = AUTO_RANK_DEFAULT
