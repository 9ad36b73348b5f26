"""FMVC-IMK's mask-aware graphs (``imk.missing-graph = "observed"``): each view's kNN or anchor
graph links only the rows it observes, and the summed Laplacian stays a Laplacian."""

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_similarity
from fedmf_app.data.missing_views import fill_missing_rows, missing_view_mask
from fedmf_app.methods.imk.client_updates import view_anchor_graph, view_knn_graph
from fedmf_app.methods.imk.model import anchor_indices
from fedmf_app.methods.imk.params import IMKOptions, IMKParams
from fedmf_app.methods.imk.reference import graph_laplacian
from fedmf_app.methods.imk.server_updates import AnchorLaplacian, WoodburySolver
from fedmf_app.options.schema import ConfigError
from fedmf_app.registry import validate_run_config

from support.data import IMK_BASE as BASE
from support.data import clustered_views

N, A, P = 90, 24, 5


def filled_views(rate=0.5, seed=3, dropped=0):
    """The clustered views with the run's mask applied (missing rows mean-filled), and the mask."""
    views, _ = clustered_views(n=N)
    observed = missing_view_mask(N, len(views), rate, seed, dropped)
    return [fill_missing_rows(x, observed[:, m]) for m, x in enumerate(views)], observed


def same(a, b):
    return a.shape == b.shape and (sp.csr_matrix(a) != sp.csr_matrix(b)).nnz == 0


@pytest.mark.parametrize("similarity", ["binary", "heat"])
def test_knn_graph_links_only_observed_rows_and_is_their_own_knn_graph(similarity):
    views, observed = filled_views()
    for x, seen in zip(views, observed.T):
        assert 0 < (~seen).sum() < N
        s = view_knn_graph(x, P, similarity, seen)
        assert s.shape == (N, N) and (s != s.T).nnz == 0 and s.diagonal().max() == 0
        assert s[~seen].nnz == 0 and s[:, ~seen].nnz == 0  # no edge touches a missing row
        rows = np.flatnonzero(seen)
        assert same(s[rows][:, rows], knn_similarity(x[rows], P, similarity))
        # every observed row keeps its p neighbours (among observed rows)
        assert np.diff(s[rows].indptr).min() >= P
        # the problem it removes: the filled graph links the identical filled rows to each other
        filled = view_knn_graph(x, P, similarity)
        assert filled[~seen][:, ~seen].nnz > 0


def test_anchor_graph_links_observed_rows_to_observed_anchors_only():
    views, observed = filled_views()
    anchors = anchor_indices(1, N, A)
    for x, seen in zip(views, observed.T):
        kept = np.flatnonzero(seen[anchors])
        assert 0 < kept.size < A
        z = view_anchor_graph(x, anchors, P, seen)
        assert z.shape == (N, A) and z.data.min() >= 0
        assert z[~seen].nnz == 0  # a missing row has no edge
        assert z[:, np.flatnonzero(~seen[anchors])].nnz == 0  # an unobserved anchor is no anchor
        rows = np.flatnonzero(seen)
        np.testing.assert_allclose(np.asarray(z[rows].sum(axis=1)).ravel(), 1.0, atol=1e-12)
        assert np.all(np.diff(z[rows].indptr) == P)
        assert same(z[rows][:, kept], anchor_matrix(*anchor_graph(x[rows], x[anchors[kept]], P), kept.size))
        # the nonzeros sit on each row's P nearest observed anchors
        dist = ((x[:, None, :] - x[anchors][None]) ** 2).sum(axis=2)
        dist[:, ~seen[anchors]] = np.inf
        dense = z.toarray()
        for i in rows:
            assert set(np.flatnonzero(dense[i])) <= set(np.argsort(dist[i])[:P])


@pytest.mark.parametrize("similarity", ["binary", "heat"])
def test_an_all_observed_mask_gives_the_filled_graphs_exactly(similarity):
    views, _ = clustered_views(n=N)
    seen = missing_view_mask(N, 3, 0.0, 0)[:, 0]
    assert seen.all()
    x = views[0]
    assert same(view_knn_graph(x, P, similarity, seen), view_knn_graph(x, P, similarity))
    anchors = anchor_indices(0, N, A)
    assert same(view_anchor_graph(x, anchors, P, seen), view_anchor_graph(x, anchors, P))


