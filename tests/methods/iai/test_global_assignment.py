"""The anchor-kmeans global assignment of FMVC-IAI: landmark MDS, k-means labels, balance, sizes."""

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.methods.iai.deep_clustering import prototype_distances
from fedmf_app.methods.iai.global_assignment import (
    adaptive_anchor_neighbours,
    adaptive_knn,
    anchor_distances,
    anchor_kmeans,
    anchor_spectral_embedding,
    anchor_spectral_labels,
    balance_embedding,
    between_share,
    landmark_mds,
)
from fedmf_app.methods.iai.params import GAEParams, IAIParams, iai_params
from fedmf_app.methods.iai.reference import IAIReference
from fedmf_app.methods.iai.sample_graphs import anchor_graph
from fedmf_app.methods.iai.server_updates import ServerState, server_round, start_target
from fedmf_app.registry import validate_run_config

from support.data import clustered_views


def _pairwise(x):
    return prototype_distances(x, x)


def test_landmark_mds_recovers_the_exact_euclidean_geometry_of_a_planted_configuration():
    rng = np.random.default_rng(0)
    n, d, r = 300, 5, 20
    x = rng.normal(size=(n, d)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5])
    anchors = np.sort(rng.choice(n, r, replace=False))
    coords = landmark_mds(anchor_distances(x, anchors), anchors)
    # the anchors span R^5, so every sample is placed exactly: same pairwise distances
    assert coords.shape == (n, d)
    np.testing.assert_allclose(_pairwise(coords), _pairwise(x), rtol=1e-8, atol=1e-8)
    # kept coordinates: the leading ones, a projection (distances never grow)
    two = landmark_mds(anchor_distances(x, anchors), anchors, dim=2)
    assert two.shape == (n, 2) and np.all(_pairwise(two) <= _pairwise(x) + 1e-8)


def test_landmark_mds_of_summed_view_distances_is_the_concatenated_geometry():
    rng = np.random.default_rng(1)
    views = [rng.normal(size=(100, 3)), rng.normal(size=(100, 4))]
    anchors = np.arange(0, 100, 5)
    total = sum(anchor_distances(v, anchors) for v in views)
    coords = landmark_mds(total, anchors)
    np.testing.assert_allclose(_pairwise(coords), _pairwise(np.hstack(views)), rtol=1e-8, atol=1e-8)


def test_anchor_kmeans_recovers_planted_clusters_and_its_target_is_a_sharpened_assignment():
    rng = np.random.default_rng(2)
    k, per = 4, 50
    truth = np.repeat(np.arange(k), per)
    centres = rng.normal(size=(k, 6)) * 6.0
    h = centres[truth] + rng.normal(size=(k * per, 6))
    anchors = np.sort(rng.choice(k * per, 30, replace=False))
    labels, target = anchor_kmeans(anchor_distances(h, anchors), anchors, k, np.random.default_rng(0))
    assert clustering_scores(truth, labels)["acc"] == 1.0
    np.testing.assert_allclose(target.sum(axis=1), 1.0)
    # column c of P belongs to label c, and P puts most mass there
    assert np.mean(target.argmax(axis=1) == labels) == 1.0
    # seeded: the same Generator seed gives the same labels
    again, _ = anchor_kmeans(anchor_distances(h, anchors), anchors, k, np.random.default_rng(0))
    np.testing.assert_array_equal(labels, again)


def test_anchor_spectral_embedding_is_the_leading_eigenvectors_of_the_anchor_affinity():
    """Against the dense form: S V Σ^{-1} spans the K leading eigenvectors of
    D^{-1/2} G Λ^{-1} Gᵀ D^{-1/2}; its labels recover three chains of anchors that a little
    random weight joins into one connected graph."""
    rng = np.random.default_rng(9)
    k, per, r = 3, 60, 24
    truth = np.repeat(np.arange(k), per)
    # three elongated clusters side by side: each sample weighs the anchors of its own cluster
    anchors_of = np.array_split(np.arange(r), k)
    rows, cols, vals = [], [], []
    for i, c in enumerate(truth):
        pos = rng.uniform(0, len(anchors_of[c]) - 1)
        near = anchors_of[c][[int(np.floor(pos)), int(np.ceil(pos))]]
        rows += [i, i, i]
        cols += [near[0], near[1], int(rng.integers(r))]
        vals += [0.5, 0.49, 0.01]  # a little weight on a random anchor connects the clusters
    g = sp.csr_matrix((vals, (rows, cols)), shape=(k * per, r))
    labels = anchor_spectral_labels(g, k, np.random.default_rng(0))
    assert clustering_scores(truth, labels)["acc"] == 1.0
    np.testing.assert_array_equal(labels, anchor_spectral_labels(g, k, np.random.default_rng(0)))
    # the embedding spans the dense normalised affinity's K leading eigenvectors
    dense = g.toarray()
    w = dense @ np.diag(1 / dense.sum(axis=0)) @ dense.T
    d = w.sum(axis=1)
    values, vectors = np.linalg.eigh(w / np.sqrt(np.outer(d, d)))
    order = np.argsort(values)[::-1]
    lead = vectors[:, order[:k]]
    assert values[order[k - 1]] - values[order[k]] > 1e-3
    u = anchor_spectral_embedding(g, k)
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-10)
    np.testing.assert_allclose(u @ u.T, lead @ lead.T, atol=1e-8)


