"""A small seeded multi-view clustered data set for the FMVC-IMK tests."""

import numpy as np

from fedmf_app.kernels.imk import preprocess_view


def clustered_views(n=120, k=3, dims=(8, 12, 6), noise=1.5, seed=0):
    """Views ``x_m = centre_m[y] + noise * N(0, I)``, preprocessed (z-score, unit norm); and ``y``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    views = []
    for d in dims:
        centres = 2.0 * rng.normal(size=(k, d))
        views.append(preprocess_view(centres[y] + noise * rng.normal(size=(n, d)), "zscore", True))
    return views, y
