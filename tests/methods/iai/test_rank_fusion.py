"""Rank fusion of the views' neighbour lists and the rank-spectral global assignment of FMVC-IAI."""

import networkx as nx
import numpy as np
import pytest

from fedmf_app.common.graphs import adjacency, knn_indices, modularity
from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.methods.iai import rank_fusion as rank_fusion_module
from fedmf_app.methods.iai.client_updates import client_round, client_setup
from fedmf_app.methods.iai.deep_clustering import spectral_labels
from fedmf_app.methods.iai.global_assignment import (
    RANK_SPECTRAL_CANDIDATES,
    anchor_distances,
    rank_spectral_labels,
)
from fedmf_app.methods.iai.params import GAEParams, IAIParams, iai_params
from fedmf_app.methods.iai.rank_fusion import adaptive_rank_depth, borda_scores, rank_fusion
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.methods.iai.server_updates import ServerState, server_round
from fedmf_app.options.schema import ConfigError
from fedmf_app.registry import validate_run_config

from support.data import clustered_views


def _purity(neighbours, labels):
    valid = neighbours >= 0
    return float((labels[np.where(valid, neighbours, 0)] == labels[:, None])[valid].mean())


def _pair_confusing_views(seed=0, per=60):
    """Four planted clusters; each of three views puts a different pair of them on one mean."""
    rng = np.random.default_rng(seed)
    k = 4
    labels = np.repeat(np.arange(k), per)
    views = []
    for a, b in ((0, 1), (2, 3), (0, 2)):
        means = rng.normal(size=(k, 6)) * 4
        means[b] = means[a]
        views.append(means[labels] + rng.normal(size=(labels.size, 6)))
    return views, labels


def test_borda_scores_are_the_weighted_rank_votes_counted_one_by_one():
    rng = np.random.default_rng(1)
    n = 30
    lists = [rng.integers(-1, n, size=(n, depth)) for depth in (6, 9)]
    weights = np.array([0.7, 1.8])
    expected = np.zeros((n, n))
    for voter, w in zip(lists, weights):
        depth = voter.shape[1]
        for i in range(n):
            for t, j in enumerate(voter[i]):
                if j >= 0 and j != i:
                    expected[i, j] += w * (1 - t / depth)
    np.testing.assert_allclose(borda_scores(lists, weights).toarray(), expected, atol=1e-12)


def test_borda_scores_of_a_block_of_samples_are_those_rows_of_all_the_scores():
    rng = np.random.default_rng(4)
    n = 50
    lists = [rng.integers(-1, n, size=(n, depth)) for depth in (6, 9, 9)]
    lists[1][::4] = -1
    weights = np.array([0.7, 1.8, 1.0])
    scores = borda_scores(lists, weights)
    for block in (slice(0, 50), slice(0, 1), slice(13, 29), slice(40, 60)):
        part = borda_scores(lists, weights, block)
        assert part.shape == (len(range(*block.indices(n))), n)
        np.testing.assert_array_equal(part.indptr, scores[block].indptr)
        np.testing.assert_array_equal(part.indices, scores[block].indices)
        np.testing.assert_array_equal(part.data, scores[block].data)  # the same sums, bit for bit


def test_rank_fusion_keeps_the_best_scored_candidates_with_ties_to_the_smaller_index():
    first = np.array([[1, 2, 3, 4]])
    second = np.array([[2, 1, 5, 6]])
    lists = [np.vstack([first, np.full((6, 4), -1)]), np.vstack([second, np.full((6, 4), -1)])]
    # candidate 1 and 2 score 1 + 3/4 each, 3 and 5 score 1/2, 4 and 6 score 1/4
    np.testing.assert_array_equal(rank_fusion(lists, 3)[0], [1, 2, 3])
    np.testing.assert_array_equal(rank_fusion(lists, 6)[0], [1, 2, 3, 5, 4, 6])
    # a sample nobody lists for gets an empty row, a longer k is padded
    assert np.all(rank_fusion(lists, 3)[1:] == -1)
    assert rank_fusion(lists, 8)[0, 6:].tolist() == [-1, -1]
    # weights move the order: the second voter alone decides between its own candidates
    np.testing.assert_array_equal(rank_fusion(lists, 3, np.array([0.0, 1.0]))[0], [2, 1, 5])


