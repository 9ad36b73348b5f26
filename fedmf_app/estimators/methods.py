"""One estimator per method family: paper A's federated sparse ONMF (and its compared methods),
paper B's FMVC-IMK, paper C's FMVC-IAI. Their parameters are generated from the run config
(:mod:`fedmf_app.estimators.base`); each adds the method's factors or embeddings."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fedmf_app.estimators.base import FederatedClusterer
from fedmf_app.federated.saved_state import load_state
from fedmf_app.in_process import InProcessFederation

__all__ = ["FMVCIAI", "FMVCIMK", "FedSONMF"]


class FedSONMF(FederatedClusterer):
    """Paper A's federated sparse orthogonal NMF, ``X_p ~ U_p V`` with one shared ``V``.

    Client ``p`` holds view ``p`` and its own orthonormal nonnegative basis ``U_p``; the server
    holds ``V``. The clustering is k-means on the columns of the final ``V``. ``algorithm`` also
    runs the compared methods (``fedmavg``, ``fedmgs``, ``fedvra-u``) on the same model. Every
    parameter is a run-config key (``docs/options.md``): paper A's ``sonmf.*`` keys without their
    prefix, and the shared ones of :data:`~fedmf_app.estimators.base.SHARED_KEYS`.

    Attributes
    ----------
    embedding_ : ndarray, shape (n_samples, rank)
        The final ``V`` transposed (the samples' coefficients).
    components_ : list of ndarray, each shape (n_features_p, rank)
        Each client's final basis ``U_p``.
    labels_, history_, result_, n_views_, n_rounds_
        See :class:`~fedmf_app.estimators.base.FederatedClusterer`.
    """

    algorithm_choices: ClassVar[tuple[str, ...]] = ("fedsonmf", "fedmavg", "fedmgs", "fedvra-u")

    def _fitted_factors(self, federation: InProcessFederation) -> None:
        rounds = federation.strategy.recorder.data["rounds"][-1]["round"]
        self.embedding_ = np.array(federation.strategy.v.T)
        self.components_ = [
            load_state(c.context, c.cfg, c.state_name, rounds + 1)["u"] for c in federation.clients
        ]


class FMVCIMK(FederatedClusterer):
    """Paper B's FMVC-IMK: matrix factorisation and k-means in one step, with a graph regulariser.

    The server holds the global cluster indicator ``H``; the labels are read from it. Every
    parameter is a run-config key (``docs/options.md``): paper B's ``imk.*`` keys without their
    prefix (``imk.lambda`` is ``lam``), and the shared ones of
    :data:`~fedmf_app.estimators.base.SHARED_KEYS`.

    Attributes
    ----------
    embedding_ : ndarray, shape (n_samples, n_clusters)
        The final global ``H``.
    labels_, history_, result_, n_views_, n_rounds_
        See :class:`~fedmf_app.estimators.base.FederatedClusterer`.
    """

    algorithm_choices: ClassVar[tuple[str, ...]] = ("fmvc-imk",)

    def _fitted_factors(self, federation: InProcessFederation) -> None:
        self.embedding_ = np.array(federation.strategy.h)


class FMVCIAI(FederatedClusterer):
    """Paper C's FMVC-IAI: graph clustering of incomplete views (autoencoders, feature
    propagation, graph attention, fused anchor graphs).

    The labels are the server's last pseudo-labels ``Y``. Every parameter is a run-config key
    (``docs/options.md``): paper C's ``iai.*`` keys without their prefix, and the shared ones of
    :data:`~fedmf_app.estimators.base.SHARED_KEYS` (``missing_rate`` drops views as the papers'
    protocol does).

    Attributes
    ----------
    target_ : ndarray, shape (n_samples, n_clusters)
        The last target distribution ``P`` the server sent the clients.
    neighbours_ : ndarray of int, shape (n_samples, k)
        The last global graph ``A_g`` as neighbour indices (``-1`` padded).
    labels_, history_, result_, n_views_, n_rounds_
        See :class:`~fedmf_app.estimators.base.FederatedClusterer`.
    """

    algorithm_choices: ClassVar[tuple[str, ...]] = ("fmvc-iai",)

    def _fitted_factors(self, federation: InProcessFederation) -> None:
        state = federation.strategy.state
        self.target_ = None if state.target is None else np.array(state.target)
        self.neighbours_ = np.array(state.neighbours)
