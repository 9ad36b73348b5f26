"""FMVC-IMK test helpers: a small seeded clustered multi-view data set and an in-process run."""

import numpy as np
from flwr.server import SimpleClientManager

from fedmf_app.data import load_client_view
from fedmf_app.federated.results import RunRecorder
from fedmf_app.methods.imk.client_updates import preprocess_view
from fedmf_app.options.run_config import validate_run_config
from fedmf_app.registry import client_class, strategy_class

from fakes import ClientProxyToNumPy, client_context, run_evaluate_round


def clustered_views(n=120, k=3, dims=(8, 12, 6), noise=1.5, seed=0):
    """Views ``x_m = centre_m[y] + noise * N(0, I)``, preprocessed (z-score, unit norm); and ``y``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    views = []
    for d in dims:
        centres = 2.0 * rng.normal(size=(k, d))
        views.append(preprocess_view(centres[y] + noise * rng.normal(size=(n, d)), "zscore", True))
    return views, y


def sparse_counts(n=120, d=200, k=3, seed=0):
    """Nonnegative weighted-count views with >= 90 % zeros and cluster-specific vocabularies."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    views = []
    for _ in range(3):
        rates = np.full((k, d), 0.02)
        for c in range(k):
            rates[c, rng.choice(d, 10, replace=False)] = 1.5
        counts = rng.poisson(rates[y])  # weighted counts (tf-idf like): no tied distances
        views.append(counts * np.exp(0.3 * rng.normal(size=counts.shape)))
    return views, y


BASE = {
    "algorithm": "fmvc-imk",
    "num-clients": 3,
    "num-clusters": 3,
    "num-samples": 60,
    "num-server-rounds": 6,
    "imk.tol": 0.0,
    "seed": 2,
}


def labelled_file(tmp_path):
    """The clustered views of the kernel tests as a multi-view ``.npz`` with labels."""
    views, y = clustered_views(n=90)
    path = tmp_path / "clustered.npz"
    np.savez(path, X_0=views[0], X_1=views[1], X_2=views[2], y=y)
    return str(path), y


def sparse_file(tmp_path):
    """:func:`sparse_counts` as a multi-view ``.npz`` with labels (stored dense)."""
    views, y = sparse_counts(n=90)
    path = tmp_path / "counts.npz"
    np.savez(path, X_0=views[0], X_1=views[1], X_2=views[2], y=y)
    return str(path)


def run(tmp_path, **overrides):
    cfg = validate_run_config({**BASE, **overrides})
    strategy = strategy_class("fmvc-imk")(cfg, RunRecorder(tmp_path, "run", cfg))
    manager = SimpleClientManager()
    clients = {}
    for p in reversed(range(cfg["num-clients"])):  # node order != partition order
        client = client_class("fmvc-imk")(
            client_context(cfg, p, cfg["num-clients"]), cfg, p, cfg["num-clients"], load_client_view(cfg, p)
        )
        manager.register(ClientProxyToNumPy(f"node-{p}", client))
        clients[f"node-{p}"] = client
    parameters = strategy.initialize_parameters(client_manager=manager)
    for s in range(1, cfg["num-server-rounds"] + 1):
        instructions = strategy.configure_fit(server_round=s, parameters=parameters, client_manager=manager)
        results = [(proxy, proxy.fit(ins, None, s)) for proxy, ins in instructions]
        parameters = strategy.aggregate_fit(server_round=s, results=results, failures=[])[0]
        run_evaluate_round(strategy, manager, clients, parameters, s)
        if strategy.done:  # as fedmf_app.federated.server.ViewServer
            break
    return cfg, strategy, list(clients.values())
