"""Approximate neighbour search (faiss IVF): lists without the query, recall against the exact
search, and the switch between the two in the callers."""

import numpy as np
import pytest

from fedmf_app.common.graphs import knn_indices
from fedmf_app.common.neighbour_search import ivf_neighbours, without_queries
from fedmf_app.methods.iai.sample_graphs import imputed_lists, observed_knn


def _blobs(n: int, d: int = 8, k: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    centres = 10.0 * rng.normal(size=(k, d))
    return centres[labels] + rng.normal(size=(n, d)), labels


def _recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([np.intersect1d(a, b).size / b.size for a, b in zip(found, exact)]))


def test_ivf_lists_other_rows_nearest_first_with_high_recall():
    x, labels = _blobs(4000)
    found = ivf_neighbours(x, 15)
    exact = knn_indices(x, 15)
    assert found.shape == (4000, 15) and found.dtype == np.int64
    assert not (found == np.arange(4000)[:, None]).any()
    assert (found >= 0).all()
    assert _recall(found, exact) > 0.95
    assert (labels[found] == labels[:, None]).mean() > 0.99
    dist = np.linalg.norm(x[found] - x[:, None, :], axis=2)
    assert (np.diff(dist, axis=1) >= -1e-4).all()  # nearest first (single-precision distances)


def test_ivf_queries_are_the_rows_of_the_full_search_and_repeat():
    x, _ = _blobs(3000)
    rows = np.array([5, 17, 2999, 0])
    full = ivf_neighbours(x, 10)
    assert np.array_equal(ivf_neighbours(x, 10, rows=rows), full[rows])
    assert np.array_equal(ivf_neighbours(x, 10), full)


def test_without_queries_drops_the_query_wherever_it_stands_or_else_the_last():
    found = np.array([[7, 3, 9], [4, 5, 6]])
    out = without_queries(found, np.array([3, 8]), 2)
    assert out.tolist() == [[7, 9], [4, 5]]


def test_knn_indices_switches_to_the_index_above_exact_rows():
    x, _ = _blobs(2500)
    exact = knn_indices(x, 12)
    assert np.array_equal(knn_indices(x, 12, exact_rows=2500), exact)
    approximate = knn_indices(x, 12, exact_rows=2499)
    assert np.array_equal(approximate, ivf_neighbours(x, 12))
    assert _recall(approximate, exact) > 0.95


@pytest.mark.parametrize("exact_rows", [None, 0])
def test_imputed_and_observed_lists_keep_their_contract_when_approximate(exact_rows):
    x, labels = _blobs(3000, seed=1)
    observed = np.random.default_rng(2).random(3000) > 0.3
    lists = imputed_lists(x, observed, 20, exact_rows=exact_rows)
    assert not (lists == np.arange(3000)[:, None]).any()
    own = observed_knn(x, observed, 20, exact_rows)
    assert np.array_equal(lists[observed], own[observed])
    assert observed[own[observed]].all() and (own[~observed] == -1).all()
    assert (labels[lists] == labels[:, None]).mean() > 0.99
    if exact_rows == 0:
        exact = imputed_lists(x, observed, 20)
        assert _recall(lists, exact) > 0.95


def test_ivf_lists_do_not_depend_on_the_thread_count():
    from threadpoolctl import threadpool_limits

    x, _ = _blobs(3000, d=20)
    with threadpool_limits(1):
        one = ivf_neighbours(x, 10)
    with threadpool_limits(2):
        two = ivf_neighbours(x, 10)
    assert np.array_equal(one, two)
