"""A view stored sparse stays sparse through loading and preparation, with the dense numbers."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from fedmf_app.data.missing_views import fill_missing_rows, missing_view_mask
from fedmf_app.data.multiview import load_single_view
from fedmf_app.data.preprocess import is_sparse_nonnegative, normalise_rows, prepare_view
from fedmf_app.registry import FAMILIES, validate_run_config

from support.data import client_view

RNG = np.random.default_rng(11)


def _counts(n=60, d=80, density=0.05, seed=0):
    """A word-count-like view: nonnegative integers, 95 % zeros, an all-zero row."""
    x = sp.random(n, d, density=density, random_state=seed, format="csr", dtype=np.float64)
    x.data = np.ceil(x.data * 5)
    x = x.tolil()
    x[3, :] = 0
    return x.tocsr()


@pytest.mark.parametrize(
    ("negative", "rows", "view"),
    [("min-max", "auto", "frobenius"), ("shift", "l2", "none"), ("min-max", "none", "frobenius")],
)
def test_preparing_a_sparse_view_equals_preparing_it_dense(negative, rows, view):
    x = _counts()
    got = prepare_view(x, negative, view, "v", rows)
    want = prepare_view(x.toarray(), negative, view, "v", rows)
    assert sp.issparse(got) and got.nnz <= x.nnz
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-14, atol=0)


def test_a_sparse_view_with_negative_entries_is_shifted_dense():
    x = _counts()
    x.data[0] = -2.0
    for negative in ("min-max", "shift"):
        got = prepare_view(x, negative, "none", "v", "none")
        assert not sp.issparse(got) and got.min() >= 0.0
        np.testing.assert_allclose(got, prepare_view(x.toarray(), negative, "none", "v", "none"), rtol=1e-14)


def test_sparsity_test_and_row_normalisation_agree_with_dense():
    x = _counts()
    assert is_sparse_nonnegative(x) and is_sparse_nonnegative(x.toarray())
    dense_enough = _counts(density=0.5)
    assert not is_sparse_nonnegative(dense_enough) and not is_sparse_nonnegative(dense_enough.toarray())
    np.testing.assert_allclose(normalise_rows(x).toarray(), normalise_rows(x.toarray()), rtol=1e-14)


@pytest.mark.parametrize("fill", ["mean", "zeros"])
def test_filling_missing_rows_of_a_sparse_view_equals_filling_it_dense(fill):
    x = _counts()
    observed = missing_view_mask(60, 2, 0.4, seed=1)[:, 0]
    got = fill_missing_rows(x, observed, fill)
    assert sp.issparse(got)
    np.testing.assert_allclose(got.toarray(), fill_missing_rows(x.toarray(), observed, fill), rtol=1e-14)


def test_clients_get_large_sparse_views_as_csr_where_their_family_reads_them_and_the_rest_dense(tmp_path):
    views = [_counts(seed=0), _counts(d=50, seed=1)]
    truth = np.arange(60) % 3
    cell = np.array([[v.T.tocsc() for v in views]], dtype=object)
    scipy.io.savemat(tmp_path / "d.mat", {"X": cell, "Y": truth})
    cases = [(f.algorithms[0], 0, f.reads_sparse_views) for f in FAMILIES]
    cases += [(f.algorithms[0], 256, False) for f in FAMILIES]
    for algorithm, limit, sparse in cases:
        cfg = validate_run_config(
            {
                "algorithm": algorithm,
                "dataset": str(tmp_path / "d.mat"),
                "num-clients": 2,
                "sparse-view-min-mb": limit,
            }
        )
        for p, stored in enumerate(views):
            got = client_view(cfg, p).features
            assert sp.issparse(got) == sparse and got.shape == stored.shape
            dense = got.toarray() if sparse else got
            want = prepare_view(stored.toarray(), "min-max", cfg["view-normalisation"], "v", "auto")
            np.testing.assert_allclose(dense, want, rtol=1e-13, atol=0)


def test_a_node_file_written_by_save_npz_is_one_sparse_view(tmp_path):
    x = _counts()
    sp.save_npz(tmp_path / "mine.npz", x)
    features, labels, ids = load_single_view(str(tmp_path / "mine.npz"))
    assert sp.issparse(features) and labels is None and ids is None and features.shape == x.shape
    np.testing.assert_array_equal(features.toarray(), x.toarray())
