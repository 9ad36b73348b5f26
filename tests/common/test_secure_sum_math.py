"""The secure sum's maths: fixed point exact in expectation, masks cancel, an upload alone is noise,
graphs sum to the plain sum within the fixed-point bound (binary graphs exactly); signed
key-agreement keys."""

import numpy as np
import pytest
import scipy.sparse as sp
from cryptography.hazmat.primitives.asymmetric import ec
from scipy import stats

from fedmf_app.common.graphs import anchor_graph, anchor_matrix, knn_similarity, laplacian
from fedmf_app.common.key_signing import key_statement, sign, verify
from fedmf_app.common.secure_sum_math import (
    FixedPointError,
    append_check_words,
    decode_fixed,
    derive_pair_key,
    encode_fixed,
    fixed_point_bound,
    generate_private_key,
    mask_words,
    matrix_from_values,
    matrix_values,
    message_key,
    public_key_bytes,
    split_check_words,
    sum_words,
    triu_size,
    upper_from_values,
    upper_values,
    word_stream,
)

F = 36


def pair_keys(m, context=b"run"):
    keys = [generate_private_key() for _ in range(m)]
    public = [public_key_bytes(k) for k in keys]
    return [
        {j: derive_pair_key(k, public[j], context) for j in range(m) if j != i} for i, k in enumerate(keys)
    ]


def masked(values, keys, server_round=1, tag="upload", seed=0):
    m = len(values)
    out = []
    for i, x in enumerate(values):
        words = encode_fixed(x, F, m, np.random.default_rng([seed, i]))
        out.append(mask_words(words, i, {j: message_key(k, server_round, tag) for j, k in keys[i].items()}))
    return out


def test_masked_sum_decodes_to_the_plain_sum_within_the_fixed_point_precision():
    rng = np.random.default_rng(0)
    m, size = 5, 4000
    values = [rng.normal(scale=10.0 ** rng.integers(-6, 4), size=size) for _ in range(m)]
    total = decode_fixed(sum_words(masked(values, pair_keys(m))), F)
    err = np.abs(total - np.sum(values, axis=0))
    assert err.max() < m * 2.0**-F  # the documented bound
    assert err.max() > 0  # (the rounding is real: the test could fail)


def test_stochastic_rounding_is_exact_in_expectation():
    x = np.full(200_000, 1.0 / 3.0)
    decoded = decode_fixed(encode_fixed(x, 8, 1, np.random.default_rng(1)), 8)
    # each value is one of the two neighbouring multiples of 2^-8 ...
    assert set(np.unique(decoded)) == {np.floor(256 / 3) / 256, np.ceil(256 / 3) / 256}
    # ... and their mean is 1/3 (std of the mean <= 2^-9 / sqrt(n))
    assert abs(decoded.mean() - 1.0 / 3.0) < 4 * 2.0**-9 / np.sqrt(x.size)
    # round-to-nearest would be biased by 1/3 - 85/256 = 1.3e-3
    assert abs(np.rint(x * 256).mean() / 256 - 1.0 / 3.0) > 1e-3


def test_each_upload_alone_is_uniform_noise_whatever_the_data():
    m, size = 3, 20_000
    keys = pair_keys(m)
    rng = np.random.default_rng(2)
    data = [rng.normal(size=size), np.zeros(size), np.full(size, 1e3)]
    uploads = masked(data, keys)
    bytes_top = [(u >> np.uint64(56)).astype(np.int64) for u in uploads]
    for top in bytes_top:  # the top byte of every word is uniform on 0..255 (chi-square)
        counts = np.bincount(top, minlength=256)
        assert stats.chisquare(counts).pvalue > 1e-4
    # zeros and a constant give uploads that a two-sample test cannot tell apart
    assert stats.ks_2samp(bytes_top[1], bytes_top[2]).pvalue > 1e-4
    # decoding one upload alone gives garbage, not the client's values
    for x, upload in zip(data, uploads):
        alone = decode_fixed(upload, F)
        assert np.median(np.abs(alone - x)) > 1e6
    # the sum of only some of the uploads is noise too
    partial = decode_fixed(sum_words(uploads[:2]), F)
    assert np.median(np.abs(partial - data[0] - data[1])) > 1e6


def test_masks_are_fresh_per_round_and_tag_and_cancel_only_within_one_message():
    keys = pair_keys(2)
    k = keys[0][1]
    streams = [word_stream(message_key(k, s, t), 64) for s, t in [(1, "a"), (2, "a"), (1, "b")]]
    assert all(not np.array_equal(a, b) for i, a in enumerate(streams) for b in streams[i + 1 :])
    x = [np.ones(64), np.ones(64)]
    mixed = [masked(x, keys, server_round=1)[0], masked(x, keys, server_round=2)[1]]
    assert np.median(np.abs(decode_fixed(sum_words(mixed), F) - 2.0)) > 1e6
    np.testing.assert_array_equal(word_stream(k, 64)[16:], word_stream(k, 48, start=16))


@pytest.mark.parametrize(
    "value, fragment",
    [(np.nan, "not finite"), (np.inf, "not finite"), (2.0 ** (63 - F) / 4, "overflow bound")],
)
def test_values_that_cannot_be_encoded_are_refused(value, fragment):
    with pytest.raises(FixedPointError, match=fragment):
        encode_fixed(np.array([0.0, value]), F, 4, np.random.default_rng(0))
    assert fixed_point_bound(F, 4) == 2.0 ** (63 - F) / 4


