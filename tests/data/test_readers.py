"""File layouts: views as numbered top-level keys, a struct or a cell under another key read back equal
to the cell layout of the same arrays, in MATLAB v5, v7.3 (HDF5) and .npz; ambiguous layouts are named."""

import h5py
import numpy as np
import pytest
import scipy.io
import scipy.sparse

from fedmf_app.data import DataError
from fedmf_app.data.multiview import load_multiview
from fedmf_app.data.readers import CSV_LABEL_KEYS, LABEL_KEYS

N = 12
RNG = np.random.default_rng(1)
VIEWS = [RNG.integers(0, 9, size=(N, 5)).astype(np.uint8), RNG.random((N, 3)), RNG.random((N, 7))]
STORED = [VIEWS[0], VIEWS[1].T, VIEWS[2]]  # one view stored d x N
CLASSES = np.array([1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4])


def _cell(arrays):
    cell = np.empty((1, len(arrays)), dtype=object)
    for i, a in enumerate(arrays):
        cell.flat[i] = a
    return cell


def _reference(tmp_path, views=STORED):
    """The same arrays in the long-supported layout: a cell under X, labels under Y."""
    scipy.io.savemat(tmp_path / "cell.mat", {"X": _cell(views), "Y": CLASSES[:, None]})
    return load_multiview(str(tmp_path / "cell.mat"))


def _same(got, want):
    assert len(got.views) == len(want.views)
    for a, b in zip(got.views, want.views):
        assert a.dtype == b.dtype and a.shape == b.shape
        a, b = (v.toarray() if scipy.sparse.issparse(v) else v for v in (a, b))  # same values
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got.labels, want.labels)


def _h5_matrix(parent, name, value):
    """A matrix as MATLAB v7.3 stores it: transposed, with its MATLAB class."""
    if scipy.sparse.issparse(value):
        csc = scipy.sparse.csc_matrix(value)
        g = parent.create_group(name)
        g.attrs["MATLAB_sparse"] = csc.shape[0]
        g.attrs["MATLAB_class"] = np.bytes_("double")
        g["data"], g["ir"], g["jc"] = csc.data, csc.indices, csc.indptr
        return g
    value = np.asarray(value)
    d = parent.create_dataset(name, data=value.T)
    d.attrs["MATLAB_class"] = np.bytes_("uint8" if value.dtype == np.uint8 else "double")
    return d


def _write_v73(path, arrays, structs=None):
    """A MATLAB v7.3 file: top-level matrices ``arrays`` and structs ``structs`` (name -> fields)."""
    with h5py.File(path, "w", userblock_size=512) as f:
        for name, value in arrays.items():
            _h5_matrix(f, name, value)
        for name, fields in (structs or {}).items():
            g = f.create_group(name)
            g.attrs["MATLAB_class"] = np.bytes_("struct")
            names = np.empty(len(fields), dtype=h5py.vlen_dtype(np.dtype("S1")))
            for i, field in enumerate(fields):
                names[i] = np.array(list(field), dtype="S1")
            g.attrs.create("MATLAB_fields", names, dtype=h5py.vlen_dtype(np.dtype("S1")))
            for field, value in fields.items():
                _h5_matrix(g, field, value)


def _write(fmt, path, arrays):
    if fmt == "v5":
        scipy.io.savemat(path, arrays)
    elif fmt == "v73":
        _write_v73(path, arrays)
    else:
        np.savez(path, **arrays)
    return str(path)


