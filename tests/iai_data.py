"""FMVC-IAI test helpers: a small, fast run config and a labelled data file for it."""

import numpy as np

from imk_data import clustered_views

SMALL = {
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
    "iai.gat-hidden": 8,
    "iai.gat-heads": 2,
    "iai.embedding-dim": 8,
    "iai.decoder-hidden": 16,
    "iai.epochs": 3,
    "num-server-rounds": 4,
    "seed": 2,
}


def labelled_file(tmp_path):
    """A ``.npz`` of three clustered views of SMALL's size, with ground truth ``gnd`` (the
    synthetic generator has none); returns its path."""
    views, y = clustered_views(n=SMALL["num-samples"], k=SMALL["num-clusters"], dims=(12, 12, 12), seed=2)
    path = tmp_path / "clustered.npz"
    np.savez(path, **{f"X{m + 1}": v for m, v in enumerate(views)}, gnd=y)
    return str(path)
