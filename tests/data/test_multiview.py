"""Multi-view loader: every supported layout reads to the same views and labels; bad input is named."""

import h5py
import numpy as np
import pytest
import scipy.io
import scipy.sparse

from fedmf_app.data import ClientView, DataError
from fedmf_app.data.multiview import load_multiview, load_single_view, require_labels
from fedmf_app.data.preprocess import prepare_view
from fedmf_app.data.readers import LABEL_KEYS
from fedmf_app.registry import validate_run_config

from support.data import DEV_DATA, client_view

N = 12
RNG = np.random.default_rng(0)
VIEWS = [RNG.integers(0, 9, size=(N, 5)).astype(np.uint8), RNG.random((N, 3)), RNG.random((N, 7))]
CLASSES = np.array([2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3])  # offset coding 2..6
EXPECTED = CLASSES - 2


def _cell(arrays, shape):
    cell = np.empty(shape, dtype=object)
    for i, a in enumerate(arrays):
        cell.flat[i] = a
    return cell


def _check(data, views=VIEWS, labels=EXPECTED, sparse=()):
    """``data`` holds ``views`` and ``labels``; the views numbered in ``sparse`` stay sparse."""
    assert len(data.views) == len(views)
    for i, (got, want) in enumerate(zip(data.views, views)):
        assert got.dtype == np.float64 and got.shape == want.shape
        assert scipy.sparse.issparse(got) == (i in sparse)
        got = got.toarray() if i in sparse else got
        np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float64))
    if labels is None:
        assert data.labels is None
    else:
        assert data.labels.dtype == np.int64
        np.testing.assert_array_equal(data.labels, labels)


@pytest.mark.parametrize("cell_shape", [(1, 3), (3, 1)])
@pytest.mark.parametrize("transposed", [(), (0,), (1, 2)])
def test_mat_v5_cells_in_both_shapes_and_views_in_both_orientations(tmp_path, cell_shape, transposed):
    stored = [v.T if i in transposed else v for i, v in enumerate(VIEWS)]
    scipy.io.savemat(tmp_path / "d.mat", {"X": _cell(stored, cell_shape), "Y": CLASSES[:, None]})
    _check(load_multiview(str(tmp_path / "d.mat")))


@pytest.mark.parametrize("key", LABEL_KEYS)
def test_every_label_key_and_row_or_column_labels(tmp_path, key):
    labels = CLASSES[None, :] if key in ("y", "labels") else CLASSES[:, None]
    scipy.io.savemat(tmp_path / "d.mat", {"fea": _cell(VIEWS, (1, 3)), key: labels, "per10": 1})
    _check(load_multiview(str(tmp_path / "d.mat")))


def test_sparse_views_and_a_cell_of_label_copies(tmp_path):
    sparse = [scipy.sparse.csc_matrix(VIEWS[0]), scipy.sparse.csc_matrix(VIEWS[1].T), VIEWS[2]]
    copies = _cell([CLASSES[:, None], CLASSES[:, None]], (1, 2))
    scipy.io.savemat(tmp_path / "d.mat", {"data": _cell(sparse, (3, 1)), "truelabel": copies})
    data = load_multiview(str(tmp_path / "d.mat"))
    _check(data, sparse=(0, 1))
    assert isinstance(data.views[0], scipy.sparse.csr_matrix)  # samples x features, row slices cheap
    assert data.views[0].nnz == np.count_nonzero(VIEWS[0])  # memory in proportion to the nonzeros


def test_zero_based_one_based_and_text_labels_map_to_the_same_codes(tmp_path):
    for i, coding in enumerate([EXPECTED, EXPECTED + 1, np.array(list("abcde"))[EXPECTED]]):
        np.savez(tmp_path / f"d{i}.npz", X_0=VIEWS[0], X_1=VIEWS[1], X_2=VIEWS[2], gt=coding)
        _check(load_multiview(str(tmp_path / f"d{i}.npz")))


def _write_v73(path, views, labels, sparse_view=None):
    """A MATLAB v7.3 file as MATLAB writes it: HDF5, arrays transposed, cells as references."""
    with h5py.File(path, "w", userblock_size=512) as f:
        refs = f.create_group("#refs#")
        cell = []
        for i, v in enumerate(views):
            if i == sparse_view:
                csc = scipy.sparse.csc_matrix(v)
                g = refs.create_group(f"v{i}")
                g.attrs["MATLAB_sparse"] = csc.shape[0]
                g["data"], g["ir"], g["jc"] = csc.data, csc.indices, csc.indptr
                cell.append(g.ref)
            else:
                cell.append(refs.create_dataset(f"v{i}", data=np.asarray(v).T).ref)
        f.create_dataset("X", data=np.array(cell, dtype=h5py.ref_dtype).reshape(len(views), 1))
        f.create_dataset("Y", data=labels.reshape(1, -1).astype(np.float64))


