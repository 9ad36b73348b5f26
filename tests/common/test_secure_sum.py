"""Pairwise additive masking: the masks cancel in the sum and an upload alone reveals nothing."""

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_similarity, laplacian
from fedmf_app.common.secure_sum import (
    add_pairwise_masks,
    decode_matrix,
    decode_upper,
    derive_pair_key,
    encode_matrix,
    encode_upper,
    generate_private_key,
    mask_stream,
    public_key_bytes,
    sum_uploads,
    triu_size,
)


def masked_uploads(similarities, frac_bits=16, context=b"run-1", encode=encode_upper):
    keys = [generate_private_key() for _ in similarities]
    public = [public_key_bytes(k) for k in keys]
    uploads = []
    for i, (s, key) in enumerate(zip(similarities, keys)):
        pair = {j: derive_pair_key(key, pk, context) for j, pk in enumerate(public) if j != i}
        uploads.append(add_pairwise_masks(encode(s, frac_bits), i, pair))
    return uploads


def test_encoding_round_trip_is_exact_for_binary_graphs():
    s = knn_similarity(np.random.default_rng(0).normal(size=(30, 3)), 4)
    enc = encode_upper(s, 16)
    assert enc.shape == (triu_size(30),) and enc.dtype == np.uint32
    assert (decode_upper(enc, 30, 16) != s).nnz == 0


def test_pair_keys_agree_and_streams_are_seekable():
    a, b, c = (generate_private_key() for _ in range(3))
    kab = derive_pair_key(a, public_key_bytes(b), b"ctx")
    assert kab == derive_pair_key(b, public_key_bytes(a), b"ctx")
    assert kab != derive_pair_key(a, public_key_bytes(c), b"ctx")
    assert kab != derive_pair_key(a, public_key_bytes(b), b"other run")
    np.testing.assert_array_equal(mask_stream(kab, 64)[32:], mask_stream(kab, 32, start=32))


@pytest.mark.parametrize("similarity", ["binary", "heat"])
def test_masked_uploads_sum_to_the_laplacian_sum_and_hide_each_graph(similarity):
    rng = np.random.default_rng(1)
    n = 80
    sims = [knn_similarity(rng.normal(size=(n, d)), 5, similarity) for d in (3, 6, 4)]
    uploads = masked_uploads(sims)
    total = decode_upper(sum_uploads(uploads), n, 16)
    expected = sum(sims[1:], sims[0])
    # binary graphs are exact; heat-kernel entries carry the fixed-point rounding of 3 terms
    tol = 0.0 if similarity == "binary" else 3 * 2.0**-17
    assert abs(total - expected).max() <= tol
    if similarity == "binary":
        assert (laplacian(total) != laplacian(expected)).nnz == 0
    for s, up in zip(sims, uploads):
        plain = encode_upper(s, 16)
        # dense and uniform: the support (and hence the kNN edges) is not visible
        assert np.count_nonzero(up) >= up.size - 2
        assert np.count_nonzero(up == plain) < 5
        hist = np.histogram(up, bins=8, range=(0, 2**32))[0]
        assert hist.min() > 0.8 * up.size / 8
        # nor is the graph decodable from one upload
        assert (decode_upper(up, n, 16) != s).nnz > n


def test_masked_anchor_graphs_sum_to_the_anchor_graph_sum_and_hide_each_graph():
    rng = np.random.default_rng(3)
    n, a = 200, 16
    graphs = []
    for d in (3, 6, 4):
        x = rng.normal(size=(n, d))
        graphs.append(anchor_matrix(*anchor_graph(x, x[:a], 4), a))
    uploads = masked_uploads(graphs, encode=encode_matrix)
    assert all(u.dtype == np.uint32 and u.shape == (n * a,) for u in uploads)  # O(N a), not O(N^2)
    total = decode_matrix(sum_uploads(uploads), (n, a), 16)
    assert abs(total - sum(graphs[1:], graphs[0])).max() <= 3 * 2.0**-17
    # each upload's rounding is that of its own encoding: the sum of encodings decodes exactly
    plain = [encode_matrix(z, 16) for z in graphs]
    assert (total != decode_matrix(sum_uploads(plain), (n, a), 16)).nnz == 0
    for up, p in zip(uploads, plain):
        assert np.count_nonzero(up) >= up.size - 2 and np.count_nonzero(up == p) < 5
        hist = np.histogram(up, bins=8, range=(0, 2**32))[0]
        assert hist.min() > 0.8 * up.size / 8
    assert abs(decode_matrix(sum_uploads(uploads[:2]), (n, a), 16) - graphs[0] - graphs[1]).max() > 1
    with pytest.raises(ValueError, match="expected"):
        decode_matrix(np.zeros(5, np.uint32), (2, 3), 16)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        encode_matrix(sp.csr_matrix(np.array([[0, 2.0]])), 16)


def test_any_proper_subset_of_uploads_is_masked():
    rng = np.random.default_rng(2)
    sims = [knn_similarity(rng.normal(size=(40, 3)), 3) for _ in range(3)]
    uploads = masked_uploads(sims)
    partial = decode_upper(sum_uploads(uploads[:2]), 40, 16)
    assert (partial != sims[0] + sims[1]).nnz > 40


def test_bad_uploads_are_rejected():
    with pytest.raises(ValueError, match="uint32"):
        sum_uploads([np.zeros(6, np.uint32), np.zeros(6, np.float64)])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        encode_upper(sp.csr_matrix(np.array([[0, 2.0], [2.0, 0]])), 16)
    with pytest.raises(ValueError, match="expected"):
        decode_upper(np.zeros(5, np.uint32), 4, 16)
