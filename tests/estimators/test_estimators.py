"""The estimators: parameters generated from the run config (clone, set_params, a parameter grid),
checked by the run config's constraints, fitted on the product's in-process federation (the labels
of the same run through Flower, secure aggregation giving the same numbers), dense or sparse views."""

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import ParameterGrid

from fedmf_app.estimators import FMVCIAI, FMVCIMK, FedSONMF
from fedmf_app.estimators.base import SHARED_KEYS, parameter_name
from fedmf_app.registry import defaults, family_of

from support.data import IAI_SMALL, clustered_views
from support.flower import flwr_run

VIEWS, Y = clustered_views(n=90, k=3, dims=(8, 12, 6), seed=0)
IMK = {"num_clusters": 3, "num_server_rounds": 5, "tol": 0.0, "seed": 2}


@pytest.mark.parametrize("cls", [FedSONMF, FMVCIMK, FMVCIAI])
def test_every_parameter_is_a_run_config_key_with_its_default(cls):
    family = family_of(cls.algorithm_choices[0])
    signature = inspect.signature(cls)
    want = {parameter_name(k): defaults()[k] for k in (*SHARED_KEYS, *(o.key for o in family.options))}
    if len(cls.algorithm_choices) > 1:
        want["algorithm"] = cls.algorithm_choices[0]
    assert {n: p.default for n, p in signature.parameters.items() if n != "verbose"} == want
    assert cls().get_params() == {**want, "verbose": False}


def test_clone_and_set_params_keep_every_parameter():
    est = FMVCIMK(lam=0.5, mu=0.2, anchors=64)
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert twin.set_params(lam=2.0).lam == 2.0 and est.lam == 0.5
    assert repr(est) == "FMVCIMK(anchors=64, lam=0.5, mu=0.2)"
    with pytest.raises(TypeError, match="unexpected parameter"):
        FMVCIMK(lambda_=1.0)


def test_a_bad_parameter_is_refused_naming_it_and_its_run_config_key():
    with pytest.raises(
        ValueError,
        match=r"FMVCIMK: parameter lam=-1 is invalid: must be a number >= 0 \(run config 'imk.lambda'\)",
    ):
        FMVCIMK(lam=-1).fit(VIEWS)
    with pytest.raises(ValueError, match="parameter algorithm='fedavg' is invalid: must be one of: fedsonmf"):
        FedSONMF(algorithm="fedavg").fit(VIEWS)
    with pytest.raises(
        ValueError, match=r"Xs\[1\]: 89.*differ|sample counts differ \(Xs\[0\]: 90, Xs\[1\]: 89"
    ):
        FMVCIMK(**IMK).fit([VIEWS[0], VIEWS[1][:-1]])
    with pytest.raises(
        ValueError, match=r"parameter anchors = 5 is invalid: must be >= parameter anchor_neighbours \+ 1"
    ):
        FMVCIAI(anchors=5, anchor_neighbours=10, num_clusters=3).fit(VIEWS)  # a cross-key check
    with pytest.raises(ValueError, match="nonempty list of views"):
        FMVCIMK(**IMK).fit(VIEWS[0])


def test_numpy_scalars_from_a_grid_are_taken_as_their_python_values():
    est = FMVCIMK(**{**IMK, "lam": np.float64(0.5), "num_clusters": np.int64(3)}).fit(VIEWS)
    assert est.result_["config"]["imk.lambda"] == 0.5 and est.result_["config"]["num-clusters"] == 3


def test_fmvc_imk_fits_the_views_and_keeps_its_embedding_and_history():
    est = FMVCIMK(**IMK)
    labels = est.fit_predict(VIEWS)
    assert labels is est.labels_ and labels.shape == (90,)
    assert adjusted_rand_score(Y, labels) > 0.9
    assert est.embedding_.shape == (90, 3) and est.n_views_ == 3
    assert est.n_rounds_ == 5 and [r["round"] for r in est.history_] == [1, 2, 3, 4, 5]
    assert all(np.isfinite(r["objective"]) for r in est.history_)
    assert est.result_["config"]["num-clients"] == 3
    # the history is the run's objective: at rho = 5 it never rises (at the default 2 it may,
    # docs/imk.md#assumptions)
    objective = [r["objective"] for r in FMVCIMK(**IMK, rho=5.0).fit(VIEWS).history_]
    assert all(b <= a + 1e-9 * abs(a) for a, b in zip(objective, objective[1:]))