@pytest.mark.parametrize("block_rows", [1, 7, 16384])
def test_rank_fusion_is_each_rows_order_of_its_borda_scores_in_any_block_of_rows(monkeypatch, block_rows):
    monkeypatch.setattr(rank_fusion_module, "_FUSION_BLOCK_ROWS", block_rows)
    rng = np.random.default_rng(3)
    n, k = 40, 9
    lists = [rng.integers(-1, n, size=(n, depth)) for depth in (5, 8, 12)]
    lists[1][::3] = -1  # samples this voter does not observe
    weights = np.array([0.5, 1.0, 0.5])  # equal sums of votes: many ties
    scores = borda_scores(lists, weights).toarray()
    expected = np.full((n, k), -1)
    for i in range(n):
        ranked = sorted(np.flatnonzero(scores[i]), key=lambda j: (-scores[i, j], j))[:k]
        expected[i, : len(ranked)] = ranked
    np.testing.assert_array_equal(rank_fusion(lists, k, weights), expected)


@pytest.mark.parametrize("depth", [4, 10, 40])
def test_two_views_agreeing_in_the_first_half_of_their_lists_outvote_one_views_first_choice(depth):
    """With equal votes, a candidate at rank t in both of two lists of depth L scores 2 (1 - t / L):
    more than one view's first choice (score 1) exactly when t < L / 2."""
    n = 2 * depth + 3
    for t in range(depth):
        own = np.full((n, depth), -1)
        other = np.full((n, depth), -1)
        other[0, 0] = 1  # view 2's first choice, absent from view 1's list
        own[0, t] = other[0, t if t > 0 else 1] = 2  # both list candidate 2 at rank t
        if t == 0:
            other[0, 0], other[0, 1] = 2, 1
        top = rank_fusion([own, other], 1)[0, 0]
        assert top == (2 if t < depth / 2 or t == 0 else 1), t


def test_lists_deeper_than_the_degree_separate_clusters_that_each_view_confuses_with_another():
    """Every view merges a different pair of four planted clusters: each view's own graph is 75 % pure
    and its spectral clustering misses a cluster; the rank fusion of lists five times deeper than the
    degree keeps a neighbour only where the views agree, and separates all four."""
    views, labels = _pair_confusing_views()
    k = 10
    own = [knn_indices(v, k) for v in views]
    deep = [knn_indices(v, adaptive_rank_depth(k, labels.size)) for v in views]
    assert max(_purity(g, labels) for g in own) < 0.8
    assert max(clustering_scores(labels, spectral_labels(adjacency(g), 4, 0))["acc"] for g in own) < 0.8
    fused = rank_fusion(deep, k)
    assert _purity(fused, labels) > 0.99
    assert clustering_scores(labels, spectral_labels(adjacency(fused), 4, 0))["acc"] == 1.0
    # lists only as deep as the degree keep each view's mistakes
    assert _purity(rank_fusion(own, k), labels) < 0.8


def test_modularity_equals_networkx_on_a_weighted_graph():
    rng = np.random.default_rng(2)
    n = 40
    w = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.2), 1)
    a = w + w.T
    labels = rng.integers(0, 4, n)
    graph = nx.from_numpy_array(a)
    communities = [set(np.flatnonzero(labels == c).tolist()) for c in range(4)]
    expected = nx.algorithms.community.modularity(graph, communities, weight="weight")
    import scipy.sparse as sp

    assert modularity(sp.csr_matrix(a), labels) == pytest.approx(expected, abs=1e-12)
    assert modularity(sp.csr_matrix((n, n)), labels) == 0.0


def _rank_spectral(view_lists, coords, previous, k=10, seed=0):
    votes = np.ones(len(view_lists))
    graph = adjacency(rank_fusion(view_lists, k, votes), coords.shape[0])
    labels, chosen = rank_spectral_labels(graph, view_lists, votes, coords, previous, 4, k, seed)
    return graph, labels, chosen


def test_rank_spectral_keeps_the_most_modular_candidate_and_the_previous_labels_on_a_tie():
    views, labels = _pair_confusing_views(seed=3)
    lists = [knn_indices(v, 50) for v in views]
    coords = np.hstack(views)
    rng = np.random.default_rng(0)
    poor = rng.permutation(labels)
    graph, new, chosen = _rank_spectral(lists, coords, poor)
    # a random previous Y is beaten; the winner is at least as modular as every candidate
    assert chosen != "previous" and clustering_scores(labels, new)["acc"] == 1.0
    assert modularity(graph, new) >= max(modularity(graph, poor), modularity(graph, labels)) - 1e-12
    # the planted partition as the previous Y: every candidate equals it, the previous one is kept
    _, same, chosen = _rank_spectral(lists, coords, labels)
    assert chosen == "previous" and np.array_equal(same, labels)
    assert RANK_SPECTRAL_CANDIDATES[0] == "previous"


