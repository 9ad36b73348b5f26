"""Secure sum, the maths: fixed point in :math:`\\mathbb Z_{2^{64}}` under pairwise masks (no Flower).

The one secure-sum path of the app, for every sum a server needs and must not see the terms of:
the arrays a method declares summable (run config ``secure-aggregation``) and fmvc-imk's graph sum
(always). The Flower side (key agreement, a client's masked upload, the server's decoded sum) is
:mod:`fedmf_app.federated.secure_sum_flower`. The server learns the sum over the clients, never one
client's values:

1. once per run, every pair of clients ``i, j`` agrees on a 256-bit key :math:`k_{ij}` (X25519 +
   HKDF-SHA256, :func:`derive_pair_key`; the public keys may be signed,
   :mod:`fedmf_app.common.key_signing`);
2. for each message (round ``s``, purpose ``tag``) the pair expands a fresh key
   :math:`k_{ij}^{s,\\mathrm{tag}} = \\mathrm{HMAC\\text{-}SHA256}(k_{ij}, \\mathrm{tag}\\,|\\,s)`
   (:func:`message_key`) and its ChaCha20 keystream is the mask, so no mask is used twice;
3. client ``i`` encodes its values in fixed point (:func:`encode_fixed`), appends
   :data:`CHECK_WORDS` words of value 1 and adds
   :math:`\\sum_{j>i}\\mathrm{PRG}(k_{ij}^{s}) - \\sum_{j<i}\\mathrm{PRG}(k_{ij}^{s})` mod :math:`2^{64}`
   (:func:`mask_words`);
4. the server adds the uploads mod :math:`2^{64}` (:func:`sum_words`), the masks cancel, the check
   words prove it (:func:`split_check_words`), and :func:`decode_fixed` gives the sum.

**Fixed point** (``f`` = run config ``secure-aggregation-frac-bits``, default 36): a value ``x``
becomes the two's-complement word :math:`\\lfloor x 2^f + u\\rfloor`, :math:`u \\sim U[0, 1)`
(stochastic rounding, from a seeded stream): the encoding is exact in expectation, each value's
error lies in :math:`(-2^{-f}, 2^{-f})` with standard deviation at most :math:`2^{-f-1}`, and a sum
of ``m`` values is off by less than :math:`m 2^{-f}` (for :math:`|x| 2^f < 2^{52}`; beyond, the
scaling itself rounds, to float64's relative :math:`2^{-53}`). Multiples of :math:`2^{-f}` (zeros,
the 0/1 weights of a binary kNN graph) are encoded exactly. **Overflow**: the sum of ``m`` words
must stay in :math:`(-2^{63}, 2^{63})`, so every client refuses a value with
:math:`|x| \\ge 2^{63-f}/m` (:func:`fixed_point_bound`; with ``f = 36`` and ``m = 10``, about
:math:`1.3 \\times 10^7`) and non-finite values, before anything is sent.

**Graphs** (paper B): because :math:`L = D - S` and :math:`D` is the row sum of :math:`S`, summing
the similarities is enough, :math:`\\sum_m L^{(m)} = \\mathrm{laplacian}(\\sum_m S^{(m)})`. A graph
travels **dense** (:func:`upper_values`: the strict upper triangle of a kNN similarity,
:math:`N(N-1)/2` values; :func:`matrix_values`: every entry of an ``N x a`` anchor graph), so the
upload has the same size and look for every graph and reveals no sparsity pattern;
:func:`upper_from_values` and :func:`matrix_from_values` turn the decoded sum back into a sparse
matrix.

What an upload alone shows: a uniformly distributed word per value (the masks of the ``m - 1``
peers are uniform and independent of the data), so it decodes to noise; only the sum of all ``m``
uploads of one message decodes. The array sizes are public. Against an honest-but-curious server
and any coalition of it with up to ``m - 2`` clients this reveals nothing beyond the sum; against a
server that substitutes public keys, only signed keys protect (run config
``secure-aggregation-signed-keys``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "CHECK_WORDS",
    "FixedPointError",
    "MaskIntegrityError",
    "add_pairwise_masks",
    "append_check_words",
    "decode_fixed",
    "derive_pair_key",
    "encode_fixed",
    "fixed_point_bound",
    "generate_private_key",
    "mask_words",
    "matrix_from_values",
    "matrix_values",
    "message_key",
    "public_key_bytes",
    "split_check_words",
    "sum_words",
    "triu_size",
    "upper_from_values",
    "upper_values",
    "word_stream",
]

#: Check words appended to every masked upload: each client sets them to 1 before masking, so in
#: the sum each must equal the number of clients; a mask that did not cancel (a replayed or
#: substituted key, another key-agreement context, words not masked with the run's keys) leaves
#: them uniformly random, and all of them equal ``m`` by chance with probability :math:`2^{-256}`.
CHECK_WORDS = 4

#: Bytes of keystream generated at a time while masking (16 MiB).
_CHUNK_BYTES = 1 << 24


class MaskIntegrityError(ValueError):
    """The check words of a sum are not the number of clients: the masks did not cancel."""


class FixedPointError(ValueError):
    """A value cannot be encoded: not finite, or so large that the sum could overflow."""


# ------------------------------------------------------------------------------- check words
def append_check_words(encoded: np.ndarray) -> np.ndarray:
    """``encoded`` followed by :data:`CHECK_WORDS` words of value 1 (same dtype), to be masked.

    Parameters
    ----------
    encoded : ndarray of uint64, shape (K,)

    Returns
    -------
    ndarray, shape (K + CHECK_WORDS,)
    """
    return np.concatenate([encoded, np.ones(CHECK_WORDS, dtype=encoded.dtype)])


def split_check_words(total: np.ndarray, num_clients: int) -> np.ndarray:
    """The sum without its check words, once they prove that the masks cancelled.

    Parameters
    ----------
    total : ndarray of uint64, shape (K + CHECK_WORDS,)
        Sum of :func:`append_check_words` uploads, masked.
    num_clients : int
        ``m``, the number of uploads summed.

    Returns
    -------
    ndarray, shape (K,)

    Raises
    ------
    MaskIntegrityError
        When a check word is not ``m``.
    """
    if total.size < CHECK_WORDS:
        raise MaskIntegrityError(f"the sum has {total.size} words, fewer than its {CHECK_WORDS} check words")
    checks = total[-CHECK_WORDS:]
    if np.any(checks != num_clients):
        raise MaskIntegrityError(
            f"the check words sum to {[int(c) for c in checks]}, expected {num_clients} each: the masks "
            "did not cancel (a replayed or substituted key, a different key-agreement context sent to "
            "some client, or an upload not masked with this run's keys)"
        )
    return total[:-CHECK_WORDS]


# ------------------------------------------------------------------------------- fixed point
def fixed_point_bound(frac_bits: int, num_clients: int) -> float:
    """Largest magnitude (exclusive) a client may encode: :math:`2^{63-f}/m`.

    Parameters
    ----------
    frac_bits : int
        ``f``.
    num_clients : int
        ``m``.

    Returns
    -------
    float
    """
    return 2.0 ** (63 - frac_bits) / num_clients


def encode_fixed(
    values: np.ndarray, frac_bits: int, num_clients: int, rng: np.random.Generator
) -> np.ndarray:
    """Stochastically rounded fixed-point words of ``values``.

    Parameters
    ----------
    values : ndarray of float, shape (K,)
    frac_bits : int
        ``f``: a unit is :math:`2^{-f}`.
    num_clients : int
        ``m``, for the overflow bound.
    rng : numpy.random.Generator
        Source of the rounding offsets.

    Returns
    -------
    ndarray of uint64, shape (K,)
        Two's-complement words of :math:`\\lfloor x 2^f + u \\rfloor`.

    Raises
    ------
    FixedPointError
        On a non-finite value or :math:`|x| \\ge` :func:`fixed_point_bound`.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(x)):
        raise FixedPointError(f"{int(np.count_nonzero(~np.isfinite(x)))} value(s) are not finite")
    bound = fixed_point_bound(frac_bits, num_clients)
    largest = float(np.abs(x).max()) if x.size else 0.0
    if largest >= bound:
        raise FixedPointError(
            f"a value of magnitude {largest:.3e} reaches the overflow bound 2^(63 - f)/m = {bound:.3e} "
            f"(f = {frac_bits}, m = {num_clients}): lower run config 'secure-aggregation-frac-bits'"
        )
    scaled = np.floor(x * float(2**frac_bits) + rng.random(x.size))
    return scaled.astype(np.int64).view(np.uint64)


