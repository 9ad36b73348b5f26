"""Small seeded data for the tests: clustered multi-view data (the benchmarks' one generator,
prepared), sparse counts, run configs, client views loaded as the ClientApp loads them; where the
development data sets are."""

import os
from pathlib import Path

import numpy as np

from fedmf_app.data import load_client_view
from fedmf_app.methods.imk.client_updates import preprocess_view
from fedmf_app.registry import data_needs
from simulations.clustered_data import clustered_views as generate_views

#: The development data sets: ../shared/data beside the project root, or ``FEDMF_DEV_DATA`` (e.g. from
#: a git worktree elsewhere). Tests that read them skip where a file is absent.
DEV_DATA = Path(os.environ.get("FEDMF_DEV_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def clustered_views(n=120, k=3, dims=(8, 12, 6), noise=1.5, seed=0):
    """The one generator's Gaussian clusters (:func:`simulations.clustered_data.clustered_views`),
    each view z-scored and scaled to unit Frobenius norm (FMVC-IMK's preparation).

    Parameters
    ----------
    n, k : int
        Samples and classes.
    dims : tuple of int
        Features of each view.
    noise : float
    seed : int

    Returns
    -------
    views : list of ndarray, shapes (n, d_m)
    y : ndarray, shape (n,)
    """
    views, y = generate_views(n, k, dims, seed, noise=noise)
    return [preprocess_view(x, "zscore", True) for x in views], y


def sparse_counts(n=120, d=200, k=3, seed=0):
    """Nonnegative weighted-count views with >= 90 % zeros and cluster-specific vocabularies.

    Returns
    -------
    views : list of 3 ndarray, shape (n, d)
    y : ndarray, shape (n,)
    """
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


#: A small paper A run: three synthetic views of 40 samples (add ``num-server-rounds``).
SONMF_SMALL = {"num-clients": 3, "num-samples": 40, "heterogeneity": 0.6, "sonmf.local-steps": 3, "seed": 5}

#: A short FMVC-IMK run (the kernel tests' scale).
IMK_BASE = {
    "algorithm": "fmvc-imk",
    "num-clients": 3,
    "num-clusters": 3,
    "num-samples": 60,
    "num-server-rounds": 6,
    "imk.tol": 0.0,
    "seed": 2,
}

#: A small, fast FMVC-IAI run.
IAI_SMALL = {
    "algorithm": "fmvc-iai",
    "num-clients": 3,
    "num-samples": 120,
    "view-dim": 12,
    "num-clusters": 3,
    "missing-rate": 0.5,
    "iai.knn": 5,
    "iai.anchors": 30,
    "iai.anchor-neighbours": 4,
    "iai.ae-hidden": "16",
    "iai.embed-dim": 8,
    "iai.ae-epochs": 3,
    "iai.epochs": 3,
    "num-server-rounds": 4,
    "seed": 2,
}


#: One small run per family of the registry (the cross-family tests take them): a family added to
#: :data:`fedmf_app.methods.FAMILY_NAMES` adds its run here (``tests/methods/test_contract.py``).
SMALL_RUNS: dict[str, dict] = {
    "sonmf": {**SONMF_SMALL, "algorithm": "fedsonmf", "num-server-rounds": 6},
    "imk": IMK_BASE,
    "iai": IAI_SMALL,
}


def labelled_file(tmp_path, n=90, dims=(8, 12, 6), seed=0, name="clustered.npz", label_key="y"):
    """:func:`clustered_views` as a multi-view ``.npz`` (views ``X_0``, ``X_1``, ...) with labels.

    Returns
    -------
    path : str
    y : ndarray, shape (n,)
    """
    views, y = clustered_views(n=n, k=3, dims=dims, seed=seed)
    path = tmp_path / name
    np.savez(path, **{f"X_{m}": v for m, v in enumerate(views)}, **{label_key: y})
    return str(path), y


def iai_labelled_file(tmp_path):
    """Three clustered views of :data:`IAI_SMALL`'s size with ground truth ``gnd``; its path."""
    views, y = clustered_views(n=IAI_SMALL["num-samples"], k=3, dims=(12, 12, 12), seed=2)
    path = tmp_path / "clustered-iai.npz"
    np.savez(path, **{f"X{m + 1}": v for m, v in enumerate(views)}, gnd=y)
    return str(path)


def sparse_file(tmp_path):
    """:func:`sparse_counts` as a multi-view ``.npz`` with labels (stored dense); its path."""
    views, y = sparse_counts(n=90)
    path = tmp_path / "counts.npz"
    np.savez(path, X_0=views[0], X_1=views[1], X_2=views[2], y=y)
    return str(path)


def client_view(cfg, partition_id, node_config=None, **kwargs):
    """:func:`fedmf_app.data.load_client_view` told what the run's family needs, as the ClientApp
    tells it (:func:`fedmf_app.registry.data_needs`)."""
    return load_client_view(cfg, partition_id, node_config, needs=data_needs(cfg), **kwargs)


def view_csv_files(folder, n=90, dims=(8, 12, 6), seed=0):
    """:func:`clustered_views` (made nonnegative) as one CSV file per view with a ``label``
    column, ``view0.csv``, ``view1.csv``, ...; the paths and the labels.

    Returns
    -------
    paths : list of Path
    y : ndarray, shape (n,)
    """
    views, y = clustered_views(n=n, k=3, dims=dims, seed=seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for m, view in enumerate(views):
        path = folder / f"view{m}.csv"
        header = ",".join([f"f{j}" for j in range(view.shape[1])] + ["label"])
        rows = [",".join([*(f"{v:.17g}" for v in row - view.min()), str(c)]) for row, c in zip(view, y)]
        path.write_text("\n".join([header, *rows]) + "\n")
        paths.append(path)
    return paths, y