def test_unit_variance_balance_gives_every_view_the_same_mean_squared_spread():
    rng = np.random.default_rng(3)
    big, small = rng.normal(size=(80, 4)) * 100.0, rng.normal(size=(80, 7)) * 0.01
    for h in (big, small):
        out = balance_embedding(h, "unit-variance")
        assert ((out - out.mean(axis=0)) ** 2).sum(axis=1).mean() == pytest.approx(1.0)
        # a scaling only: the view's own geometry is kept up to one factor
        ratio = _pairwise(out)[np.triu_indices(80, 1)] / _pairwise(h)[np.triu_indices(80, 1)]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-8)
    np.testing.assert_array_equal(balance_embedding(big, "none"), big)
    with pytest.raises(ValueError, match="unknown view balance"):
        balance_embedding(big, "max")


def test_adaptive_sizes_fit_small_and_large_clusters():
    # HW (2000 samples, 10 clusters), NoisyMNIST: the paper's k = 20; ORL (400, 40), Yale (165, 15)
    assert adaptive_knn(2000, 10) == 20 and adaptive_knn(10000, 10) == 20
    assert adaptive_knn(400, 40) == 5 and adaptive_knn(165, 15) == 6
    assert all(5 <= adaptive_knn(n, k) <= 20 for n in range(10, 3000, 37) for k in range(1, 50, 7))
    assert adaptive_anchor_neighbours(200, 10) == 10 and adaptive_anchor_neighbours(200, 40) == 3
    assert all(1 <= adaptive_anchor_neighbours(r, 7) <= r - 1 for r in range(2, 300))


@pytest.mark.parametrize("rule", ["anchor-kmeans", "anchor-spectral"])
def test_the_server_round_labels_planted_clusters_from_summed_view_distances(rule):
    rng = np.random.default_rng(4)
    k, per, m = 3, 40, 2
    n = k * per
    truth = np.repeat(np.arange(k), per)
    anchors = np.sort(rng.choice(n, 20, replace=False))
    views = [rng.normal(size=(k, 4))[truth] * 5 + rng.normal(size=(n, 4)) for _ in range(m)]
    params = IAIParams(
        num_clusters=k, knn=5, anchors=20, anchor_neighbours=4, pseudo_labels=rule, graph_update="fused"
    )
    previous = rng.permutation(truth)  # a poor previous Y: the new one must not depend on it
    state = ServerState(np.zeros((n, 5), np.int32), previous, None, anchors, 1)
    graphs = [anchor_graph(v, v[anchors], 4) for v in views]
    distances = [anchor_distances(v, anchors) for v in views]
    new, _, _ = server_round(state, sum(distances), graphs, None, None, params, 0)
    assert clustering_scores(truth, new.labels)["acc"] == 1.0
    # P's columns follow Y's names after the alignment
    assert np.mean(new.target.argmax(axis=1) == new.labels) == 1.0


def test_anchor_kmeans_training_rounds_improve_on_the_support_start_of_a_small_planted_problem():
    """Three noisy views of 3 planted clusters, half the samples missing a view: the spectral start
    Y⁰ of the support start graph is poor (ACC 0.74 here), k-means on the full concatenation is near
    1; every training round with the anchor-kmeans assignment on the fused anchor graphs scores at
    least Y⁰, the last clearly above."""
    views, truth = clustered_views(n=150, k=3, dims=(10, 10, 10), noise=2.5, seed=2)
    gae = GAEParams(hidden=16, heads=2, out_dim=16, decoder_hidden=32, epochs=20)
    params = IAIParams(
        num_clusters=3, knn=10, anchors=40, anchor_neighbours=5, ae_hidden=(32,), embed_dim=16,
        ae_epochs=50, gae=gae, start_graph="support", graph_update="fused", pseudo_labels="anchor-kmeans",
        fusion="inverse-emd",
    )  # fmt: skip
    fed = IAIReference(views, params, 3, seed=2, observed=missing_view_mask(150, 3, 0.5, 2))
    fed.round()
    start = clustering_scores(truth, fed.labels())["acc"]
    acc = []
    for _ in range(4):
        fed.round()
        acc.append(clustering_scores(truth, fed.labels())["acc"])
    assert start < 0.8
    assert min(acc) >= start and acc[-1] >= start + 0.05, (start, acc)