def test_the_largest_allowed_values_do_not_overflow_the_sum():
    m = 4
    bound = fixed_point_bound(F, m)
    values = [np.array([bound * (1 - 1e-12), -bound * (1 - 1e-12)])] * m
    total = decode_fixed(sum_words(masked(values, pair_keys(m))), F)
    np.testing.assert_allclose(total, [m * bound, -m * bound], rtol=1e-9)


def test_signed_keys_verify_and_substituted_or_replayed_keys_do_not():
    long_term = ec.generate_private_key(ec.SECP384R1())
    mine, other = public_key_bytes(generate_private_key()), public_key_bytes(generate_private_key())
    signature = sign(long_term, key_statement(7, 1, 3, mine))
    public = long_term.public_key()
    assert verify(public, key_statement(7, 1, 3, mine), signature)
    assert not verify(public, key_statement(7, 1, 3, other), signature)  # substituted key
    assert not verify(public, key_statement(8, 1, 3, mine), signature)  # another run
    assert not verify(public, key_statement(7, 2, 3, mine), signature)  # another partition
    assert not verify(
        ec.generate_private_key(ec.SECP384R1()).public_key(), key_statement(7, 1, 3, mine), signature
    )


# ------------------------------------------------------------------- graphs (paper B's set-up)
def graph_sum(graphs, values, from_values):
    """The decoded masked sum of the graphs' dense values, as the server forms it."""
    uploads = masked([values(g) for g in graphs], pair_keys(len(graphs)), server_round=0, tag="graph")
    return from_values(decode_fixed(sum_words(uploads), F))


def test_pair_keys_agree_and_depend_on_the_context():
    a, b, c = (generate_private_key() for _ in range(3))
    kab = derive_pair_key(a, public_key_bytes(b), b"ctx")
    assert kab == derive_pair_key(b, public_key_bytes(a), b"ctx")
    assert kab != derive_pair_key(a, public_key_bytes(c), b"ctx")
    assert kab != derive_pair_key(a, public_key_bytes(b), b"other run")


@pytest.mark.parametrize("similarity", ["binary", "heat"])
def test_masked_knn_graphs_sum_to_the_plain_sum_and_each_upload_hides_its_graph(similarity):
    rng = np.random.default_rng(1)
    n = 80
    sims = [knn_similarity(rng.normal(size=(n, d)), 5, similarity) for d in (3, 6, 4)]
    assert upper_values(sims[0]).shape == (triu_size(n),)
    total = graph_sum(sims, upper_values, lambda v: upper_from_values(v, n))
    expected = sum(sims[1:], sims[0])
    # 0/1 weights are multiples of 2^-F: exact; heat-kernel weights within the documented m 2^-F
    tol = 0.0 if similarity == "binary" else 3 * 2.0**-F
    assert abs(total - expected).max() <= tol
    assert total.nnz == expected.nnz  # the sparsity of the sum is that of the plain sum
    if similarity == "binary":
        assert (laplacian(total) != laplacian(expected)).nnz == 0
    uploads = masked([upper_values(s) for s in sims], pair_keys(3), server_round=0, tag="graph")
    for s, up in zip(sims, uploads):
        assert np.count_nonzero(up) == up.size  # dense: the kNN edges are not visible
        assert (upper_from_values(decode_fixed(up, F), n) != s).nnz > n  # nor decodable alone


def test_masked_anchor_graphs_sum_to_the_plain_sum_in_o_n_a():
    rng = np.random.default_rng(3)
    n, a = 200, 16
    graphs = []
    for d in (3, 6, 4):
        x = rng.normal(size=(n, d))
        graphs.append(anchor_matrix(*anchor_graph(x, x[:a], 4), a))
    assert matrix_values(graphs[0]).shape == (n * a,)  # O(N a), not O(N^2)
    total = graph_sum(graphs, matrix_values, lambda v: matrix_from_values(v, (n, a)))
    assert abs(total - sum(graphs[1:], graphs[0])).max() < 3 * 2.0**-F


def test_a_partial_sum_of_graphs_is_noise_and_its_check_words_refuse_it():
    rng = np.random.default_rng(2)
    sims = [knn_similarity(rng.normal(size=(40, 3)), 3) for _ in range(3)]
    keys = pair_keys(3)
    words = [
        append_check_words(encode_fixed(upper_values(s), F, 3, np.random.default_rng(i)))
        for i, s in enumerate(sims)
    ]
    uploads = [
        mask_words(w, i, {j: message_key(k, 0, "graph") for j, k in keys[i].items()})
        for i, w in enumerate(words)
    ]
    partial = sum_words(uploads[:2])  # partition 2 dropped out
    with pytest.raises(ValueError, match="masks did not cancel"):
        split_check_words(partial, 2)
    assert np.median(np.abs(decode_fixed(partial[:-4], F))) > 1e6


def test_graphs_outside_the_unit_interval_or_of_the_wrong_size_are_refused():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        upper_values(sp.csr_matrix(np.array([[0, 2.0], [2.0, 0]])))
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        matrix_values(sp.csr_matrix(np.array([[0, -1.0]])))
    with pytest.raises(ValueError, match="expected"):
        upper_from_values(np.zeros(5), 4)
    with pytest.raises(ValueError, match="expected"):
        matrix_from_values(np.zeros(5), (2, 3))
    with pytest.raises(ValueError, match="uint64"):
        sum_words([np.zeros(6, np.uint64), np.zeros(6, np.float64)])
