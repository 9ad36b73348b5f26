"""FMVC-IAI kernels (paper C): the mathematical properties the method states."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from fedmf_app.common.graphs import adjacency, knn_indices
from fedmf_app.data.missing_views import missing_view_mask
from fedmf_app.methods.iai.adam import Adam
from fedmf_app.methods.iai.deep_clustering import (
    fusion_weights,
    label_alignment,
    prototype_distances,
    prototypes,
    student_t,
    target_distribution,
    total_variation_emd,
)
from fedmf_app.methods.iai.feature_propagation import feature_propagation, normalised_adjacency
from fedmf_app.methods.iai.graph_autoencoder import pretrain_autoencoder
from fedmf_app.methods.iai.sample_graphs import anchor_graph, observed_knn, start_graph


def _random_graph(n, k, seed):
    rng = np.random.default_rng(seed)
    return adjacency(knn_indices(rng.normal(size=(n, 3)), k))


def test_feature_propagation_keeps_observed_rows_and_reaches_the_harmonic_solution():
    rng = np.random.default_rng(0)
    n = 15
    a = _random_graph(n, 3, 0)
    x = rng.normal(size=(n, 4))
    observed = np.zeros(n, dtype=bool)
    observed[rng.choice(n, 6, replace=False)] = True
    out = feature_propagation(x, observed, a, iterations=3000)
    np.testing.assert_array_equal(out[observed], x[observed])
    # harmonic extension: (I - Ã)_uu x_u = Ã_uo x_o
    at = normalised_adjacency(a).toarray()
    u, o = ~observed, observed
    expected = np.linalg.solve(np.eye(u.sum()) - at[np.ix_(u, u)], at[np.ix_(u, o)] @ x[o])
    np.testing.assert_allclose(out[u], expected, rtol=1e-8, atol=1e-10)
    # the rows that feature_propagation must not read do not matter
    garbage = np.where(observed[:, None], x, 1e6)
    np.testing.assert_allclose(feature_propagation(garbage, observed, a, 3000), out)


def test_feature_propagation_leaves_isolated_missing_rows_at_zero():
    a = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    out = feature_propagation(np.ones((3, 2)), np.array([True, False, False]), a, 10)
    np.testing.assert_allclose(out, [[1, 1], [1, 1], [0, 0]])


def _circulant_assignment(rng, k):
    """Q with rows summing to one and equal column sums (balanced clusters)."""
    row = rng.dirichlet(np.ones(k))
    return np.stack([np.roll(row, j) for j in range(k)])


def test_target_distribution_rows_sum_to_one_and_sharpen_q():
    rng = np.random.default_rng(1)
    q = np.vstack([_circulant_assignment(rng, 5) for _ in range(20)])
    p = target_distribution(q)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.all(p.max(axis=1) > q.max(axis=1))

    def entropy(m):
        return -(m * np.log(m)).sum(axis=1)

    assert np.all(entropy(p) < entropy(q))
    # on unbalanced data too: rows sum to one, the mean entropy drops
    q2 = student_t(rng.exponential(size=(200, 4)) * 5)
    p2 = target_distribution(q2)
    np.testing.assert_allclose(p2.sum(axis=1), 1.0)
    assert entropy(p2).mean() < entropy(q2).mean()


def test_student_t_rows_sum_to_one_and_prefer_the_nearest_prototype():
    rng = np.random.default_rng(2)
    h = rng.normal(size=(50, 3))
    labels = rng.integers(0, 4, 50)
    e = prototype_distances(h, prototypes(h, labels, 4))
    direct = ((h[:, None, :] - prototypes(h, labels, 4)[None]) ** 2).sum(-1)
    np.testing.assert_allclose(e, direct, atol=1e-10)
    q = student_t(e)
    np.testing.assert_allclose(q.sum(axis=1), 1.0)
    np.testing.assert_array_equal(q.argmax(axis=1), e.argmin(axis=1))


def test_anchor_graph_rows_sum_to_one_on_the_nearest_anchors():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(40, 5))
    anchors = h[rng.choice(40, 12, replace=False)]
    idx, val = anchor_graph(h, anchors, 4)
    np.testing.assert_allclose(val.sum(axis=1), 1.0)
    assert np.all(val >= 0)
    sq = ((h[:, None, :] - anchors[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(np.sort(idx, axis=1), np.sort(np.argsort(sq, axis=1)[:, :4], axis=1))
    # nearer anchors weigh more
    assert np.all(np.diff(val, axis=1) <= 1e-12)
    with pytest.raises(ValueError, match="at least 13 anchors"):
        anchor_graph(h, anchors, 12)


def test_fusion_weights_decrease_with_emd():
    emd = np.array([0.4, 0.1, 0.25, 0.7])
    for rule in ("inverse-emd", "softmax"):
        w = fusion_weights(emd, rule, temperature=0.1)
        np.testing.assert_allclose(w.sum(), 1.0)
        order = np.argsort(emd)
        assert np.all(np.diff(w[order]) < 0), rule
    np.testing.assert_allclose(fusion_weights(emd, "uniform"), 0.25)
    with pytest.raises(ValueError, match="unknown fusion rule"):
        fusion_weights(emd, "max")


def test_total_variation_emd_is_zero_on_equal_and_one_on_disjoint_assignments():
    p = np.eye(3)
    assert total_variation_emd(p, p) == 0.0
    assert total_variation_emd(p, np.roll(p, 1, axis=1)) == 1.0


def test_label_alignment_undoes_a_permutation():
    rng = np.random.default_rng(4)
    reference = rng.integers(0, 5, 100)
    perm = rng.permutation(5)
    mapping = label_alignment(perm[reference], reference, 5)
    np.testing.assert_array_equal(mapping[perm[reference]], reference)


@pytest.mark.parametrize("m, rate", [(6, 0.5), (2, 0.9), (3, 0.1)])
def test_missing_view_mask_follows_the_protocol(m, rate):
    n = 200
    mask = missing_view_mask(n, m, rate, seed=7)
    assert mask.shape == (n, m) and mask.any(axis=1).all()
    incomplete = ~mask.all(axis=1)
    assert incomplete.sum() == round(rate * n)
    np.testing.assert_array_equal((~mask[incomplete]).sum(axis=1), m // 2)
    np.testing.assert_array_equal(mask, missing_view_mask(n, m, rate, seed=7))
    assert not np.array_equal(mask, missing_view_mask(n, m, rate, seed=8))


def test_missing_view_mask_rejects_impossible_settings():
    with pytest.raises(ValueError, match="at least 2 views"):
        missing_view_mask(10, 1, 0.5, 0)
    with pytest.raises(ValueError, match="keep at least one view"):
        missing_view_mask(10, 3, 0.5, 0, dropped=3)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        missing_view_mask(10, 3, 1.0, 0)
    assert missing_view_mask(10, 1, 0.0, 0).all()


def test_observed_knn_and_start_graph():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(30, 2))
    observed = np.ones(30, dtype=bool)
    observed[:5] = False
    g = observed_knn(x, observed, 4)
    assert np.all(g[:5] == -1) and np.all(g[5:] >= 5)
    # support rule: a neighbour listed by both views beats one listed by a single view
    a = np.array([[1, 2], [0, 2], [0, 1], [0, 1]])
    b = np.array([[2, 3], [2, 3], [3, 1], [2, 1]])
    merged = start_graph([a, b], 1, "support")
    np.testing.assert_array_equal(merged[:, 0], [2, 2, 1, 1])
    union = start_graph([a, b], 1, "union")
    assert set(union[0][union[0] >= 0]) == {1, 2, 3}
    adj = adjacency(merged)
    assert (adj != adj.T).nnz == 0 and adj.diagonal().sum() == 0


def test_structure_loss_scores_edges_and_sampled_non_edges_only():
    from fedmf_app.methods.iai.graph_autoencoder import GraphAutoencoder, train_gae
    from fedmf_app.methods.iai.params import GAEParams

    n = 400
    a = _random_graph(n, 4, 6).tocoo()
    edges = np.vstack([a.row, a.col])
    params = GAEParams(hidden=4, heads=1, out_dim=4, decoder_hidden=8, epochs=2, negative_ratio=2.0)
    model = GraphAutoencoder(3, 2, params)
    scored = []
    original = model.edge_logits

    def spy(h, pairs):
        scored.append(pairs)
        return original(h, pairs)

    model.edge_logits = spy
    losses = train_gae(model, np.random.default_rng(0).normal(size=(n, 3)), edges, None, params, 0)
    positives = edges.shape[1] + n  # A_g + I
    assert [p.rows.shape[0] for p in scored] == [positives, 2 * positives] * 2
    negatives = np.vstack([scored[1].rows.numpy(), scored[1].cols.numpy()])
    assert not set(zip(*negatives)) & set(zip(*edges)) and np.all(negatives[0] != negatives[1])
    assert losses.structure > 0 and losses.clustering == 0.0


def test_variance_scaled_attribute_loss_is_the_mse_over_the_codes_variance():
    from dataclasses import replace

    from fedmf_app.methods.iai.graph_autoencoder import GraphAutoencoder, seeded, train_gae
    from fedmf_app.methods.iai.params import GAEParams

    n = 60
    a = _random_graph(n, 4, 7).tocoo()
    edges = np.vstack([a.row, a.col])
    z = 30.0 * np.random.default_rng(1).normal(size=(n, 3)) + 5.0
    plain = GAEParams(hidden=4, heads=1, out_dim=4, decoder_hidden=8, epochs=1, structure_loss=False)
    losses = {}
    for scale in ("none", "variance"):
        with seeded(0):
            model = GraphAutoencoder(3, 2, plain)
        losses[scale] = train_gae(model, z, edges, None, replace(plain, attribute_scale=scale), 0).attribute
    variance = float(((z - z.mean(axis=0)) ** 2).mean())
    assert losses["variance"] == pytest.approx(losses["none"] / variance, rel=1e-5)


def test_warmup_epochs_run_only_in_the_round_without_a_target():
    from dataclasses import replace

    from fedmf_app.methods.iai.graph_autoencoder import GraphAutoencoder, seeded, train_gae
    from fedmf_app.methods.iai.params import GAEParams

    n = 50
    a = _random_graph(n, 4, 8).tocoo()
    edges = np.vstack([a.row, a.col])
    z = np.random.default_rng(2).normal(size=(n, 3))
    target = np.full((n, 2), 0.5)
    base = GAEParams(hidden=4, heads=1, out_dim=4, decoder_hidden=8, epochs=2)

    def count(params, p):
        with seeded(0):
            model = GraphAutoencoder(3, 2, params)
        calls = []
        original = model.forward
        model.forward = lambda *args: calls.append(1) or original(*args)
        train_gae(model, z, edges, p, params, 0)
        return len(calls)

    assert count(replace(base, warmup_epochs=5), None) == 5
    assert count(replace(base, warmup_epochs=5), target) == 2
    assert count(base, None) == 2  # 0: the per-round epochs


def test_autoencoder_pretraining_stops_after_max_steps_at_the_same_weights_as_fewer_epochs(monkeypatch):
    x = np.random.default_rng(0).normal(size=(100, 12))  # 4 batches of 32 (the last one 4 rows)
    steps = []
    original = Adam.step

    def counted(self, *args, **kwargs):
        steps.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Adam, "step", counted)

    def weights(epochs, max_steps):
        steps.clear()
        model = pretrain_autoencoder(x, (8,), 3, epochs, max_steps, 1e-3, 32, seed=4)
        return len(steps), [p.detach().clone() for p in model.parameters()]

    taken, capped = weights(epochs=5, max_steps=8)  # stops after 2 of the 5 epochs
    assert taken == 8
    two_epochs = weights(epochs=2, max_steps=1000)
    assert two_epochs[0] == 8
    assert all(torch.equal(a, b) for a, b in zip(capped, two_epochs[1]))
    taken, uncapped = weights(epochs=5, max_steps=20)  # a cap at or above the epochs' steps: no effect
    assert taken == 20
    assert all(torch.equal(a, b) for a, b in zip(uncapped, weights(epochs=5, max_steps=10**6)[1]))
    taken, part = weights(epochs=5, max_steps=7)  # part-way through the second epoch
    assert taken == 7 and not all(torch.equal(a, b) for a, b in zip(part, capped))


@pytest.mark.parametrize("lr", [1e-3, 5e-2])
def test_adam_takes_torch_optim_adams_steps_bit_for_bit(lr):
    # the same weights after 150 steps; a parameter without a gradient is left untouched
    def train(optimiser_class):
        torch.manual_seed(3)
        net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
        idle = torch.nn.Parameter(torch.randn(3))
        params = [*net.parameters(), idle]
        start = [p.detach().clone() for p in params]
        optimiser = optimiser_class(params, lr=lr)
        x = torch.randn(40, 6)
        for _ in range(150):
            loss = ((net(x) - 1.0) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        return start, [p.detach().clone() for p in params]

    start, ours = train(Adam)
    _, reference = train(torch.optim.Adam)
    assert all(torch.equal(a, b) for a, b in zip(ours, reference))
    assert not any(torch.equal(a, b) for a, b in zip(start[:-1], ours[:-1]))
    assert torch.equal(start[-1], ours[-1])