def test_start_target_is_none_by_default_and_a_smoothed_y0_on_request():
    labels = np.array([0, 2, 1, 2])
    assert start_target(labels, IAIParams(num_clusters=3)) is None
    p0 = start_target(labels, IAIParams(num_clusters=3, start_target="start-labels"))
    np.testing.assert_allclose(p0.sum(axis=1), 1.0)
    np.testing.assert_array_equal(p0.argmax(axis=1), labels)


def test_the_run_config_resolves_the_adaptive_sizes():
    cfg = validate_run_config({"algorithm": "fmvc-iai"})
    assert (cfg["iai.knn"], cfg["iai.anchor-neighbours"]) == (0, 0)
    hw = iai_params(cfg, 10, num_samples=2000)
    assert (hw.knn, hw.anchors, hw.anchor_neighbours) == (20, 200, 10)
    orl = iai_params(cfg, 40, num_samples=400)
    assert (orl.knn, orl.anchor_neighbours) == (5, 3)
    fixed = iai_params({**cfg, "iai.knn": 7, "iai.anchor-neighbours": 4}, 10, num_samples=2000)
    assert (fixed.knn, fixed.anchor_neighbours) == (7, 4)
    with pytest.raises(ValueError, match="needs the number of samples"):
        iai_params(cfg, 10)


def test_consensus_balance_weighs_a_view_by_its_between_cluster_share_under_y():
    rng = np.random.default_rng(4)
    k, per = 4, 60
    labels = np.repeat(np.arange(k), per)
    centres = rng.normal(size=(k, 5)) * 5.0
    clear = centres[labels] + 0.1 * rng.normal(size=(k * per, 5))
    noise = rng.normal(size=(k * per, 5)) * 50.0
    share_clear, share_noise = between_share(clear, labels), between_share(noise, labels)
    assert share_clear > 0.99 and share_noise < 0.05
    # a scale-free share: R² of an embedding and of any multiple of it agree
    assert between_share(7.0 * noise, labels) == pytest.approx(share_noise)
    # the consensus scaling keeps R² of the total variance: the clear view weighs ~20x more
    for h, share in ((clear, share_clear), (noise, share_noise)):
        out = balance_embedding(h, "consensus", labels)
        assert ((out - out.mean(axis=0)) ** 2).sum(axis=1).mean() == pytest.approx(share)
    with pytest.raises(ValueError, match="needs the pseudo-labels"):
        balance_embedding(clear, "consensus")


def test_fused_start_graph_update_keeps_every_start_edge_and_every_fused_edge():
    from dataclasses import replace

    from fedmf_app.common.graphs import adjacency

    rng = np.random.default_rng(5)
    k, per, m = 3, 40, 2
    n = k * per
    truth = np.repeat(np.arange(k), per)
    anchors = np.sort(rng.choice(n, 20, replace=False))
    views = [rng.normal(size=(k, 4))[truth] * 5 + rng.normal(size=(n, 4)) for _ in range(m)]
    start = np.stack([rng.choice(n, 5, replace=False) for _ in range(n)]).astype(np.int32)  # random A_g⁰
    state = ServerState(start, truth, None, anchors, 1, start)
    distance_sum = sum(anchor_distances(v, anchors) for v in views)
    uploads = (distance_sum, [anchor_graph(v, v[anchors], 4) for v in views])
    params = IAIParams(
        num_clusters=k, knn=5, anchors=20, anchor_neighbours=4, graph_update="fused",
        pseudo_labels="anchor-kmeans",
    )  # fmt: skip
    fused, _, _ = server_round(state, *uploads, None, None, params, 0)
    joined, _, _ = server_round(state, *uploads, None, None, replace(params, graph_update="fused-start"), 0)
    a_fused, a_joined, a_start = (
        adjacency(fused.neighbours, n),
        adjacency(joined.neighbours, n),
        adjacency(start, n),
    )
    # the union, nothing else: A_joined = max(A_fused, A_start), and A_g⁰ stays in the state
    assert (a_joined != a_fused.maximum(a_start)).nnz == 0
    assert (a_fused != a_start).nnz > 0 and joined.neighbours.shape == (n, 10)
    np.testing.assert_array_equal(joined.start_neighbours, start)
    np.testing.assert_array_equal(fused.labels, joined.labels)  # the graph update leaves Y alone
