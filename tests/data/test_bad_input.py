"""The data layer's errors on bad input name the file and the problem: truncated or non-MATLAB files,
NaN/inf, empty views, mismatched sample counts, short label vectors, more clients than views."""

import numpy as np
import pytest
import scipy.io

from fedmf_app.data import DataError, load_multiview
from fedmf_app.federated.handshake import FederationError, check_view_count
from fedmf_app.registry import validate_run_config

from support.data import client_view

N = 12
RNG = np.random.default_rng(0)
VIEWS = [RNG.random((N, d)) for d in (3, 4, 2)]
LABELS = np.arange(N) % 3


def _cell(arrays):
    cell = np.empty((1, len(arrays)), dtype=object)
    for i, a in enumerate(arrays):
        cell[0, i] = a
    return cell


def _write(tmp_path, name, views=VIEWS, labels=LABELS):
    path = tmp_path / name
    if name.endswith(".mat"):
        scipy.io.savemat(path, {"X": _cell(views), "Y": labels})
    else:
        np.savez(path, **{f"X_{i}": v for i, v in enumerate(views)}, y=labels)
    return path


@pytest.mark.parametrize("name, kind", [("d.mat", "MATLAB file"), ("d.npz", ".npz archive")])
@pytest.mark.parametrize("keep", [0.5, 0.1])
def test_a_truncated_file_is_named_as_unreadable(tmp_path, name, kind, keep):
    path = _write(tmp_path, name)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(DataError, match=rf"{name}: not a readable {kind}"):
        load_multiview(str(path))


def test_a_file_that_is_not_matlab_is_named(tmp_path):
    path = tmp_path / "d.mat"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    with pytest.raises(DataError, match=r"d.mat: not a readable MATLAB file"):
        load_multiview(str(path))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_named_with_the_view(tmp_path, bad):
    views = [VIEWS[0], VIEWS[1].copy(), VIEWS[2]]
    views[1][3, 2] = bad
    with pytest.raises(DataError, match=r"d.npz: view 1 .*has 1 NaN/inf value\(s\), the first at sample 3"):
        load_multiview(str(_write(tmp_path, "d.npz", views)))


def test_an_empty_view_is_named(tmp_path):
    with pytest.raises(DataError, match=r"d.mat: view 2 .*is empty"):
        load_multiview(str(_write(tmp_path, "d.mat", [VIEWS[0], VIEWS[1], np.zeros((N, 0))])))


def test_mismatched_sample_counts_are_named(tmp_path):
    with pytest.raises(DataError, match=r"d.mat: view 1 .*is 11x4: its sample count does not match the 12"):
        load_multiview(str(_write(tmp_path, "d.mat", [VIEWS[0], VIEWS[1][:-1], VIEWS[2]])))


@pytest.mark.parametrize("name", ["d.mat", "d.npz"])
def test_a_short_label_vector_is_named(tmp_path, name):
    with pytest.raises(DataError, match=rf"{name}: view 0 .*sample count does not match the 11 labels"):
        load_multiview(str(_write(tmp_path, name, labels=LABELS[:-1])))


def test_more_clients_than_views_is_refused_naming_the_option(tmp_path):
    path = str(_write(tmp_path, "d.mat"))
    cfg = validate_run_config({"dataset": path, "num-clients": 4})
    with pytest.raises(DataError, match=r"d.mat has 3 views but run config num-clients = 4"):
        client_view(cfg, 3)
    with pytest.raises(FederationError, match=r"has 3 views but the run needs 4 clients"):
        check_view_count(path, 4)