@pytest.mark.parametrize("sparse_view", [None, 1])
def test_mat_v73(tmp_path, sparse_view):
    stored = [VIEWS[0], VIEWS[1].T, VIEWS[2]]
    _write_v73(tmp_path / "d.mat", stored, CLASSES, sparse_view)
    _check(load_multiview(str(tmp_path / "d.mat")), sparse=() if sparse_view is None else (sparse_view,))


def test_views_without_labels(tmp_path):
    np.savez(tmp_path / "d.npz", view_0=VIEWS[0], view_1=VIEWS[1].T)
    data = load_multiview(str(tmp_path / "d.npz"))
    _check(data, VIEWS[:2], None)
    with pytest.raises(DataError, match="d.npz: no labels under any of the keys .*needs the ground"):
        require_labels(data)


def test_single_view_files(tmp_path):
    np.save(tmp_path / "v.npy", VIEWS[1])
    x, labels, ids = load_single_view(str(tmp_path / "v.npy"))
    np.testing.assert_array_equal(x, VIEWS[1])
    assert labels is None and ids is None
    rows = ["f1,f2,f3,label"] + [",".join(map(str, r)) + f",c{c}" for r, c in zip(VIEWS[1], CLASSES)]
    (tmp_path / "v.csv").write_text("\n".join(rows) + "\n")
    x, labels, ids = load_single_view(str(tmp_path / "v.csv"))
    np.testing.assert_array_equal(x, VIEWS[1])
    np.testing.assert_array_equal(labels, EXPECTED)
    (tmp_path / "plain.csv").write_text("\n".join(",".join(map(str, r)) for r in VIEWS[0]))
    np.testing.assert_array_equal(load_single_view(str(tmp_path / "plain.csv"))[0], VIEWS[0])


def _mat(tmp_path, views, **extra):
    scipy.io.savemat(tmp_path / "bad.mat", {"X": _cell(views, (1, len(views))), **extra})
    return str(tmp_path / "bad.mat")


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (
            lambda t: _mat(t, [VIEWS[0], VIEWS[1][:-1]], Y=CLASSES),
            r"bad.mat: view 1 \('X'\{2\}\) is 11x3: its sample count does not match the 12 labels under 'Y'",
        ),
        (
            lambda t: _mat(t, [VIEWS[0], VIEWS[1][:-1]]),
            r"bad.mat: the views do not share one sample count and there are no labels",
        ),
        (
            lambda t: _mat(t, [VIEWS[0], np.where(VIEWS[1] > 0.5, np.nan, VIEWS[1])], Y=CLASSES),
            r"bad.mat: view 1 \('X'\{2\}\) has \d+ NaN/inf value\(s\), the first at sample",
        ),
        (
            lambda t: _mat(t, [VIEWS[0], np.full((N, 2), np.inf)], Y=CLASSES),
            r"view 1 \('X'\{2\}\) has 24 NaN/inf value\(s\)",
        ),
        (
            lambda t: _mat(t, [VIEWS[0], np.zeros((N, 0))], Y=CLASSES),
            r"bad.mat: view 1 \('X'\{2\}\) is empty",
        ),
        (
            lambda t: str(scipy.io.savemat(t / "bad.mat", {"Z": VIEWS[0]}) or t / "bad.mat"),
            r"bad.mat: no views under any of the keys X, fea, data \(keys found: Z\)",
        ),
        (
            lambda t: _mat(t, VIEWS, truelabel=_cell([CLASSES, CLASSES[::-1]], (1, 2))),
            r"bad.mat: label cell 'truelabel' holds 2 label vectors that differ",
        ),
        (lambda t: _mat(t, VIEWS, Y=np.ones((N, 2))), r"bad.mat: labels 'Y' must be a vector"),
        (
            lambda t: (t / "bad.mat").write_text("not a mat file") and str(t / "bad.mat"),
            r"bad.mat: not a readable MATLAB file",
        ),
        (lambda t: str(t / "missing.mat"), r"missing.mat: no such file"),
        (
            lambda t: (t / "bad.txt").write_text("1") and str(t / "bad.txt"),
            r"bad.txt: unsupported file type '.txt'",
        ),
    ],
)
def test_bad_files_are_named_with_the_view_and_the_problem(tmp_path, make, fragment):
    path = make(tmp_path)
    with pytest.raises(DataError, match=fragment):
        load_multiview(path)


