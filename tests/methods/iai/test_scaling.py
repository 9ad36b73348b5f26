"""FMVC-IAI at scale: the sparse kernels, the sampled structure loss, the global kNN search, the
Lanczos spectral clustering and sparse views each give what the exact form gives (PyG's GATConv,
the enumerated N^2 loss, brute force, scikit-learn's spectral_clustering, the dense view)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.cluster import spectral_clustering
from torch.nn import functional as F
from torch_geometric.nn import GATConv
from torch_geometric.utils import softmax

from fedmf_app.common.graphs import adjacency, knn_indices
from fedmf_app.common.metrics import clustering_scores
from fedmf_app.methods.iai.client_updates import client_round, client_setup
from fedmf_app.methods.iai.deep_clustering import fuse, spectral_labels
from fedmf_app.methods.iai.edge_kernels import EdgePattern, edge_dot, edge_softmax
from fedmf_app.methods.iai.graph_autoencoder import (
    GraphAttention,
    GraphAutoencoder,
    PairSet,
    edge_keys,
    uniform_non_edges,
)
from fedmf_app.methods.iai.params import GAEParams, IAIParams
from fedmf_app.methods.iai.sample_graphs import anchor_graph, anchor_knn, anchor_matrix
from fedmf_app.methods.iai.view_scaling import scale_features


def _planted(n, k, dim, seed, spread=3.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    return spread * rng.normal(size=(k, dim))[labels] + rng.normal(size=(n, dim)), labels


def _pyg_layer(layer):
    """PyG's ``GATConv`` holding ``layer``'s own parameters (shared, so gradients reach them)."""
    conv = GATConv(layer.lin.in_features, layer.out_channels, heads=layer.heads)
    conv.lin.weight = layer.lin.weight
    conv.att_src, conv.att_dst, conv.bias = layer.att_src, layer.att_dst, layer.bias
    return conv


def _pyg_reference(model, z, edges):
    """The same network by PyG's message passing: ``GATConv.forward`` (self loops added) on the
    model's own parameters, and the structure logits gathered pair by pair."""
    conv1, conv2 = _pyg_layer(model.conv1), _pyg_layer(model.conv2)
    h = conv2(F.elu(conv1(z, edges)), edges)
    hs = model.structure_head(h)
    return h, (hs[edges[0]] * hs[edges[1]]).sum(dim=1)


@pytest.mark.parametrize(("in_dim", "width", "heads"), [(6, 5, 3), (64, 32, 4), (15, 4, 1)])
def test_attention_layer_is_drawn_as_pyg_draws_gatconv(in_dim, width, heads):
    # the same seed gives PyG's weights, under the same names, and leaves the RNG where PyG does
    torch.manual_seed(3)
    pyg = GATConv(in_dim, width, heads=heads).state_dict()
    after_pyg = torch.rand(4)
    torch.manual_seed(3)
    ours = GraphAttention(in_dim, width, heads=heads).state_dict()
    after_ours = torch.rand(4)
    assert ours.keys() == pyg.keys()
    for key in pyg:
        assert torch.equal(ours[key], pyg[key]), key
    assert torch.equal(after_ours, after_pyg)


def test_edge_softmax_is_pygs_softmax_and_sums_to_one_per_row():
    gen = torch.Generator().manual_seed(0)
    rows = torch.randint(0, 30, (300,), generator=gen)
    logits = 20 * torch.randn(300, 3, generator=gen)
    out = edge_softmax(logits, rows, 40)
    assert torch.equal(out, softmax(logits, rows, num_nodes=40))
    sums = torch.zeros(40, 3).index_add_(0, rows, out)
    present = torch.bincount(rows, minlength=40) > 0
    torch.testing.assert_close(sums[present], torch.ones(int(present.sum()), 3))
    assert torch.all(sums[~present] == 0)