FORMATS = ["v5", "v73", "npz"]
NUMBERED = ["X{}", "x{}", "X_{}", "view{}", "View_{}", "fea{}", "data{}", "FEA_{}"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("pattern", NUMBERED)
@pytest.mark.parametrize("first", [0, 1])
def test_numbered_top_level_views_read_as_the_cell_of_the_same_arrays(tmp_path, fmt, pattern, first):
    names = [pattern.format(first + i) for i in range(3)]
    arrays = {"per10": np.ones((N, 3)), "gnd": CLASSES[:, None], **dict(zip(names, STORED))}
    data = load_multiview(_write(fmt, tmp_path / f"d.{'npz' if fmt == 'npz' else 'mat'}", arrays))
    _same(data, _reference(tmp_path))
    assert data.view_names == tuple(names)


@pytest.mark.parametrize("fmt", FORMATS)
def test_numbered_views_are_ordered_by_number_not_by_text(tmp_path, fmt):
    views = [np.full((N, 2), float(i)) for i in range(1, 12)]  # view i holds the value i
    arrays = {f"x{i}": v for i, v in zip(range(1, 12), views)}
    shuffled = dict(sorted(arrays.items()))  # x1, x10, x11, x2, ...: written in text order
    data = load_multiview(_write(fmt, tmp_path / f"d.{'npz' if fmt == 'npz' else 'mat'}", shuffled))
    assert [v[0, 0] for v in data.views] == list(range(1, 12))
    assert data.view_names[8:] == ("x9", "x10", "x11")


@pytest.mark.parametrize("fmt", ["v5", "v73"])
def test_a_struct_of_views_reads_as_the_cell_in_field_order(tmp_path, fmt):
    fields = {"gist": STORED[0], "lbp": scipy.sparse.csc_matrix(STORED[1]), "hog": STORED[2]}
    if fmt == "v5":
        scipy.io.savemat(tmp_path / "s.mat", {"data": fields, "Y": CLASSES})
    else:
        _write_v73(tmp_path / "s.mat", {"Y": CLASSES[None, :]}, {"data": fields})
    data = load_multiview(str(tmp_path / "s.mat"))
    _same(data, _reference(tmp_path))
    assert data.view_names == ("gist", "lbp", "hog")  # stored order, not alphabetical


NEW_LABEL_KEYS = [k for k in LABEL_KEYS if k not in CSV_LABEL_KEYS]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("key", [*NEW_LABEL_KEYS, "GND", "Label", "TrueLabel"])
def test_labels_under_the_usual_keys_in_any_case(tmp_path, fmt, key):
    arrays = {key: CLASSES[None, :], **{f"X{i + 1}": v for i, v in enumerate(STORED)}}
    data = load_multiview(_write(fmt, tmp_path / f"d.{'npz' if fmt == 'npz' else 'mat'}", arrays))
    _same(data, _reference(tmp_path))


def test_labels_as_a_cell_of_copies_with_numbered_views(tmp_path):
    copies = _cell([CLASSES[None, :]] * 3)
    scipy.io.savemat(tmp_path / "d.mat", {"gnd": copies, **{f"view{i}": v for i, v in enumerate(STORED)}})
    _same(load_multiview(str(tmp_path / "d.mat")), _reference(tmp_path))


def test_the_one_cell_of_matrices_under_another_key_holds_the_views(tmp_path):
    masks = _cell([np.ones((N, 1)), np.zeros((N, 1))])  # a cell of vectors (e.g. indices) is no view
    scipy.io.savemat(tmp_path / "d.mat", {"Xs": _cell(STORED), "ind": masks, "gt": CLASSES})
    data = load_multiview(str(tmp_path / "d.mat"))
    _same(data, _reference(tmp_path))
    assert data.view_names == ()


def test_extra_keys_are_ignored(tmp_path):
    arrays = {
        **{f"X{i + 1}": v for i, v in enumerate(STORED)},
        "Y": CLASSES,
        "per10": np.ones((N, 3)),
        "ind": np.arange(N)[:, None],
        "featurenames": np.array(["a", "b"]),
        "X": np.array(["a text, not a view"]),  # only a cell or struct under X outranks numbered keys
    }
    _same(load_multiview(_write("v5", tmp_path / "d.mat", arrays)), _reference(tmp_path))


def test_a_cell_under_x_still_comes_first(tmp_path):
    scipy.io.savemat(tmp_path / "d.mat", {"X": _cell(STORED), "x1": VIEWS[1], "Y": CLASSES})
    _same(load_multiview(str(tmp_path / "d.mat")), _reference(tmp_path))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("arrays", "fragment"),
    [
        (
            {"X1": VIEWS[0], "X2": VIEWS[1], "fea1": VIEWS[2], "fea2": VIEWS[0]},
            r"d\.\w+: ambiguous layout: more than one family of numbered keys could hold the views "
            r"\(X1, X2; fea1, fea2\); name the views with run config 'views'",
        ),
        (
            {"X1": VIEWS[0], "x1": VIEWS[1], "X2": VIEWS[2]},
            r"d\.\w+: ambiguous layout: numbered view keys .*X1.* repeat a number; name the views with run "
            r"config 'views'",
        ),
        (
            {"Z": VIEWS[0], "Y": CLASSES},
            r"d\.\w+: no views under any of the keys X, fea, data \(keys found: (Z, Y|Y, Z)\); nor numbered",
        ),
    ],
)
def test_ambiguous_or_missing_views_are_refused_naming_the_keys(tmp_path, fmt, arrays, fragment):
    path = _write(fmt, tmp_path / f"d.{'npz' if fmt == 'npz' else 'mat'}", arrays)
    with pytest.raises(DataError, match=fragment):
        load_multiview(path)


