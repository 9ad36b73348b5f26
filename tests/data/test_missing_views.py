"""Complete-view algorithms under missing views: filled rows come from observed rows only."""

import numpy as np
import pytest

from fedmf_app.data import DataError
from fedmf_app.data.missing_views import fill_missing_rows, missing_view_mask
from fedmf_app.registry import validate_run_config

from support.data import client_view

RNG = np.random.default_rng(3)
VIEWS = [RNG.random((40, d)) * 5 for d in (6, 4, 5)]


@pytest.mark.parametrize("fill", ["mean", "zeros"])
def test_fill_keeps_observed_rows_and_ignores_missing_values(fill):
    x = RNG.normal(size=(12, 3))
    observed = np.arange(12) % 3 != 0
    out = fill_missing_rows(x, observed, fill)
    np.testing.assert_array_equal(out[observed], x[observed])
    expected = x[observed].mean(axis=0) if fill == "mean" else np.zeros(3)
    np.testing.assert_allclose(out[~observed], np.tile(expected, (4, 1)), rtol=1e-12)
    scrambled = x.copy()
    scrambled[~observed] = 1e6
    np.testing.assert_array_equal(fill_missing_rows(scrambled, observed, fill), out)
    assert np.shares_memory(out, x) is False


def test_fill_rejects_bad_input():
    x = np.ones((4, 2))
    with pytest.raises(ValueError, match="missing fill 'median' is invalid"):
        fill_missing_rows(x, np.ones(4, bool), "median")
    with pytest.raises(ValueError, match=r"mask of shape \(3,\) does not fit a view of 4 rows"):
        fill_missing_rows(x, np.ones(3, bool))
    with pytest.raises(ValueError, match="no observed row"):
        fill_missing_rows(x, np.zeros(4, bool))


@pytest.mark.parametrize("algorithm", ["fedsonmf", "fedmgs", "fmvc-imk"])
def test_complete_view_clients_see_only_their_observed_rows(tmp_path, algorithm):
    """The prepared view is the same whatever the missing rows held; they become one row."""
    np.savez(tmp_path / "a.npz", X_0=VIEWS[0], X_1=VIEWS[1], X_2=VIEWS[2], y=np.arange(40) % 4)
    cfg = validate_run_config(
        {
            "algorithm": algorithm,
            "dataset": str(tmp_path / "a.npz"),
            "num-clients": 3,
            "missing-rate": 0.5,
            "seed": 2,
        }
    )
    observed = missing_view_mask(40, 3, 0.5, seed=2)
    scrambled = [v.copy() for v in VIEWS]
    for p, view in enumerate(scrambled):
        view[~observed[:, p]] = RNG.random((int((~observed[:, p]).sum()), view.shape[1])) * 100
    np.savez(tmp_path / "b.npz", X_0=scrambled[0], X_1=scrambled[1], X_2=scrambled[2], y=np.arange(40) % 4)
    for p in range(3):
        view = client_view(cfg, p).features
        other = client_view({**cfg, "dataset": str(tmp_path / "b.npz")}, p).features
        np.testing.assert_array_equal(view, other)
        missing = view[~observed[:, p]]
        assert len(missing) > 0 and np.ptp(missing, axis=0).max() == 0.0
        complete = client_view({**cfg, "missing-rate": 0.0}, p).features
        assert not np.allclose(view, complete)


def test_mask_reading_algorithm_gets_the_view_unchanged(tmp_path):
    np.savez(tmp_path / "a.npz", X_0=VIEWS[0], X_1=VIEWS[1], y=np.arange(40) % 4)
    base = {"algorithm": "fmvc-iai", "dataset": str(tmp_path / "a.npz"), "num-clients": 2}
    with_mask = client_view(validate_run_config({**base, "missing-rate": 0.5}), 0).features
    np.testing.assert_array_equal(with_mask, client_view(validate_run_config(base), 0).features)


def test_one_view_cannot_have_missing_views():
    cfg = validate_run_config({"num-clients": 1, "missing-rate": 0.3})
    with pytest.raises(
        DataError,
        match=r"synthetic view 0 .*cannot apply missing-rate = 0.3: missing "
        r"views need at least 2 views",
    ):
        client_view(cfg, 0)