def test_sparse_gat_and_structure_logits_equal_pyg_values_and_gradients():
    x, _ = _planted(80, 3, 6, 0)
    a = adjacency(knn_indices(x, 4)).tocoo()
    edges = torch.as_tensor(np.vstack([a.row, a.col]), dtype=torch.long)
    z = torch.as_tensor(x, dtype=torch.float32)
    torch.manual_seed(0)
    model = GraphAutoencoder(6, 3, GAEParams(hidden=5, heads=3, out_dim=4, decoder_hidden=7))
    results = {}
    for kernels in ("pyg", "sparse"):
        model.zero_grad()
        if kernels == "sparse":
            h = model(z, model.graph(edges, 80))
            pattern, order = EdgePattern.from_pairs(edges, 80)
            logits = torch.empty(edges.shape[1]).index_put((order,), model.edge_logits(h, pattern))
        else:
            h, logits = _pyg_reference(model, z, edges)
        loss = (h**2).sum() + F.softplus(logits).sum()
        loss.backward()
        results[kernels] = (
            h.detach(),
            logits.detach(),
            {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None},
        )
    (h0, l0, g0), (h1, l1, g1) = results["pyg"], results["sparse"]
    torch.testing.assert_close(h1, h0, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(l1, l0, rtol=1e-5, atol=1e-5)
    assert g0.keys() == g1.keys() and len(g0) >= 8
    for key in g0:
        torch.testing.assert_close(g1[key], g0[key], rtol=1e-4, atol=1e-4)


def test_edge_dot_gradient_is_the_sparse_product():
    rng = np.random.default_rng(1)
    a = torch.tensor(rng.normal(size=(7, 3)), requires_grad=True)
    b = torch.tensor(rng.normal(size=(7, 3)), requires_grad=True)
    pairs = torch.tensor([[0, 0, 3, 6, 6, 2], [1, 5, 3, 0, 2, 2]])
    pattern, order = EdgePattern.from_pairs(pairs, 7)
    assert torch.autograd.gradcheck(lambda a, b: edge_dot(a, b, pattern), (a, b))
    direct = (a[pairs[0]] * b[pairs[1]]).sum(1)[order]
    torch.testing.assert_close(edge_dot(a, b, pattern), direct)


def test_sampled_non_edge_loss_is_an_unbiased_estimate_of_the_full_one():
    n = 25
    a = adjacency(knn_indices(_planted(n, 2, 3, 2)[0], 3)).tocoo()
    edges = np.vstack([np.concatenate([a.row, np.arange(n)]), np.concatenate([a.col, np.arange(n)])])
    logits = np.random.default_rng(3).normal(size=(n, n))
    bce = np.log1p(np.exp(logits))  # BCE of the label 0
    non_edge = np.ones((n, n), dtype=bool)
    non_edge[edges[0], edges[1]] = False
    full = bce[non_edge].mean()  # the N^2 loss's non-edge term
    draws = uniform_non_edges(PairSet.of(edges, n), 200_000, np.random.default_rng(4))
    assert non_edge[draws[0], draws[1]].all()  # never an edge, never a self loop
    sampled = bce[draws[0], draws[1]]
    assert abs(sampled.mean() - full) < 4 * sampled.std() / np.sqrt(sampled.size)
    # every non-edge is drawn about equally often (uniform)
    counts = np.bincount(draws[0] * n + draws[1], minlength=n * n)[non_edge.ravel()]
    expected = draws.shape[1] / non_edge.sum()
    assert abs(counts.mean() - expected) < 1e-9 and counts.min() > 0.7 * expected


def _fused_anchor_graph(n, seed):
    x, labels = _planted(n, 5, 8, seed, spread=1.5)
    rng = np.random.default_rng(seed)
    anchors = rng.choice(n, 40, replace=False)
    views = [x + 0.5 * rng.normal(size=x.shape) for _ in range(3)]
    graphs = [anchor_matrix(*anchor_graph(v, v[anchors], 5), 40) for v in views]
    return fuse(graphs, np.full(3, 1 / 3)), labels


def test_anchor_knn_is_exact_when_every_list_holds_every_sample():
    g, _ = _fused_anchor_graph(300, 5)
    rows = g.toarray()
    sq = ((rows[:, None, :] - rows[None]) ** 2).sum(-1)
    np.fill_diagonal(sq, np.inf)
    out = anchor_knn(g, 7, probes=40)
    exact = np.sort(sq, axis=1)[:, :7]
    np.testing.assert_allclose(np.take_along_axis(sq, out, axis=1), exact, atol=1e-12)
    assert np.all(out != np.arange(300)[:, None])
    assert all(len(set(r)) == 7 for r in out)


def test_anchor_knn_recall_at_the_default_probes():
    g, _ = _fused_anchor_graph(2000, 6)
    exact = knn_indices(g, 10)
    approx = anchor_knn(g, 10, probes=IAIParams(num_clusters=5).knn_probes)
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx, exact)])
    assert recall >= 0.9


