"""Signed key-agreement keys: a party's long-term key vouches for its per-run X25519 key (no Flower).

Without it the server, which relays the clients' public keys, could hand a client its own key in
place of a peer's and unmask that client's upload (a man in the middle). Each client ``p`` signs
the statement :func:`key_statement` (domain, Flower run id, its partition id, the number of
clients, its X25519 public key) with its long-term private key; every other client checks the
signature with ``p``'s long-term public key, which it knows from its own node config (e.g. the
SuperNode keys of ``python -m fedmf_app.deployment.certificates``, also registered with the
SuperLink). A substituted key fails the check, and so does a replayed one: a key signed for
another run id, partition or federation size.

The same keys sign the blinded points of the sample-ID alignment (:func:`points_statement`,
:mod:`fedmf_app.federated.alignment`), so that a server cannot pass its own points off as a
party's.

Long-term keys: EC (ECDSA with SHA-384; the P-384 keys Flower's SuperNode authentication uses) or
Ed25519, in OpenSSH or PEM format.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

__all__ = [
    "KeyFileError",
    "fingerprint",
    "key_statement",
    "load_fingerprints",
    "load_private_key",
    "load_public_key",
    "points_statement",
    "sign",
    "verify",
]


class KeyFileError(ValueError):
    """A long-term key file is missing, unreadable or of an unsupported type."""


def key_statement(run_id: int, partition_id: int, num_clients: int, public_key: bytes) -> bytes:
    """The bytes a client signs for its key-agreement key.

    Parameters
    ----------
    run_id : int
        Flower's run id (the same on every node of a run).
    partition_id : int
    num_clients : int
    public_key : bytes
        The 32-byte X25519 public key.

    Returns
    -------
    bytes
    """
    return b"fedmf-secagg-key|%d|%d|%d|" % (run_id, partition_id, num_clients) + public_key


def points_statement(
    run_id: int, partition_id: int, num_clients: int, origin: int, hop: int, points: bytes
) -> bytes:
    """The bytes a client signs for the blinded points it hands on in the sample-ID alignment.

    Parameters
    ----------
    run_id : int
    partition_id : int
        The signer (the party that blinded last).
    num_clients : int
    origin : int
        The party whose IDs the points hide.
    hop : int
        How many parties blinded them before the signer (0: the origin's own message).
    points : bytes
        The concatenated points (their SHA-256 is signed).

    Returns
    -------
    bytes
    """
    digest = hashlib.sha256(points).digest()
    return b"fedmf-psi-points|%d|%d|%d|%d|%d|" % (run_id, partition_id, num_clients, origin, hop) + digest


def load_private_key(path: str | Path):
    """A long-term private key (OpenSSH or PEM, EC or Ed25519, unencrypted).

    Raises
    ------
    KeyFileError
        Naming the file.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the signing key ({exc.strerror})") from exc
    try:
        if data.lstrip().startswith(b"-----BEGIN OPENSSH"):
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path}: not an unencrypted OpenSSH or PEM private key ({exc})") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise KeyFileError(f"{path}: a {type(key).__name__}; an EC or Ed25519 key is needed")
    return key


def load_public_key(path: str | Path):
    """A long-term public key (OpenSSH ``.pub`` or PEM, EC or Ed25519).

    Raises
    ------
    KeyFileError
        Naming the file.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the public key ({exc.strerror})") from exc
    try:
        if data.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(data)
        else:
            key = serialization.load_ssh_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path}: not an OpenSSH or PEM public key ({exc})") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey):
        raise KeyFileError(f"{path}: a {type(key).__name__}; an EC or Ed25519 key is needed")
    return key


def fingerprint(public_key) -> str:
    """The key's ``SHA256:`` fingerprint, as ``ssh-keygen -l -f <key>.pub`` prints it.

    Organisations compare these out of band (by phone, in a signed contract, ...) and pin their
    peers' in node config ``peer-fingerprints``.
    """
    blob = public_key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    digest = hashlib.sha256(base64.b64decode(blob.split()[1])).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def load_fingerprints(path: str | Path) -> dict[int, str]:
    """Pinned fingerprints: one line ``<partition id> SHA256:<...>`` per peer (``#`` comments).

    Raises
    ------
    KeyFileError
        Naming the file and the line.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the pinned fingerprints ({exc.strerror})") from exc
    pinned: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2 or not fields[0].isdigit() or not fields[1].startswith("SHA256:"):
            raise KeyFileError(f"{path}, line {number}: expected '<partition id> SHA256:<fingerprint>'")
        pinned[int(fields[0])] = fields[1]
    return pinned


def sign(private_key, message: bytes) -> bytes:
    """Signature of ``message`` (ECDSA-SHA384 or Ed25519)."""
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        return private_key.sign(message)
    return private_key.sign(message, ec.ECDSA(hashes.SHA384()))


def verify(public_key, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s on ``message``."""
    try:
        if isinstance(public_key, ed25519.Ed25519PublicKey):
            public_key.verify(signature, message)
        else:
            public_key.verify(signature, message, ec.ECDSA(hashes.SHA384()))
    except InvalidSignature:
        return False
    return True