def test_rank_spectral_takes_the_embeddings_vote_only_where_it_agrees_better_with_the_views(monkeypatch):
    """The choice, with the two spectral clusterings stubbed: the joint fusion's partition is taken
    when it is the more modular on A_g (here the planted one, against a poor views-only one), and
    not when it is the poorer."""
    import fedmf_app.methods.iai.global_assignment as ga

    views, labels = _pair_confusing_views(seed=6)
    lists = [knn_indices(v, 50) for v in views]
    n = labels.size
    votes = np.ones(3)
    graph = adjacency(rank_fusion(lists, 10, votes), n)
    poor = np.random.default_rng(0).permutation(labels)
    joint_graph = adjacency(rank_fusion([*lists, knn_indices(np.hstack(views), 50)], 10, np.ones(4)), n)

    def stub(good_for_joint):
        def spectral(affinity, k, seed):
            is_joint = (affinity != joint_graph).nnz == 0
            return labels if is_joint == good_for_joint else poor

        return spectral

    for good_for_joint, expected in ((True, "views+embedding"), (False, "views")):
        monkeypatch.setattr(ga, "spectral_labels", stub(good_for_joint))
        new, chosen = rank_spectral_labels(graph, lists, votes, np.hstack(views), poor[::-1].copy(), 4, 10, 0)
        assert chosen == expected and np.array_equal(new, labels)


def test_the_server_round_fuses_the_views_lists_into_a_g_with_equal_votes_by_default():
    views, labels = _pair_confusing_views(seed=5, per=30)
    n, k = labels.size, 5
    anchors = np.sort(np.random.default_rng(0).choice(n, 20, replace=False))
    lists = [knn_indices(v, 25).astype(np.int32) for v in views]
    params = IAIParams(num_clusters=4, knn=k, anchors=20, anchor_neighbours=4, rank_depth=25)
    assert not params.uses_anchor_graphs
    state = ServerState(np.zeros((n, k), np.int32), labels, None, anchors, 1)
    distance_sum = sum(anchor_distances(v, anchors) for v in views)
    emd = [0.1, 0.2, 0.4]
    new, weights, info = server_round(state, distance_sum, None, lists, emd, params, 0)
    np.testing.assert_allclose(weights, 1 / 3)  # iai.fusion = uniform
    np.testing.assert_array_equal(new.neighbours, rank_fusion(lists, k))
    assert info["assignment"] in RANK_SPECTRAL_CANDIDATES
    assert clustering_scores(labels, new.labels)["acc"] == 1.0
    assert np.mean(new.target.argmax(axis=1) == new.labels) == 1.0
    # with the paper's EMD weights, the views vote 1/EMD-weighted (mean weight 1)
    from dataclasses import replace

    paper_m2 = replace(params, fusion="inverse-emd")
    weighted, weights, _ = server_round(state, distance_sum, None, lists, emd, paper_m2, 0)
    np.testing.assert_allclose(weights, np.array([10, 5, 2.5]) / 17.5)
    np.testing.assert_array_equal(weighted.neighbours, rank_fusion(lists, k, 3 * weights))


