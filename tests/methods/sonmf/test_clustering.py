"""Paper A's final read of ``V``: the geometry each rule gives the columns."""

import numpy as np
import pytest

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.methods.sonmf.clustering import cluster_columns, hellinger_rows


def _topics(rng, n_per=40, r=6, k=3):
    """Columns of V drawn around k topic profiles, each sample at a length spread over 100x."""
    profiles = rng.dirichlet(np.full(r, 0.3), size=k)
    labels = np.repeat(np.arange(k), n_per)
    shares = np.vstack([rng.dirichlet(200 * profiles[c]) for c in labels])
    lengths = np.exp(rng.uniform(0, np.log(100), size=labels.size))
    return (shares * lengths[:, None]).T, labels


def test_hellinger_points_are_the_square_roots_of_the_proportions_and_keep_zero_rows():
    rng = np.random.default_rng(0)
    points = rng.gamma(0.5, size=(20, 5))
    points[3] = 0.0
    out = hellinger_rows(points)
    nonzero = np.arange(20) != 3
    np.testing.assert_allclose(np.linalg.norm(out[nonzero], axis=1), 1.0)
    np.testing.assert_array_equal(out[3], 0.0)
    p, q = points[0] / points[0].sum(), points[1] / points[1].sum()
    hellinger = np.sqrt(0.5 * np.sum((np.sqrt(p) - np.sqrt(q)) ** 2))
    np.testing.assert_allclose(np.linalg.norm(out[0] - out[1]), np.sqrt(2) * hellinger)
    np.testing.assert_allclose(hellinger_rows(points * rng.uniform(0.1, 10, size=(20, 1))), out)


def test_hellinger_rejects_negative_loadings():
    with pytest.raises(ValueError, match="nonnegative"):
        hellinger_rows(np.array([[1.0, -0.5]]))


def test_proportion_reads_recover_topics_that_document_length_hides_from_the_plain_read():
    accs = {"as-is": [], "unit-norm": [], "hellinger": []}
    for seed in range(3):
        v, labels = _topics(np.random.default_rng(seed))
        for rule, out in accs.items():
            found = cluster_columns(v, 3, rule, np.random.default_rng(seed))
            out.append(clustering_scores(labels, found)["acc"])
    assert min(accs["hellinger"]) > 0.95 and min(accs["unit-norm"]) > 0.9
    assert np.mean(accs["as-is"]) < 0.8  # k-means on the raw columns groups by length


def test_unknown_read_is_refused():
    with pytest.raises(ValueError, match="cluster-columns"):
        cluster_columns(np.ones((2, 4)), 2, "argmax", np.random.default_rng(0))