def test_secure_aggregation_gives_the_same_numbers():
    # From the k-means start every number agrees to the masked sum's rounding (2^-36 per entry).
    # From the spectral start (the default on these dense views) the rounds amplify that rounding:
    # after 5 rounds the embedding differs by 2e-7 and the objective by 6e-9 of itself, while the
    # labels are the same, which the second pair of runs checks (the objective to 1e-7).
    plain = FMVCIMK(**IMK, start="kmeans").fit(VIEWS)
    masked = FMVCIMK(**IMK, start="kmeans", secure_aggregation=True).fit(VIEWS)
    assert masked.result_["config"]["secure-aggregation"] is True
    np.testing.assert_array_equal(masked.labels_, plain.labels_)
    np.testing.assert_allclose(masked.embedding_, plain.embedding_, rtol=1e-6, atol=1e-9)
    plain, masked = FMVCIMK(**IMK).fit(VIEWS), FMVCIMK(**IMK, secure_aggregation=True).fit(VIEWS)
    np.testing.assert_array_equal(masked.labels_, plain.labels_)
    np.testing.assert_allclose(
        [r["objective"] for r in masked.history_], [r["objective"] for r in plain.history_], rtol=1e-7
    )


def test_sparse_views_give_the_labels_of_the_dense_ones():
    dense = FMVCIMK(**IMK).fit(VIEWS)
    sparse = FMVCIMK(**IMK).fit([sp.csr_matrix(x) for x in VIEWS])
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)


def test_fedsonmf_keeps_v_and_every_clients_basis():
    est = FedSONMF(num_clusters=3, num_server_rounds=4, rank=3, seed=1).fit(VIEWS)
    assert est.embedding_.shape == (90, 3) and est.embedding_.min() >= 0
    assert [u.shape for u in est.components_] == [(8, 3), (12, 3), (6, 3)]
    for u in est.components_:
        assert u.min() >= 0
        np.testing.assert_allclose(u.T @ u, np.diag(np.diag(u.T @ u)), atol=1e-12)  # orthogonal columns
    assert est.n_rounds_ == 4


def test_fmvc_iai_keeps_its_target_and_graph():
    small = {
        parameter_name(k): v
        for k, v in IAI_SMALL.items()
        if k not in ("algorithm", "num-clients", "num-samples", "view-dim")
    }
    views, y = clustered_views(n=120, k=3, dims=(12, 12, 12), seed=2)
    est = FMVCIAI(**small).fit(views)
    assert est.target_.shape == (120, 3) and np.allclose(est.target_.sum(axis=1), 1.0)
    assert est.neighbours_.shape[0] == 120 and est.labels_.shape == (120,)
    assert est.n_rounds_ == IAI_SMALL["num-server-rounds"]


def test_a_grid_search_over_two_options_completes_and_picks_the_best():
    grid = ParameterGrid({"lam": [0.0, 1.0], "mu": [0.01, 0.1]})
    base = FMVCIMK(**IMK)
    scores = {}
    for params in grid:
        est = clone(base).set_params(**params).fit(VIEWS)
        scores[(params["lam"], params["mu"])] = adjusted_rand_score(Y, est.labels_)
    assert len(scores) == 4
    best = max(scores, key=scores.get)
    assert scores[best] > 0.9


@pytest.mark.e2e
def test_the_labels_are_those_of_flwr_run_with_the_same_files_options_and_seed(tmp_path, superlink):
    est = FMVCIMK(**IMK).fit(VIEWS)
    files = []
    for p, x in enumerate(VIEWS):
        files.append(tmp_path / f"view{p}.npy")
        np.save(files[-1], x)
    overrides = {"algorithm": "fmvc-imk", "dataset": ",".join(map(str, files))}
    overrides |= {o.key: getattr(est, name) for name, o in est._options.items()}
    result = flwr_run(superlink, tmp_path, overrides, num_supernodes=3).completed()
    assert result["final"]["labels"] == est.labels_.tolist()
    assert [r["objective"] for r in result["rounds"]] == pytest.approx(
        [r["objective"] for r in est.history_], rel=1e-12
    )