def decode_fixed(total: np.ndarray, frac_bits: int) -> np.ndarray:
    """Real values of summed fixed-point words.

    Parameters
    ----------
    total : ndarray of uint64, shape (K,)
        :func:`sum_words` of the uploads.
    frac_bits : int

    Returns
    -------
    ndarray of float64, shape (K,)
    """
    return total.view(np.int64).astype(np.float64) / float(2**frac_bits)


# --------------------------------------------------------------------------------------- keys
def generate_private_key() -> X25519PrivateKey:
    """A fresh X25519 private key (from the operating system's CSPRNG)."""
    return X25519PrivateKey.generate()


def public_key_bytes(private_key: X25519PrivateKey) -> bytes:
    """The 32-byte raw public key of ``private_key``."""
    return private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def derive_pair_key(private_key: X25519PrivateKey, peer_public: bytes, context: bytes) -> bytes:
    """The 256-bit key shared by two clients for the run.

    Parameters
    ----------
    private_key : X25519PrivateKey
        This client's key.
    peer_public : bytes
        The other client's raw public key.
    context : bytes
        Binds the key to this run and purpose (both clients must pass the same bytes).

    Returns
    -------
    bytes
        32 bytes; the same on both sides.
    """
    secret = private_key.exchange(X25519PublicKey.from_public_bytes(peer_public))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"fedmf-pair-key|" + context).derive(
        secret
    )