def test_a_node_file_must_hold_one_view(tmp_path):
    np.savez(tmp_path / "two.npz", X_0=VIEWS[0], X_1=VIEWS[1])
    one_each = "node config 'data-file' names one file per view, so each must hold exactly one"
    with pytest.raises(DataError, match=f"two.npz: holds 2 views; {one_each}"):
        load_single_view(str(tmp_path / "two.npz"))
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    with pytest.raises(DataError, match="bad.csv: holds a non-numeric feature value"):
        load_single_view(str(tmp_path / "bad.csv"))


def test_negative_views_are_refused_or_made_nonnegative():
    x = np.array([[-2.0, 1.0], [0.0, 3.0], [2.0, 3.0]])
    with pytest.raises(DataError, match="view 4 has negative values \\(minimum -2\\).*'negative-values'"):
        prepare_view(x, "error", "none", "view 4")
    np.testing.assert_allclose(prepare_view(x, "min-max", "none", "v"), [[0, 0], [0.5, 1], [1, 1]])
    np.testing.assert_allclose(prepare_view(x, "shift", "none", "v"), x + 2)
    y = prepare_view(x, "shift", "frobenius", "v")
    assert np.linalg.norm(y) == pytest.approx(1.0) and y.min() >= 0
    nonneg = np.abs(x)
    np.testing.assert_allclose(
        prepare_view(nonneg, "min-max", "frobenius", "v"), nonneg / np.linalg.norm(nonneg)
    )


def test_client_takes_its_view_of_a_file_or_its_node_file(tmp_path):
    np.savez(tmp_path / "d.npz", X_0=VIEWS[0], X_1=VIEWS[1], X_2=VIEWS[2], y=CLASSES)
    cfg = validate_run_config({"dataset": str(tmp_path / "d.npz"), "num-clients": 3})
    view = client_view(cfg, 1)
    assert isinstance(view, ClientView) and view.source.endswith("d.npz view 1")
    np.testing.assert_allclose(view.features, VIEWS[1] / np.linalg.norm(VIEWS[1]))
    np.testing.assert_array_equal(view.labels, EXPECTED)
    np.save(tmp_path / "own.npy", VIEWS[2])
    own = client_view(cfg, 1, {"partition-id": 1, "data-file": str(tmp_path / "own.npy")})
    np.testing.assert_allclose(own.features, VIEWS[2] / np.linalg.norm(VIEWS[2]))
    assert own.labels is None
    wrong = validate_run_config({"dataset": str(tmp_path / "d.npz"), "num-clients": 4})
    with pytest.raises(DataError, match="d.npz has 3 views but run config num-clients = 4"):
        client_view(wrong, 0)


def test_embedded_hw_is_uci_multiple_features():
    data = load_multiview("hw")
    assert data.source == "embedded:hw"
    assert [v.shape for v in data.views] == [(2000, d) for d in (216, 76, 64, 6, 240, 47)]
    assert np.bincount(data.labels).tolist() == [200] * 10
    assert data.views[2].min() < 0  # kar: the view that needs the negative-values choice


@pytest.mark.parametrize(
    ("relative", "n", "dims", "k"),
    [
        ("hw/Handwritten.mat", 2000, [216, 76, 64, 6, 240, 47], 10),
        ("orl/ORL.mat", 400, [512, 59, 864, 254], 40),
        ("yale/yaleA_3view.mat", 165, [9, 512, 50], 15),  # MAT v7.3
        ("sonar/sonar_3view.mat", 208, [20, 20, 20], 2),
    ],
)
def test_development_copies_of_public_files(relative, n, dims, k):
    path = DEV_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} is absent (development data, not part of the product)")
    data = load_multiview(str(path))
    assert data.num_samples == n and [v.shape[1] for v in data.views] == dims
    assert data.num_classes == k and set(np.unique(data.labels)) == set(range(k))


def test_a_view_is_scaled_the_same_whatever_the_threads():
    """The Frobenius scale of a large view (a threaded BLAS dot above 10,000 entries) does not
    follow the number of BLAS threads: every number of a run depends on it."""
    from threadpoolctl import threadpool_limits

    x = np.random.default_rng(0).random((5000, 300))
    scaled = {}
    for threads in (1, 2, 4):
        with threadpool_limits(threads, user_api="blas"):
            scaled[threads] = prepare_view(x, "min-max", "frobenius", "v")
    np.testing.assert_array_equal(scaled[2], scaled[1])
    np.testing.assert_array_equal(scaled[4], scaled[1])
