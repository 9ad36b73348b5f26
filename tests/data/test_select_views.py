"""Run config `views`: pick and order a file's views by name or 0-based index, for every client and the
server's check; bad entries are refused naming the file, the key, the entry and the views there are."""

import numpy as np
import pytest
import scipy.io

from fedmf_app.data import DataError, dataset_view_count
from fedmf_app.data.multiview import load_multiview
from fedmf_app.federated.handshake import FederationError, check_view_count
from fedmf_app.options import ConfigError
from fedmf_app.registry import validate_run_config

from support.data import client_view
from support.federation import federation

N = 12
RNG = np.random.default_rng(2)
VIEWS = [RNG.random((N, d)) + 0.1 for d in (4, 3, 5)]
CLASSES = np.arange(N) % 3


@pytest.fixture
def named(tmp_path):
    path = tmp_path / "named.npz"
    np.savez(path, x1=VIEWS[0], x2=VIEWS[1], x3=VIEWS[2], gnd=CLASSES)
    return str(path)


@pytest.fixture
def unnamed(tmp_path):
    cell = np.empty((1, 3), dtype=object)
    for i, v in enumerate(VIEWS):
        cell.flat[i] = v
    scipy.io.savemat(tmp_path / "cell.mat", {"X": cell, "Y": CLASSES})
    return str(tmp_path / "cell.mat")


@pytest.mark.parametrize(
    ("views", "order"),
    [
        ("", [0, 1, 2]),
        ("x3,x1", [2, 0]),
        ("2,0", [2, 0]),
        ("X3, 0", [2, 0]),
        ("x2", [1]),
        ("1,x3,x1", [1, 2, 0]),
    ],
)
def test_views_picks_and_orders_by_name_or_index(named, views, order):
    data = load_multiview(named, views)
    assert len(data.views) == len(order)
    for got, i in zip(data.views, order):
        np.testing.assert_array_equal(got, VIEWS[i])
    assert data.view_names == tuple(f"x{i + 1}" for i in order)
    np.testing.assert_array_equal(data.labels, CLASSES)


def test_indices_work_for_a_cell_and_names_for_an_embedded_set(unnamed):
    data = load_multiview(unnamed, "2,0")
    np.testing.assert_array_equal(data.views[0], VIEWS[2])
    np.testing.assert_array_equal(data.views[1], VIEWS[0])
    hw = load_multiview("hw")
    picked = load_multiview("hw", "pix,fac")
    assert picked.view_names == ("pix", "fac")
    assert picked.views[0] is hw.views[4] and picked.views[1] is hw.views[0]


@pytest.mark.parametrize(
    ("fixture", "views", "fragment"),
    [
        (
            "named",
            "x3,x9",
            r"named\.npz: run config 'views' = 'x3,x9': 'x9' is not a view of this file "
            r"\(its views: x1, x2, x3, or 0-based indices 0\.\.2\)",
        ),
        ("named", "3", r"named\.npz: run config 'views' = '3': index 3 is out of range \(its views: x1"),
        ("named", "x1,0", r"named\.npz: run config 'views' = 'x1,0': '0' repeats view 0"),
        (
            "unnamed",
            "x1",
            r"cell\.mat: run config 'views' = 'x1': 'x1' is not a view of this file \(its 3 views "
            r"have no names: use 0-based indices 0\.\.2\)",
        ),
    ],
)
def test_unknown_names_out_of_range_indices_and_repeats_are_refused(request, fixture, views, fragment):
    path = request.getfixturevalue(fixture)
    with pytest.raises(DataError, match=fragment):
        load_multiview(path, views)
    with pytest.raises(DataError, match=fragment):  # the server's check before contacting anyone
        dataset_view_count(path, views)


def test_views_option_is_checked_in_the_run_config(named):
    assert validate_run_config({})["views"] == ""
    with pytest.raises(ConfigError, match=r"run config 'views' = '0,,1' is invalid: must be empty, or comma"):
        validate_run_config({"dataset": named, "views": "0,,1"})
    with pytest.raises(ConfigError, match=r"run config 'views' = '0' is invalid with dataset = 'synthetic'"):
        validate_run_config({"views": "0"})


def test_every_client_takes_its_view_of_the_selection_and_the_server_counts_it(named, tmp_path):
    cfg = validate_run_config(
        {"dataset": named, "views": "x3,x1", "num-clients": 2, "view-normalisation": "none"}
    )
    for p, i in enumerate([2, 0]):
        view = client_view(cfg, p)
        np.testing.assert_array_equal(view.features, VIEWS[i])
        np.testing.assert_array_equal(view.labels, CLASSES)
        assert view.source.endswith(f"named.npz view {p} (file view 'x{i + 1}' of run config views)")
    check_view_count(named, 2, "x3,x1")
    with pytest.raises(FederationError, match=r"has 2 views \(those run config views = 'x3,x1' keeps\)"):
        check_view_count(named, 3, "x3,x1")
    three = validate_run_config({"dataset": named, "views": "x3,x1", "num-clients": 3})
    with pytest.raises(DataError, match=r"named\.npz has 2 views \(those run config views = 'x3,x1' keeps\)"):
        client_view(three, 0)
    # the real strategy's handshake and real clients, joined by stand-in proxies
    fed = federation(tmp_path, cfg)
    strategy = fed.strategy
    fed.start()
    assert [i["partition-id"] for i in strategy.client_info] == [0, 1]
