"""Secure sum of the clients' similarity graphs by pairwise additive masking (no Flower here).

Paper B's server must learn only :math:`\\sum_m L^{(m)}`, never one client's :math:`L^{(m)}`
(the paper uses partially homomorphic encryption; [A] we use pairwise masking, which is
exact and about four orders of magnitude cheaper, see the README). Because :math:`L = D - S` and
:math:`D` is the row sum of :math:`S`, summing the similarities is enough:
:math:`\\sum_m L^{(m)} = \\mathrm{laplacian}(\\sum_m S^{(m)})`.

Protocol (Bonawitz et al., CCS 2017, without dropout recovery, since every view is needed in
every round anyway):

1. each client ``i`` draws an X25519 key pair and sends its public key; the server relays all
   public keys to every client;
2. clients ``i`` and ``j`` derive the same 256-bit key :math:`k_{ij}` from their Diffie-Hellman
   secret (HKDF-SHA256, bound to a context string such as the run id);
3. client ``i`` encodes the **dense** strict upper triangle of :math:`S^{(i)}` in fixed point in
   :math:`\\mathbb Z_{2^{32}}` (so the upload has the same size and look for every graph and reveals
   no sparsity pattern) and adds :math:`\\sum_{j>i} \\mathrm{PRG}(k_{ij}) - \\sum_{j<i}
   \\mathrm{PRG}(k_{ij})` mod :math:`2^{32}` with PRG = the ChaCha20 keystream;
4. the server adds the uploads mod :math:`2^{32}`: the masks cancel and it decodes
   :math:`\\sum_m S^{(m)}`.

The same masking sums any nonnegative sparse matrix with entries in [0, 1] encoded densely
(:func:`encode_matrix`, :func:`decode_matrix`): paper B's ``N x a`` anchor graphs, whose upload is
:math:`Na` words instead of :math:`N(N-1)/2`.

What it protects against: an honest-but-curious server, and any coalition of the server with up
to ``M - 2`` clients, learns nothing about an individual graph beyond the sum (each upload alone is
uniformly distributed). It does not protect against a server that substitutes public keys (an
active man in the middle; a PKI or authenticated keys would), and with ``M = 1`` the sum *is* the
client's graph.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "CHECK_WORDS",
    "MaskIntegrityError",
    "add_pairwise_masks",
    "append_check_words",
    "decode_matrix",
    "decode_upper",
    "derive_pair_key",
    "encode_matrix",
    "encode_upper",
    "generate_private_key",
    "mask_stream",
    "public_key_bytes",
    "split_check_words",
    "sum_uploads",
    "triu_size",
]

#: Check words appended to every masked upload: each client sets them to 1 before masking, so in
#: the sum each must equal the number of clients; a mask that did not cancel (a replayed or
#: substituted key, another key-agreement context, words not masked with the run's keys) leaves
#: them uniformly random, and all of them equal ``M`` by chance with probability
#: :math:`2^{-4w}` (``w`` = 32 or 64 bits per word).
CHECK_WORDS = 4


class MaskIntegrityError(ValueError):
    """The check words of a sum are not the number of clients: the masks did not cancel."""


def append_check_words(encoded: np.ndarray) -> np.ndarray:
    """``encoded`` followed by :data:`CHECK_WORDS` words of value 1 (same dtype), to be masked.

    Parameters
    ----------
    encoded : ndarray of uint32 or uint64, shape (K,)

    Returns
    -------
    ndarray, shape (K + CHECK_WORDS,)
    """
    return np.concatenate([encoded, np.ones(CHECK_WORDS, dtype=encoded.dtype)])


def split_check_words(total: np.ndarray, num_clients: int) -> np.ndarray:
    """The sum without its check words, once they prove that the masks cancelled.

    Parameters
    ----------
    total : ndarray of uint32 or uint64, shape (K + CHECK_WORDS,)
        Sum of :func:`append_check_words` uploads, masked.
    num_clients : int
        ``M``, the number of uploads summed.

    Returns
    -------
    ndarray, shape (K,)

    Raises
    ------
    MaskIntegrityError
        When a check word is not ``M``.
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