@pytest.mark.parametrize("graph", ["knn", "anchor"])
def test_summed_laplacian_is_a_symmetric_psd_laplacian_and_the_solve_needs_no_row_sum(graph):
    views, observed = filled_views(rate=0.9)
    options = IMKOptions(graph=graph, anchors=A, neighbours=P)
    lap = graph_laplacian(views, options, 1, observed)
    dense = lap.toarray() if sp.issparse(lap) else lap @ np.eye(N)
    np.testing.assert_allclose(dense, dense.T, atol=1e-15)
    np.testing.assert_allclose(dense.sum(axis=1), 0.0, atol=1e-12)
    assert np.linalg.eigvalsh(dense).min() > -1e-12
    assert not same(sp.csr_matrix(dense), sp.csr_matrix(graph_laplacian(views, options, 1) @ np.eye(N)))
    if graph == "anchor":
        # rows of the mean graph sum to (views observing the sample) / M: the degrees
        np.testing.assert_allclose(lap.degree, observed.sum(axis=1) / 3, atol=3 * P * 2.0**-17)
        params = IMKParams(lam=1.0)
        rng = np.random.default_rng(0)
        rhs = rng.normal(size=(N, 3))
        solved = WoodburySolver(lap, 3, params).solve(rhs)
        direct = np.linalg.solve(2 * params.lam * dense + 3 * params.rho * np.eye(N), rhs)
        assert np.all(np.isfinite(solved))
        np.testing.assert_allclose(solved, direct, atol=1e-10 * np.abs(direct).max())


@pytest.mark.parametrize("graph", ["knn", "anchor"])
def test_a_sample_one_view_observes_gets_its_edges_from_that_view(graph):
    views, observed = filled_views(rate=0.9, dropped=2)  # a selected sample keeps one of 3 views
    lonely = np.flatnonzero(observed.sum(axis=1) == 1)
    assert lonely.size > 0
    anchors = anchor_indices(1, N, A)
    if graph == "knn":
        graphs = [view_knn_graph(x, P, "binary", seen) for x, seen in zip(views, observed.T)]
    else:
        graphs = [view_anchor_graph(x, anchors, P, seen) for x, seen in zip(views, observed.T)]
    total = sum(graphs[1:], graphs[0])
    for i in lonely:
        v = int(np.flatnonzero(observed[i])[0])
        assert graphs[v][i].nnz >= P and same(total[i], graphs[v][i])
    if graph == "anchor":
        lap = AnchorLaplacian(total / 3)
        np.testing.assert_allclose(lap.degree[lonely], 1 / 3, atol=1e-12)
        assert np.all(np.abs((lap @ np.eye(N))[lonely]).sum(axis=1) > 0)


def test_bad_masks_and_too_few_observed_rows_are_refused():
    views, _ = clustered_views(n=N)
    x = views[0]
    anchors = anchor_indices(0, N, A)
    with pytest.raises(ValueError, match=r"a boolean mask of shape \(90,\) is needed .* shape \(89,\)"):
        view_knn_graph(x, P, "binary", np.ones(N - 1, bool))
    with pytest.raises(ValueError, match=r"a boolean mask of shape \(90,\) is needed .*int64"):
        view_anchor_graph(x, anchors, P, np.ones(N, np.int64))
    few = np.zeros(N, bool)
    few[:P] = True
    with pytest.raises(ValueError, match="the view observes 5 samples; a kNN graph with imk.neighbours = 5"):
        view_knn_graph(x, P, "binary", few)
    few = np.ones(N, bool)
    few[anchors[P:]] = False
    with pytest.raises(ValueError, match="the view observes 5 of the 24 anchor samples; .* needs 6"):
        view_anchor_graph(x, anchors, P, few)


def test_the_option_is_validated_with_a_clear_error():
    assert validate_run_config(BASE)["imk.missing-graph"] == "filled"
    assert validate_run_config({**BASE, "imk.missing-graph": "observed"})["imk.missing-graph"] == "observed"
    with pytest.raises(ConfigError, match=r"imk\.missing-graph.*'mask'.*filled, observed"):
        validate_run_config({**BASE, "imk.missing-graph": "mask"})