def test_a_client_lists_its_missing_rows_by_their_imputed_codes_and_without_imputation_not_at_all():
    views, _ = clustered_views(n=90, k=3, dims=(8, 6), noise=1.0, seed=1)
    mask = missing_view_mask(90, 2, 0.5, 1)
    gae = GAEParams(hidden=8, heads=2, out_dim=8, decoder_hidden=16, epochs=2)
    params = IAIParams(
        num_clusters=3, knn=5, anchors=20, anchor_neighbours=3, ae_hidden=(16,), embed_dim=8,
        ae_epochs=3, rank_depth=15, gae=gae,
    )  # fmt: skip
    observed = mask[:, 0]
    lists, ae = client_setup(views[0], observed, params, 0)
    assert lists.shape == (90, 15) and np.all(lists[~observed] == -1) and np.all(observed[lists[observed]])
    neighbours = knn_indices(views[0], 5).astype(np.int32)
    labels = np.arange(90) % 3
    anchors = np.arange(0, 90, 3)[:20]
    up = client_round(views[0], observed, ae, None, neighbours, labels, None, anchors, params, 1)
    assert up.code_neighbours.shape == (90, 15) and np.all(up.code_neighbours >= 0)
    # an observed row keeps its set-up list; a missing row ranks every other row by its imputed code
    np.testing.assert_array_equal(up.code_neighbours[observed], lists[observed])
    missing = np.flatnonzero(~observed)
    assert not np.any(up.code_neighbours[missing] == missing[:, None])
    assert not observed[up.code_neighbours[missing]].all()
    assert up.anchor_indices is None and up.anchor_values is None and up.distances.shape == (90, 20)
    # the set-up lists, kept by the client, give the same lists without a new search
    assert params.keeps_setup_lists
    kept = client_round(views[0], observed, ae, None, neighbours, labels, None, anchors, params, 1, lists)
    np.testing.assert_array_equal(kept.code_neighbours, up.code_neighbours)
    from dataclasses import replace

    no_m1 = replace(params, imputation="zeros")
    zeros = client_round(views[0], observed, ae, None, neighbours, labels, None, anchors, no_m1, 1)
    lists_zeros = zeros.code_neighbours
    assert np.all(lists_zeros[~observed] == -1) and np.all(observed[lists_zeros[observed]])
    kept = client_round(views[0], observed, ae, None, neighbours, labels, None, anchors, no_m1, 1, lists)
    np.testing.assert_array_equal(kept.code_neighbours, lists_zeros)


def test_rank_spectral_needs_the_rank_graph_update_and_the_depth_adapts_to_k():
    with pytest.raises(ConfigError, match="'iai.pseudo-labels' = 'rank-spectral' needs 'iai.graph-update'"):
        validate_run_config({"algorithm": "fmvc-iai", "iai.graph-update": "fused"})
    cfg = validate_run_config({"algorithm": "fmvc-iai"})
    params = iai_params(cfg, 10, num_samples=2000)
    assert (params.start_graph, params.graph_update, params.pseudo_labels) == (
        "rank",
        "rank",
        "rank-spectral",
    )
    assert iai_params(cfg, 10, num_samples=2000).rank_depth == 100  # HW: k = 20
    assert iai_params(cfg, 40, num_samples=400).rank_depth == 25  # ORL: k = 5
    assert iai_params({**cfg, "iai.rank-depth": 500}, 3, num_samples=60).rank_depth == 59
    old = validate_run_config(
        {"algorithm": "fmvc-iai", "iai.graph-update": "fused", "iai.pseudo-labels": "anchor-kmeans"}
    )
    assert iai_params(old, 10, num_samples=2000).uses_anchor_graphs


def test_training_rounds_make_the_lists_of_partially_observed_samples_purer_by_imputation():
    """Two views with independent noise, half the samples missing one: in A_g⁰ a sample seen by one
    view has that view's vote only; once its missing code is imputed on A_g, it gets a list in that
    view too, so the rows of A_g of those samples get purer over the rounds (3 seeds), and the last
    round keeps the start clustering (within 0.02: on these Gaussian blobs one round's spectral
    clustering can swing, e.g. 0.850 -> 0.688 -> 0.848 at seed 2)."""
    gae = GAEParams(hidden=16, heads=2, out_dim=16, decoder_hidden=32, epochs=10)
    params = IAIParams(
        num_clusters=4, knn=10, anchors=40, anchor_neighbours=5, ae_hidden=(32,), embed_dim=16,
        ae_epochs=30, rank_depth=50, gae=gae,
    )  # fmt: skip
    gains = []
    for seed in range(3):
        views, truth = clustered_views(n=400, k=4, dims=(12, 12), noise=2.0, seed=seed)
        mask = missing_view_mask(400, 2, 0.5, seed)
        partial = ~mask.all(axis=1)
        fed = IAIReference(views, params, params.num_clusters, seed=seed, observed=mask)
        fed.round()
        start = fed.state
        for _ in range(3):
            fed.round()
        last = fed.state
        start_acc = clustering_scores(truth, start.labels)["acc"]
        assert clustering_scores(truth, last.labels)["acc"] >= start_acc - 0.02, seed
        before = _row_purity(start.neighbours, truth, partial)
        gains.append(_row_purity(last.neighbours, truth, partial) - before)
    assert min(gains) > 0 and np.mean(gains) > 0.01, gains


def _row_purity(neighbours, labels, rows):
    g = neighbours[rows]
    valid = g >= 0
    return float((labels[np.where(valid, g, 0)] == labels[rows][:, None])[valid].mean())