#: Values per keystream chunk (16 MiB of uint32).
#: Bytes of keystream generated at a time while masking.
_CHUNK_BYTES = 1 << 24


def triu_size(n: int) -> int:
    """Entries of the strict upper triangle of an ``n x n`` matrix, :math:`n(n-1)/2`."""
    return n * (n - 1) // 2


def _row_offsets(n: int) -> np.ndarray:
    """Position of ``(i, i+1)`` in the row-major strict upper triangle, for ``i = 0..n-1``."""
    i = np.arange(n, dtype=np.int64)
    return i * n - i * (i + 1) // 2


def encode_upper(s: sp.spmatrix, frac_bits: int) -> np.ndarray:
    """Dense fixed-point encoding of the strict upper triangle of ``s``.

    Parameters
    ----------
    s : sparse matrix, shape (N, N)
        Symmetric, entries in [0, 1].
    frac_bits : int
        Fixed-point scale :math:`2^{b}`; entries become ``round(s_ij * 2**b)``.

    Returns
    -------
    ndarray of uint32, shape (N(N-1)/2,)
        Row-major strict upper triangle (zeros included).
    """
    n = s.shape[0]
    upper = sp.triu(s, k=1).tocoo()
    _check_unit_interval(upper.data)
    out = np.zeros(triu_size(n), dtype=np.uint32)
    pos = _row_offsets(n)[upper.row] + (upper.col - upper.row - 1)
    out[pos] = _fixed(upper.data, frac_bits)
    return out


def _check_unit_interval(values: np.ndarray) -> None:
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError("similarities must lie in [0, 1] to be encoded")


def _fixed(values: np.ndarray, frac_bits: int) -> np.ndarray:
    """``round(v * 2**b)`` as uint32 words."""
    return np.rint(values * float(1 << frac_bits)).astype(np.uint32)


def decode_upper(total: np.ndarray, n: int, frac_bits: int) -> sp.csr_matrix:
    """Symmetric sparse matrix from a summed strict-upper-triangle encoding.

    Parameters
    ----------
    total : ndarray of uint32, shape (N(N-1)/2,)
        Sum mod :math:`2^{32}` of :func:`encode_upper` outputs.
    n : int
        ``N``.
    frac_bits : int
        As used for encoding.

    Returns
    -------
    csr_matrix, shape (N, N)
        :math:`\\sum_m S^{(m)}` (up to the fixed-point rounding of each entry).
    """
    if total.shape != (triu_size(n),):
        raise ValueError(f"summed upload has shape {total.shape}, expected ({triu_size(n)},)")
    pos = np.flatnonzero(total)
    offsets = _row_offsets(n)
    row = np.searchsorted(offsets, pos, side="right") - 1
    col = pos - offsets[row] + row + 1
    vals = total[pos].astype(np.float64) / float(1 << frac_bits)
    upper = sp.coo_matrix((vals, (row, col)), shape=(n, n))
    return (upper + upper.T).tocsr()


def encode_matrix(z: sp.spmatrix, frac_bits: int) -> np.ndarray:
    """Dense fixed-point encoding of every entry of a sparse matrix (zeros included).

    Parameters
    ----------
    z : sparse matrix, shape (N, a)
        Entries in [0, 1] (e.g. a row-stochastic anchor graph).
    frac_bits : int
        Fixed-point scale :math:`2^{b}`; entries become ``round(z_ij * 2**b)``.

    Returns
    -------
    ndarray of uint32, shape (N a,)
        Row-major, so the upload has the same size and look for every matrix of that shape.
    """
    coo = sp.csr_matrix(z).tocoo()  # CSR sums duplicate coordinates
    _check_unit_interval(coo.data)
    out = np.zeros(coo.shape[0] * coo.shape[1], dtype=np.uint32)
    out[coo.row.astype(np.int64) * coo.shape[1] + coo.col] = _fixed(coo.data, frac_bits)
    return out