def test_two_cells_of_matrices_are_ambiguous(tmp_path):
    scipy.io.savemat(tmp_path / "d.mat", {"A": _cell(STORED), "B": _cell(STORED), "Y": CLASSES})
    with pytest.raises(
        DataError,
        match=r"d\.mat: ambiguous layout: .*several cells of matrices .*\(the cell A; the cell B\); name the "
        r"views with run config 'views'",
    ):
        load_multiview(str(tmp_path / "d.mat"))


def test_v73_numbered_views_are_transposed_back_as_matlab_stores_them(tmp_path):
    square = RNG.random((N, N))  # orientation cannot be told from the shape: only the transposition
    _write_v73(tmp_path / "d.mat", {"x1": square, "x2": VIEWS[1], "y": CLASSES[:, None]})
    data = load_multiview(str(tmp_path / "d.mat"))
    _same(data, _reference(tmp_path, [square, VIEWS[1]]))
    np.testing.assert_array_equal(data.views[0], square)


# MSRC-v1 as widely shared: views msr1 ... msr5 (d x N here for two of them) beside truth
MSRC_DIMS = (24, 576, 512, 256, 254)


def _msrc(fmt, tmp_path, extra=None):
    rng = np.random.default_rng(3)
    truth = np.repeat(np.arange(1, 4), 5)  # 15 samples, classes 1..3
    views = [rng.random((truth.size, d)) for d in MSRC_DIMS]
    arrays = {"truth": truth[:, None], **{f"msr{i + 1}": v if i % 2 else v.T for i, v in enumerate(views)}}
    path = _write(fmt, tmp_path / f"MSRC-v1.{'npz' if fmt == 'npz' else 'mat'}", {**arrays, **(extra or {})})
    return path, views, truth


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_under_any_numbered_stem_with_one_sample_count_are_read(tmp_path, fmt):
    path, views, truth = _msrc(fmt, tmp_path)
    data = load_multiview(path)
    assert data.view_names == ("msr1", "msr2", "msr3", "msr4", "msr5")
    for got, want in zip(data.views, views):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(data.labels, truth - 1)


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_may_name_any_top_level_keys_in_their_order(tmp_path, fmt):
    path, views, _ = _msrc(fmt, tmp_path, extra={"X1": np.ones((15, 2)), "fea1": np.ones((15, 3))})
    data = load_multiview(path, views="msr1,msr2,msr3,msr4,msr5")
    assert [v.shape[1] for v in data.views] == list(MSRC_DIMS)
    data = load_multiview(path, views="MSR3,msr1")  # any case, any order, a subset
    assert data.view_names == ("msr3", "msr1")
    np.testing.assert_array_equal(data.views[0], views[2])


def test_two_numbered_stems_are_ambiguous_and_the_message_names_views(tmp_path):
    path, _, _ = _msrc("v5", tmp_path, extra={"hist1": np.ones((15, 4)), "hist2": np.ones((15, 6))})
    with pytest.raises(
        DataError,
        match=r"ambiguous layout: .*\(msr1, msr2, msr3, msr4, msr5; hist1, hist2\); name the views with run "
        r"config 'views', e.g. views = \"msr1,msr2\"",
    ):
        load_multiview(path)
    assert len(load_multiview(path, views="hist1,hist2").views) == 2


def test_numbered_matrices_of_different_sample_counts_are_no_views(tmp_path):
    arrays = {"a1": np.ones((4, 5)), "a2": np.ones((6, 7)), "Y": np.arange(4)}
    with pytest.raises(DataError, match=r"no views under any of the keys .*run config 'views'"):
        load_multiview(_write("v5", tmp_path / "d.mat", arrays))
