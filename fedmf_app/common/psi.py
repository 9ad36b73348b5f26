"""Private set intersection of sample IDs by commutative blinding on Curve25519 (no Flower).

Every party ``p`` holds a set of sample IDs and a secret scalar ``a_p``. It hashes each ID to a
point ``H(id)`` of Curve25519 (:func:`hash_to_point`) and blinds it, ``a_p H(id)``; the other
parties blind the result in turn with their own scalars. Scalar multiplication commutes, so once
every party's scalar has been applied the point ``(a_1 ... a_m) H(id)`` is the same whoever held
the ID, and two such *fully blinded* sets can be compared without revealing any ID: deciding
whether a blinded point hides a given ID is the decisional Diffie-Hellman problem in the
prime-order subgroup of Curve25519 (``H`` is modelled as a random oracle). This is the classic
DH-based PSI (Meadows 1986; Huberman, Franklin and Hogg 1999).

The multiplication is X25519 (RFC 7748) from ``cryptography``: ``X25519(a, u)`` is the
u-coordinate of ``[clamp(a)] P`` for the point ``P`` with u-coordinate ``u``, and
``X25519(a, X25519(b, u)) = X25519(b, X25519(a, u))``. ``cryptography`` offers no other raw
point multiplication, and X25519 needs nothing else. :func:`hash_to_point` keeps only
u-coordinates of points on the curve itself, not on its quadratic twist (a twist point would stay
on the twist through every blinding and so reveal one bit of the hash of its ID); the clamped
scalar is a multiple of the cofactor 8, so every blinded point lies in the prime-order subgroup.

Points travel as concatenated 32-byte little-endian u-coordinates (:func:`pack`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

__all__ = [
    "POINT_BYTES",
    "Blinder",
    "aligned_order",
    "blind_own_ids",
    "common_positions",
    "hash_to_point",
    "pack",
    "unpack",
]

#: Bytes of one point (an X25519 u-coordinate).
POINT_BYTES = 32
#: The field prime of Curve25519 and the Montgomery coefficient A of y^2 = x^3 + A x^2 + x.
_P = 2**255 - 19
_A = 486662
_DOMAIN = b"fedmf-psi-hash-to-curve|"
_INTEGER = re.compile(r"^-?\d+$")


def _jacobi(a: int, n: int) -> int:
    """Jacobi symbol (a / n) for odd n > 0 (binary algorithm, no modular exponentiation)."""
    a %= n
    result = 1
    while a:
        zeros = (a & -a).bit_length() - 1
        a >>= zeros
        if zeros & 1 and n & 7 in (3, 5):
            result = -result
        if a & 3 == 3 and n & 3 == 3:
            result = -result
        a, n = n % a, a
    return result if n == 1 else 0


def hash_to_point(sample_id: str) -> bytes:
    """Hash an ID to the u-coordinate of a point on Curve25519 (not its twist).

    Try and increment: ``u = SHA-256(domain | counter | id)`` (255 bits, little endian) is kept when
    ``u < p`` and ``u^3 + A u^2 + u`` is a nonzero square mod ``p``; about two tries per ID.

    Parameters
    ----------
    sample_id : str
        The ID as text (UTF-8 encoded).

    Returns
    -------
    bytes
        32 bytes.
    """
    data = sample_id.encode("utf-8")
    counter = 0
    while True:
        digest = hashlib.sha256(_DOMAIN + counter.to_bytes(4, "little") + data).digest()
        u = int.from_bytes(digest, "little") & ((1 << 255) - 1)
        if u < _P:
            rhs = (u * u * u + _A * u * u + u) % _P
            if rhs and _jacobi(rhs, _P) == 1:
                return u.to_bytes(POINT_BYTES, "little")
        counter += 1


def pack(points: Sequence[bytes]) -> bytes:
    """Concatenate 32-byte points."""
    return b"".join(points)


def unpack(data: bytes) -> list[bytes]:
    """Split concatenated 32-byte points.

    Raises
    ------
    ValueError
        When the length is not a multiple of 32.
    """
    if len(data) % POINT_BYTES:
        raise ValueError(f"{len(data)} bytes are not a whole number of {POINT_BYTES}-byte points")
    return [data[i : i + POINT_BYTES] for i in range(0, len(data), POINT_BYTES)]


class Blinder:
    """One party's secret scalar and the blinding it applies.

    Parameters
    ----------
    secret : bytes, optional
        32 bytes (an X25519 private key); a fresh random one when omitted.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        key = X25519PrivateKey.generate() if secret is None else X25519PrivateKey.from_private_bytes(secret)
        self._key = key

    @property
    def secret(self) -> bytes:
        """The 32-byte secret (to keep between messages; never sent)."""
        return self._key.private_bytes_raw()

    def blind(self, points: Sequence[bytes]) -> list[bytes]:
        """Multiply every point by this party's scalar, keeping their order.

        Parameters
        ----------
        points : sequence of bytes
            u-coordinates, 32 bytes each.

        Returns
        -------
        list of bytes

        Raises
        ------
        ValueError
            On a point of small order (the product is the neutral element), which a hashed or
            blinded point is not but a forged one can be.
        """
        exchange = self._key.exchange
        return [exchange(X25519PublicKey.from_public_bytes(p)) for p in points]


def blind_own_ids(ids: Sequence[str], blinder: Blinder) -> tuple[list[bytes], np.ndarray]:
    """A party's first message: its hashed IDs blinded by its own scalar, in sorted order.

    Sorting the blinded points (pseudo-random values) hides the order of the party's rows.

    Parameters
    ----------
    ids : sequence of str, length n
    blinder : Blinder

    Returns
    -------
    points : list of bytes, length n
        Sorted.
    order : ndarray of int64, shape (n,)
        ``order[i]``: the index in ``ids`` of ``points[i]``.
    """
    blinded = blinder.blind([hash_to_point(i) for i in ids])
    order = np.array(sorted(range(len(blinded)), key=blinded.__getitem__), dtype=np.int64)
    return [blinded[i] for i in order], order


def common_positions(sets: Sequence[Sequence[bytes]]) -> list[np.ndarray]:
    """Where each party's fully blinded points lie in the intersection of all of them.

    Parameters
    ----------
    sets : sequence of sequence of bytes
        One list of fully blinded points per party.

    Returns
    -------
    list of ndarray of int64
        Per party, the ascending positions in its list of the points every party holds (all of
        the same length, the intersection's size).

    Raises
    ------
    ValueError
        When a party's list holds a point twice (the same ID twice).
    """
    for p, points in enumerate(sets):
        if len(set(points)) != len(points):
            raise ValueError(f"party {p}'s blinded points repeat a value (an ID held twice)")
    common = set(sets[0]).intersection(*map(set, sets[1:]))
    return [np.array([i for i, x in enumerate(points) if x in common], dtype=np.int64) for points in sets]


def aligned_order(ids: Sequence[str]) -> np.ndarray:
    """The order of the common samples that every party computes alike: by ID.

    Numerically when every ID is an integer written in decimal (ties, as ``7`` and ``007``, then
    as text), else as text (Unicode code points). The rule depends only on the set of IDs, which
    every party of the intersection holds, so every party gets the same order.

    Parameters
    ----------
    ids : sequence of str, length n

    Returns
    -------
    ndarray of int64, shape (n,)
        Indices into ``ids``, sorted.
    """
    if all(_INTEGER.match(i) for i in ids):
        keys = [(int(i), i) for i in ids]
    else:
        keys = [(0, i) for i in ids]
    return np.array(sorted(range(len(ids)), key=keys.__getitem__), dtype=np.int64)