def test_lanczos_spectral_clustering_equals_scikit_learns_partition():
    """scikit-learn's spectral_clustering (shift-invert ARPACK on the Laplacian) is the reference."""
    x, labels = _planted(400, 4, 5, 7, spread=2.0)
    graph = adjacency(knn_indices(x, 8))
    lanczos = spectral_labels(graph, 4, 0)
    reference = spectral_clustering(graph, n_clusters=4, random_state=0, assign_labels="cluster_qr")
    assert clustering_scores(reference, lanczos)["ari"] == 1.0
    assert clustering_scores(labels, lanczos)["acc"] > 0.95


def _counts(n, d, seed):
    rng = np.random.default_rng(seed)
    return rng.poisson(0.05, size=(n, d)).astype(float) * rng.integers(1, 4, size=(n, d))


@pytest.mark.parametrize("rule", ["auto", "standard", "row-l2", "none"])
@pytest.mark.parametrize("kind", ["counts", "dense"])
def test_sparse_view_scales_to_the_dense_rows(rule, kind):
    x = _counts(90, 40, 8) if kind == "counts" else np.random.default_rng(8).normal(size=(90, 12))
    observed = np.random.default_rng(9).random(90) < 0.7
    dense = scale_features(x, observed, rule)
    scaled = scale_features(sp.csr_matrix(x), observed, rule)
    rows = np.arange(90)
    np.testing.assert_array_equal(scaled[rows], dense)
    np.testing.assert_array_equal(np.concatenate([scaled[b] for b in scaled.blocks()]), dense)
    assert sp.issparse(scaled.matrix)


def test_a_sparse_view_gives_the_dense_client_results():
    x = _counts(120, 60, 10)
    observed = np.random.default_rng(11).random(120) < 0.6
    params = IAIParams(
        num_clusters=3,
        knn=5,
        anchors=20,
        anchor_neighbours=4,
        rank_depth=100,
        ae_hidden=(16,),
        embed_dim=6,
        ae_epochs=3,
        gae=GAEParams(hidden=4, heads=2, out_dim=5, decoder_hidden=8, epochs=2),
    )
    outputs = []
    for view in (x, sp.csr_matrix(x)):
        graph, ae_state = client_setup(view, observed, params, 0)
        neighbours = np.where(graph >= 0, graph, np.arange(120)[:, None])
        labels = np.arange(120) % 3
        upload = client_round(
            view, observed, ae_state, None, neighbours, labels, None, np.arange(20), params, 1
        )
        outputs.append((graph, upload))
    (g0, u0), (g1, u1) = outputs
    np.testing.assert_array_equal(g1, g0)
    np.testing.assert_array_equal(u1.distances, u0.distances)
    np.testing.assert_array_equal(u1.anchor_indices, u0.anchor_indices)
    np.testing.assert_array_equal(u1.anchor_values, u0.anchor_values)


