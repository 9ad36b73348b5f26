"""Secure aggregation of real arrays: fixed point in :math:`\\mathbb Z_{2^{64}}`, pairwise masks (no Flower).

The shared service behind run config ``secure-aggregation`` (Flower plumbing in
:mod:`fedmf_app.federated.secure_aggregation`). The server learns the sum over the clients of the
arrays a method declares summable, never one client's array:

1. once per run, every pair of clients ``i, j`` agrees on a 256-bit key :math:`k_{ij}` (X25519 +
   HKDF, :func:`fedmf_app.common.secure_sum.derive_pair_key`; the public keys may be signed,
   :mod:`fedmf_app.common.key_signing`);
2. for each message (round ``s``, purpose ``tag``) the pair expands a fresh key
   :math:`k_{ij}^{s,\\mathrm{tag}} = \\mathrm{HMAC\\text{-}SHA256}(k_{ij}, \\mathrm{tag}\\,|\\,s)`
   (:func:`message_key`) and its ChaCha20 keystream is the mask, so no mask is used twice;
3. client ``i`` encodes its values in fixed point (:func:`encode_fixed`) and adds
   :math:`\\sum_{j>i}\\mathrm{PRG}(k_{ij}^{s}) - \\sum_{j<i}\\mathrm{PRG}(k_{ij}^{s})` mod :math:`2^{64}`
   (:func:`mask_words`);
4. the server adds the uploads mod :math:`2^{64}` (:func:`sum_words`), the masks cancel, and
   :func:`decode_fixed` gives the sum.

**Fixed point** (``f`` = run config ``secure-aggregation-frac-bits``, default 36): a value ``x``
becomes the two's-complement word :math:`\\lfloor x 2^f + u\\rfloor`, :math:`u \\sim U[0, 1)`
(stochastic rounding, from a seeded stream): the encoding is exact in expectation, each value's
error lies in :math:`(-2^{-f}, 2^{-f})` with standard deviation at most :math:`2^{-f-1}`, and a sum
of ``m`` values is off by less than :math:`m 2^{-f}` (for :math:`|x| 2^f < 2^{52}`; beyond, the
scaling itself rounds, to float64's relative :math:`2^{-53}`). **Overflow**: the sum of ``m``
words must stay in :math:`(-2^{63}, 2^{63})`, so every client refuses a value with
:math:`|x| \\ge 2^{63-f}/m` (:func:`fixed_point_bound`; with ``f = 36`` and ``m = 10``, about
:math:`1.3 \\times 10^7`) and non-finite values, before anything is sent.

What an upload alone shows: a uniformly distributed word per value (the masks of the ``m - 1``
peers are uniform and independent of the data), so it decodes to noise; only the sum of all
``m`` uploads of one message decodes. The array sizes are public.
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

from fedmf_app.common.secure_sum import add_pairwise_masks, mask_stream

__all__ = [
    "FixedPointError",
    "decode_fixed",
    "encode_fixed",
    "fixed_point_bound",
    "mask_words",
    "message_key",
    "sum_words",
    "word_stream",
]

#: Words per keystream chunk (16 MiB of uint64).


class FixedPointError(ValueError):
    """A value cannot be encoded: not finite, or so large that the sum could overflow."""


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


def message_key(pair_key: bytes, server_round: int, tag: str) -> bytes:
    """The pair's 256-bit key for one message: HMAC-SHA256 of ``tag`` and the round.

    Parameters
    ----------
    pair_key : bytes
        The run's pair key (32 bytes).
    server_round : int
    tag : str
        Which sum of that round (e.g. ``"upload"``).

    Returns
    -------
    bytes
        32 bytes.
    """
    return hmac.new(pair_key, f"fedmf-secagg|{tag}|{server_round}".encode(), hashlib.sha256).digest()


def word_stream(key: bytes, size: int, start: int = 0) -> np.ndarray:
    """``size`` uint64 words of the ChaCha20 keystream of ``key``, from word ``start``.

    Parameters
    ----------
    key : bytes
        32 bytes.
    size : int
    start : int
        Word offset; a multiple of 8 (one ChaCha20 block is 8 words).

    Returns
    -------
    ndarray of uint64, shape (size,)
    """
    return mask_stream(key, size, start, np.uint64)


def mask_words(words: np.ndarray, me: int, keys: dict[int, bytes]) -> np.ndarray:
    """Mask fixed-point words: add the streams of higher peers, subtract those of lower ones.

    Parameters
    ----------
    words : ndarray of uint64, shape (K,)
        :func:`encode_fixed` output (not modified).
    me : int
        This client's index.
    keys : dict of int to bytes
        Peer index -> :func:`message_key` of the pair for this message (every other client).

    Returns
    -------
    ndarray of uint64, shape (K,)
        Uniformly distributed on its own.
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