def decode_matrix(total: np.ndarray, shape: tuple[int, int], frac_bits: int) -> sp.csr_matrix:
    """Sparse matrix from a summed :func:`encode_matrix` encoding.

    Parameters
    ----------
    total : ndarray of uint32, shape (N a,)
        Sum mod :math:`2^{32}` of :func:`encode_matrix` outputs.
    shape : tuple of int
        ``(N, a)``.
    frac_bits : int
        As used for encoding.

    Returns
    -------
    csr_matrix, shape (N, a)
        :math:`\\sum_m Z^{(m)}` (up to the fixed-point rounding of each entry).
    """
    if total.shape != (shape[0] * shape[1],):
        raise ValueError(f"summed upload has shape {total.shape}, expected ({shape[0] * shape[1]},)")
    pos = np.flatnonzero(total)
    vals = total[pos].astype(np.float64) / float(1 << frac_bits)
    return sp.csr_matrix((vals, (pos // shape[1], pos % shape[1])), shape=shape)


def generate_private_key() -> X25519PrivateKey:
    """A fresh X25519 private key (from the operating system's CSPRNG)."""
    return X25519PrivateKey.generate()


def public_key_bytes(private_key: X25519PrivateKey) -> bytes:
    """The 32-byte raw public key of ``private_key``."""
    return private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def derive_pair_key(private_key: X25519PrivateKey, peer_public: bytes, context: bytes) -> bytes:
    """The 256-bit mask key shared by two clients.

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
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"fedmf-imk-mask|" + context).derive(
        secret
    )


def mask_stream(key: bytes, size: int, start: int = 0, dtype: type = np.uint32) -> np.ndarray:
    """``size`` words of the ChaCha20 keystream of ``key``, from word ``start``.

    Parameters
    ----------
    key : bytes
        32 bytes.
    size : int
    start : int
        Word offset; a multiple of one ChaCha20 block (64 bytes: 16 uint32 or 8 uint64 words).
    dtype : {numpy.uint32, numpy.uint64}
        Word type.

    Returns
    -------
    ndarray of ``dtype``, shape (size,)
    """
    itemsize = np.dtype(dtype).itemsize
    per_block = 64 // itemsize
    if start % per_block:
        raise ValueError(f"start must be a multiple of {per_block} words")
    nonce = (start // per_block).to_bytes(8, "little") + bytes(8)  # 64-bit block counter, zero nonce
    encryptor = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    return np.frombuffer(encryptor.update(bytes(itemsize * size)), dtype=dtype)


def add_pairwise_masks(encoded: np.ndarray, me: int, pair_keys: dict[int, bytes]) -> np.ndarray:
    """Mask an encoding in place: add the streams of higher peers, subtract those of lower ones.

    Parameters
    ----------
    encoded : ndarray of uint32 or uint64, shape (K,)
        This client's fixed-point words (e.g. :func:`encode_upper` output; overwritten).
    me : int
        This client's index.
    pair_keys : dict of int to bytes
        Peer index -> the key shared with that peer (every other client), e.g.
        :func:`derive_pair_key`.

    Returns
    -------
    ndarray, shape (K,)
        ``encoded`` itself, now uniformly distributed on its own (arithmetic mod 2^word bits).
    """
    chunk = _CHUNK_BYTES // encoded.itemsize
    for start in range(0, encoded.size, chunk):
        block = encoded[start : start + chunk]
        for peer, key in pair_keys.items():
            stream = mask_stream(key, block.size, start, encoded.dtype.type)
            if peer > me:
                block += stream
            elif peer < me:
                block -= stream
    return encoded


def sum_uploads(uploads: list[np.ndarray]) -> np.ndarray:
    """Sum of masked uploads mod :math:`2^{32}` (the masks cancel).

    Parameters
    ----------
    uploads : list of ndarray of uint32, each shape (K,)

    Returns
    -------
    ndarray of uint32, shape (K,)
    """
    total = np.zeros_like(uploads[0], dtype=np.uint32)
    for upload in uploads:
        if upload.dtype != np.uint32 or upload.shape != total.shape:
            raise ValueError(
                f"masked upload has dtype {upload.dtype} and shape {upload.shape}; expected uint32 "
                f"{total.shape}"
            )
        total += upload
    return total