@pytest.mark.parametrize("bitmap", [True, False], ids=["bitmap", "sorted-keys"])
def test_non_edges_are_those_of_the_plain_rejection_loop(bitmap):
    # the same draws, in the same order, as testing each key against the edge keys in turn, whether
    # the pairs are looked up in a bitmap or by binary search
    n, rng = 300, np.random.default_rng(5)
    edges = rng.integers(0, n, size=(2, 20_000))
    forbidden = PairSet.of(edges, n, bitmap_max_pairs=n * n if bitmap else n * n - 1)
    assert (forbidden.bits is not None) == bitmap
    draws = uniform_non_edges(forbidden, 50_000, np.random.default_rng(6))
    plain, stream, edge_set = [], np.random.default_rng(6), set(forbidden.keys.tolist())
    while len(plain) < 50_000:
        keys = stream.integers(0, n * n, size=50_000 - len(plain), dtype=np.int64)
        plain += [k for k in keys.tolist() if k not in edge_set]
    np.testing.assert_array_equal(draws, np.vstack([np.array(plain) // n, np.array(plain) % n]))


@pytest.mark.parametrize("num_edges", [0, 1, 5_000])
def test_edge_keys_are_the_sorted_distinct_keys(num_edges):
    n = 40
    edges = np.random.default_rng(7).integers(0, n, size=(2, num_edges))
    np.testing.assert_array_equal(edge_keys(edges, n), np.unique(edges[0] * n + edges[1]))


def _planted_graph(n, k, seed):
    """Planted clusters in 8 dimensions and their symmetric 6-NN graph (both directions, no loops)."""
    z, labels = _planted(n, k, 8, seed)
    a = adjacency(knn_indices(z, 6), n).tocoo()
    return z, labels, np.vstack([a.row, a.col]).astype(np.int64)


def test_sampled_subgraphs_are_the_induced_subgraphs_of_uniform_node_samples():
    from fedmf_app.methods.iai.graph_autoencoder import _sampled_subgraphs

    n, nodes = 300, 100
    _, _, edges = _planted_graph(n, 3, 0)
    dense = np.zeros((n, n), dtype=bool)
    dense[edges[0], edges[1]] = True
    draws = _sampled_subgraphs(torch.as_tensor(edges), n, nodes, 0)
    seen = np.zeros(n, dtype=int)
    for _ in range(60):
        ids, local = next(draws)
        ids = ids.numpy()
        assert ids.size == nodes and np.unique(ids).size == nodes
        pairs = ids[local.numpy()]
        assert dense[pairs[0], pairs[1]].all()  # edges of the graph...
        assert pairs.shape[1] == dense[np.ix_(ids, ids)].sum()  # ...and every edge among the nodes
        seen[ids] += 1
    # each node is drawn with probability 1/3 per subgraph: 20 times in 60 draws on average
    assert seen.min() > 5 and seen.max() < 40 and abs(seen.mean() - 20) < 1e-9


def _count_forward_rows(model):
    rows = []
    original = model.forward
    model.forward = lambda z, graph: rows.append(z.shape[0]) or original(z, graph)
    return rows


def test_the_whole_graph_is_trained_up_to_the_threshold_and_subgraphs_above_it():
    from dataclasses import replace

    from fedmf_app.methods.iai.graph_autoencoder import seeded, train_gae

    n = 90
    z, _, edges = _planted_graph(n, 3, 1)
    base = GAEParams(hidden=4, heads=2, out_dim=4, decoder_hidden=8, epochs=3)
    states, counts = {}, {}
    for nodes in (n, 10**9, 40):
        with seeded(0):
            model = GraphAutoencoder(8, 3, base)
        counts[nodes] = _count_forward_rows(model)
        train_gae(model, z, edges, None, replace(base, subgraph_nodes=nodes), 0)
        states[nodes] = model.state_dict()
    assert counts[n] == counts[10**9] == [n] * 3
    assert counts[40] == [30] * 3  # 90 nodes in ceil(90 / 40) = 3 parts of 30
    for key, value in states[n].items():  # at the threshold: the whole-graph training, bit for bit
        assert torch.equal(value, states[10**9][key]), key


def test_subgraph_training_lowers_the_loss_as_the_whole_graph_does_and_keeps_the_planted_clusters():
    from dataclasses import replace

    from sklearn.cluster import KMeans

    from fedmf_app.methods.iai.graph_autoencoder import seeded, train_gae

    n, k = 600, 3
    z, labels, edges = _planted_graph(n, k, 2)
    params = GAEParams(hidden=8, heads=2, out_dim=8, decoder_hidden=16)
    losses = {}
    for nodes, epochs in [(200, 1), (200, 100), (n, 100)]:
        with seeded(0):
            model = GraphAutoencoder(8, k, params)
        rows = _count_forward_rows(model)
        losses[nodes, epochs] = train_gae(
            model, z, edges, None, replace(params, epochs=epochs, subgraph_nodes=nodes), 0
        )
        assert rows == [nodes] * epochs  # 600 nodes in 3 parts of 200, or the whole graph
        if nodes < n:
            sampled = model
    first, trained, whole = losses[200, 1], losses[200, 100], losses[n, 100]
    assert trained.attribute < 0.5 * first.attribute and trained.structure < 0.5 * first.structure
    assert trained.attribute == pytest.approx(whole.attribute, rel=0.15)
    assert trained.structure == pytest.approx(whole.structure, rel=0.15)
    graph = sampled.graph(torch.as_tensor(edges), n)
    with torch.no_grad():
        h = sampled(torch.as_tensor(z, dtype=torch.float32), graph).numpy()
    found = KMeans(k, n_init=10, random_state=0).fit_predict(h)
    assert clustering_scores(labels, found)["acc"] > 0.95