def message_key(pair_key: bytes, server_round: int, tag: str) -> bytes:
    """The pair's 256-bit key for one message: HMAC-SHA256 of ``tag`` and the round.

    Parameters
    ----------
    pair_key : bytes
        The run's pair key (32 bytes).
    server_round : int
    tag : str
        Which sum of that round (e.g. ``"upload"``; ``"graph"`` for fmvc-imk's set-up, round 0).

    Returns
    -------
    bytes
        32 bytes.
    """
    return hmac.new(pair_key, f"fedmf-secagg|{tag}|{server_round}".encode(), hashlib.sha256).digest()


# -------------------------------------------------------------------------------------- masks
def word_stream(key: bytes, size: int, start: int = 0) -> np.ndarray:
    """``size`` uint64 words of the ChaCha20 keystream of ``key``, from word ``start``.

    Parameters
    ----------
    key : bytes
        32 bytes.
    size : int
    start : int
        Word offset; a multiple of 8 (one ChaCha20 block of 64 bytes is 8 words).

    Returns
    -------
    ndarray of uint64, shape (size,)
    """
    if start % 8:
        raise ValueError("start must be a multiple of 8 words")
    nonce = (start // 8).to_bytes(8, "little") + bytes(8)  # 64-bit block counter, zero nonce
    encryptor = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    return np.frombuffer(encryptor.update(bytes(8 * size)), dtype=np.uint64)


def add_pairwise_masks(words: np.ndarray, me: int, keys: dict[int, bytes]) -> np.ndarray:
    """Mask words in place: add the streams of higher peers, subtract those of lower ones.

    Parameters
    ----------
    words : ndarray of uint64, shape (K,)
        This client's fixed-point words (overwritten).
    me : int
        This client's index.
    keys : dict of int to bytes
        Peer index -> the key shared with that peer for this message (every other client).

    Returns
    -------
    ndarray, shape (K,)
        ``words`` itself, now uniformly distributed on its own (arithmetic mod :math:`2^{64}`).
    """
    chunk = _CHUNK_BYTES // words.itemsize
    for start in range(0, words.size, chunk):
        block = words[start : start + chunk]
        for peer, key in keys.items():
            stream = word_stream(key, block.size, start)
            if peer > me:
                block += stream
            elif peer < me:
                block -= stream
    return words


def mask_words(words: np.ndarray, me: int, keys: dict[int, bytes]) -> np.ndarray:
    """:func:`add_pairwise_masks` on a copy of ``words`` (not modified).

    Parameters
    ----------
    words : ndarray of uint64, shape (K,)
        :func:`encode_fixed` output, with its check words.
    me : int
    keys : dict of int to bytes
        Peer index -> :func:`message_key` of the pair for this message.

    Returns
    -------
    ndarray of uint64, shape (K,)
    """
    return add_pairwise_masks(words.copy(), me, keys)


def sum_words(uploads: list[np.ndarray]) -> np.ndarray:
    """Sum of masked uploads mod :math:`2^{64}` (the masks cancel).

    Parameters
    ----------
    uploads : list of ndarray of uint64, each shape (K,)

    Returns
    -------
    ndarray of uint64, shape (K,)

    Raises
    ------
    ValueError
        When an upload has another dtype or length.
    """
    total = np.zeros(uploads[0].shape, dtype=np.uint64)
    for upload in uploads:
        if upload.dtype != np.uint64 or upload.shape != total.shape:
            raise ValueError(
                f"masked upload has dtype {upload.dtype} and shape {upload.shape}; expected uint64 "
                f"{total.shape}"
            )
        total += upload
    return total


# ------------------------------------------------------------------------------------- graphs
def triu_size(n: int) -> int:
    """Entries of the strict upper triangle of an ``n x n`` matrix, :math:`n(n-1)/2`."""
    return n * (n - 1) // 2


def _row_offsets(n: int) -> np.ndarray:
    """Position of ``(i, i+1)`` in the row-major strict upper triangle, for ``i = 0..n-1``."""
    i = np.arange(n, dtype=np.int64)
    return i * n - i * (i + 1) // 2


def _check_unit_interval(values: np.ndarray) -> None:
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError("similarities must lie in [0, 1] to be summed")


def upper_values(s: sp.spmatrix) -> np.ndarray:
    """The strict upper triangle of ``s``, dense and row-major (zeros included).

    Parameters
    ----------
    s : sparse matrix, shape (N, N)
        Symmetric, entries in [0, 1] (a kNN similarity).

    Returns
    -------
    ndarray of float64, shape (N(N-1)/2,)
    """
    import scipy.sparse as sp

    n = s.shape[0]
    upper = sp.triu(s, k=1).tocoo()
    _check_unit_interval(upper.data)
    out = np.zeros(triu_size(n))
    out[_row_offsets(n)[upper.row] + (upper.col - upper.row - 1)] = upper.data
    return out


def upper_from_values(total: np.ndarray, n: int) -> sp.csr_matrix:
    """The symmetric sparse matrix of a summed :func:`upper_values` vector.

    Parameters
    ----------
    total : ndarray of float64, shape (N(N-1)/2,)
        The decoded sum.
    n : int
        ``N``.

    Returns
    -------
    csr_matrix, shape (N, N)
        :math:`\\sum_m S^{(m)}` (up to the fixed-point rounding of each entry).
    """
    import scipy.sparse as sp

    if total.shape != (triu_size(n),):
        raise ValueError(f"summed graph has shape {total.shape}, expected ({triu_size(n)},)")
    pos = np.flatnonzero(total)
    offsets = _row_offsets(n)
    row = np.searchsorted(offsets, pos, side="right") - 1
    col = pos - offsets[row] + row + 1
    upper = sp.coo_matrix((total[pos], (row, col)), shape=(n, n))
    return (upper + upper.T).tocsr()


def matrix_values(z: sp.spmatrix) -> np.ndarray:
    """Every entry of a sparse matrix, dense and row-major (zeros included).

    Parameters
    ----------
    z : sparse matrix, shape (N, a)
        Entries in [0, 1] (e.g. a row-stochastic anchor graph).

    Returns
    -------
    ndarray of float64, shape (N a,)
    """
    import scipy.sparse as sp

    coo = sp.csr_matrix(z).tocoo()  # CSR sums duplicate coordinates
    _check_unit_interval(coo.data)
    out = np.zeros(coo.shape[0] * coo.shape[1])
    out[coo.row.astype(np.int64) * coo.shape[1] + coo.col] = coo.data
    return out


def matrix_from_values(total: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The sparse matrix of a summed :func:`matrix_values` vector.

    Parameters
    ----------
    total : ndarray of float64, shape (N a,)
    shape : tuple of int
        ``(N, a)``.

    Returns
    -------
    csr_matrix, shape (N, a)
        :math:`\\sum_m Z^{(m)}` (up to the fixed-point rounding of each entry).
    """
    import scipy.sparse as sp

    if total.shape != (shape[0] * shape[1],):
        raise ValueError(f"summed graph has shape {total.shape}, expected ({shape[0] * shape[1]},)")
    pos = np.flatnonzero(total)
    return sp.csr_matrix((total[pos], (pos // shape[1], pos % shape[1])), shape=shape)
