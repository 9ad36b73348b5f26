"""FMVC-IMK's anchor graph: the consensus Laplacian's properties, the Woodbury solve, sparse views."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import normalized_mutual_info_score

from fedmf_app.methods.imk.client_updates import client_round, init_client, preprocess_view, view_anchor_graph
from fedmf_app.methods.imk.model import anchor_indices
from fedmf_app.methods.imk.params import IMKOptions, IMKParams
from fedmf_app.methods.imk.reference import IMKReference
from fedmf_app.methods.imk.server_updates import (
    AnchorLaplacian,
    ServerSolver,
    WoodburySolver,
    extract_labels,
    graph_term,
)

from support.data import clustered_views, sparse_counts


def consensus(views, a=20, s=4, seed=0):
    anchors = anchor_indices(seed, views[0].shape[0], a)
    graphs = [view_anchor_graph(x, anchors, s) for x in views]
    return sum(graphs[1:], graphs[0]) / len(graphs), anchors


def test_view_anchor_graph_rows_lie_on_the_simplex_of_the_nearest_anchors():
    views, _ = clustered_views(n=80)
    x = views[0]
    anchors = anchor_indices(3, 80, 15)
    assert np.unique(anchors).size == 15 and anchors.min() >= 0 and anchors.max() < 80
    z = view_anchor_graph(x, anchors, 4)
    assert z.shape == (80, 15) and np.all(np.diff(z.indptr) <= 4) and z.data.min() >= 0
    np.testing.assert_allclose(np.asarray(z.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    dist = ((x[:, None, :] - x[anchors][None]) ** 2).sum(axis=2)
    dense = z.toarray()
    for i in range(80):  # the nonzeros sit on the 4 nearest anchors; an anchor links to itself first
        assert set(np.flatnonzero(dense[i])) <= set(np.argsort(dist[i])[:4])
    np.testing.assert_array_equal(np.argmax(dense[anchors], axis=1), np.arange(15))


def test_consensus_similarity_is_doubly_stochastic_symmetric_psd_and_l_is_a_laplacian():
    views, _ = clustered_views(n=70)
    z, _ = consensus(views)
    lap = AnchorLaplacian(z)
    zd = z.toarray()
    s = zd @ np.diag(1.0 / zd.sum(axis=0)) @ zd.T
    np.testing.assert_allclose(s.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(s, s.T, atol=1e-15)
    assert np.linalg.eigvalsh(s).min() > -1e-12 and np.linalg.eigvalsh(s).max() < 1 + 1e-12
    np.testing.assert_allclose(lap.degree, 1.0, atol=1e-12)
    dense_l = np.eye(70) - s
    assert np.linalg.eigvalsh(dense_l).min() > -1e-12
    h = np.random.default_rng(0).normal(size=(70, 3))
    np.testing.assert_allclose(lap @ h, dense_l @ h, atol=1e-12)
    np.testing.assert_allclose(lap @ h[:, 0], dense_l @ h[:, 0], atol=1e-12)
    # Tr(H^T L H) = 1/2 sum_ij S_ij ||h_i - h_j||^2
    pairs = 0.5 * np.sum(s * np.sum((h[:, None] - h[None]) ** 2, axis=2))
    assert graph_term(lap, h) == pytest.approx(pairs, rel=1e-12)
    # rounded weights (the secure sum's fixed point) and an anchor no sample uses: still a Laplacian
    rounded = z.copy()
    rounded.data = np.rint(rounded.data * 2**6) / 2**6
    rounded = sp.hstack([rounded, sp.csr_matrix((70, 1))]).tocsr()
    lap = AnchorLaplacian(rounded)
    rd = rounded.toarray()[:, :-1]
    dense_l = np.diag((rd @ np.diag(1 / rd.sum(0)) @ rd.T).sum(1)) - rd @ np.diag(1 / rd.sum(0)) @ rd.T
    np.testing.assert_allclose(lap @ np.ones(70), 0.0, atol=1e-12)
    np.testing.assert_allclose(lap @ h, dense_l @ h, atol=1e-12)
    assert np.linalg.eigvalsh(dense_l).min() > -1e-12


@pytest.mark.parametrize(
    "params",
    [
        IMKParams(lam=1.0),
        IMKParams(lam=10.0, rho=0.5),
        IMKParams(lam=0.0),
        IMKParams(lam=2.0, mu=0.5, ortho_placement="global"),
    ],
)
def test_woodbury_solve_equals_the_direct_solve(params):
    rng = np.random.default_rng(4)
    views, _ = clustered_views(n=90)
    z, _ = consensus(views, a=25)
    z.data = np.rint(z.data * 2**16) / 2**16  # rows no longer sum to one exactly
    lap = AnchorLaplacian(z)
    m = 3
    phis = [rng.normal(size=(90, 4)) for _ in range(m)]
    h_locals = [rng.normal(size=(90, 4)) for _ in range(m)]
    h_prev = rng.normal(size=(90, 4))
    woodbury = WoodburySolver(lap, m, params).update(sum(phis), sum(h_locals), h_prev)
    dense_l = lap @ np.eye(90)
    direct_matrix = 2 * params.lam * dense_l + m * params.rho * np.eye(90)
    rhs = sum(p + params.rho * h for p, h in zip(phis, h_locals))
    if params.ortho_placement == "global":
        rhs = rhs - 4 * params.mu * h_prev @ (h_prev.T @ h_prev - np.eye(4))
    direct = np.linalg.solve(direct_matrix, rhs)
    np.testing.assert_allclose(woodbury, direct, atol=1e-10 * np.abs(direct).max())
    # and the sparse CG solver on the same Laplacian as an explicit sparse matrix
    cg = ServerSolver(sp.csr_matrix(dense_l), m, params, "cg").update(sum(phis), sum(h_locals), h_prev)
    np.testing.assert_allclose(woodbury, cg, atol=1e-8 * np.abs(direct).max())
    with pytest.raises(FloatingPointError, match="not finite"):
        WoodburySolver(lap, m, params).solve(np.full((90, 4), np.nan))


def test_anchor_path_recovers_planted_clusters_with_a_non_increasing_objective():
    views, y = clustered_views(n=150, seed=1)
    steps = IMKParams(lam=1.0, rho=5.0)  # non-increasing at rho = 5 (docs/imk.md#assumptions)
    ref = IMKReference(views, IMKOptions(steps=steps, graph="anchor", anchors=30), 3, 1)
    objectives = [ref.round()["objective"] for _ in range(30)]
    assert np.all(np.diff(objectives) <= 1e-12 * objectives[0])
    labels = extract_labels(ref.h, "kmeans", np.random.default_rng(0))
    assert normalized_mutual_info_score(y, labels) > 0.95
    assert ref.history[-1]["graph_term"] > 0


@pytest.mark.parametrize("graph", ["anchor", "knn"])
def test_a_sparse_view_gives_the_dense_views_results(graph):
    raw, _ = sparse_counts()
    dense = [preprocess_view(x, "auto", True) for x in raw]
    sparse = [preprocess_view(sp.csr_matrix(x), "auto", True) for x in raw]
    assert all(sp.issparse(x) for x in sparse)
    for d, s in zip(dense, sparse):
        np.testing.assert_allclose(s.toarray(), d, atol=1e-15)
    options = IMKOptions(graph=graph, anchors=40)
    runs = [IMKReference(views, options, 3, 5) for views in (dense, sparse)]
    for _ in range(5):
        records = [r.round() for r in runs]
        for key in ("objective", "data_term", "graph_term", "consensus"):
            assert records[1][key] == pytest.approx(records[0][key], rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(runs[1].h, runs[0].h, atol=1e-10)
    for a, b in zip(runs[0].states, runs[1].states):
        np.testing.assert_allclose(b.f, a.f, atol=1e-10)
        np.testing.assert_allclose(b.w, a.w, atol=1e-10)


def test_sparse_kernels_never_densify_and_zscore_is_the_documented_exception(caplog):
    raw, _ = sparse_counts(seed=2)
    x = sp.csr_matrix(raw[0])
    for standardise in ("row-l2", "none", "auto"):
        assert sp.issparse(preprocess_view(x, standardise, True))
    with caplog.at_level("WARNING"):
        z = preprocess_view(x, "zscore", True)
    assert isinstance(z, np.ndarray) and "becomes dense" in caplog.text
    np.testing.assert_allclose(z, preprocess_view(raw[0], "zscore", True), atol=1e-15)
    # one client round on a sparse view equals the dense round
    xs = preprocess_view(x, "row-l2", True)
    xd = xs.toarray()
    params = IMKParams()
    states = [
        init_client(v, 3, 3, 3, "normalised-indicator", params, np.random.default_rng(1), "kmeans")
        for v in (xd, xs)
    ]
    h_global = np.random.default_rng(2).normal(size=states[0].h.shape)
    (d_state, d_stats), (s_state, s_stats) = (
        client_round(v, st, h_global, params, False) for v, st in zip((xd, xs), states)
    )
    np.testing.assert_allclose(s_state.h, d_state.h, atol=1e-10)
    assert s_stats.residual == pytest.approx(d_stats.residual, rel=1e-10)


def test_auto_takes_the_knn_graph_up_to_its_sample_limit_and_the_anchor_graph_above():
    from fedmf_app.methods.imk.params import KNN_MAX_SAMPLES, resolve_graph

    assert resolve_graph("auto", KNN_MAX_SAMPLES) == "knn"
    assert resolve_graph("auto", KNN_MAX_SAMPLES + 1) == "anchor"
    assert resolve_graph("knn", 10**6) == "knn" and resolve_graph("anchor", 10) == "anchor"
