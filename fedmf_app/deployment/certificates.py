"""Self-signed TLS certificates and SuperNode authentication keys, for tests and trials.

``python -m fedmf_app.deployment.certificates DIR --supernodes 3 --host superlink.example.org`` writes

* ``ca.crt``, ``ca.key``: a certificate authority (give ``ca.crt`` to every SuperNode and to the
  person running ``flwr run``; keep ``ca.key`` private);
* ``server.pem``, ``server.key``: the SuperLink's certificate, valid for ``localhost``,
  ``127.0.0.1`` and every ``--host``;
* ``supernode-<i>.key``, ``supernode-<i>.pub``: one EC (NIST P-384) key pair per SuperNode in
  OpenSSH format, as Flower 1.42's SuperNode authentication expects (the SuperNode keeps the
  private key; the SuperLink's operator registers the public key with ``flwr supernode register``).

Real deployments should use certificates from the organisations' own authority.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
from dataclasses import dataclass
from logging import INFO
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from flwr.common.logger import log

from fedmf_app.common.key_signing import fingerprint, load_public_key

__all__ = ["TlsFiles", "main", "make_certificates", "make_supernode_keys", "pin_lines"]

_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class TlsFiles:
    """Paths of a CA certificate and the SuperLink's certificate and key.

    Attributes
    ----------
    ca_cert : Path
    server_cert : Path
    server_key : Path
    """

    ca_cert: Path
    server_cert: Path
    server_key: Path


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fedmf_app test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_certificates(out_dir: str | Path, hosts: tuple[str, ...] = ()) -> TlsFiles:
    """Write a CA and a SuperLink certificate signed by it.

    Parameters
    ----------
    out_dir : str or Path
        Created if missing; existing files of the same names are replaced.
    hosts : tuple of str
        Further DNS names or IP addresses the SuperLink is reached at (``localhost`` and
        ``127.0.0.1`` are always included).

    Returns
    -------
    TlsFiles
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = _name("fedmf_app test CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA384())
    )
    server_key = ec.generate_private_key(ec.SECP384R1())
    names = ["localhost", "127.0.0.1", *[h for h in hosts if h not in ("localhost", "127.0.0.1")]]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[-1] if hosts else "localhost"))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA384())
    )
    files = TlsFiles(ca_cert=out / "ca.crt", server_cert=out / "server.pem", server_key=out / "server.key")
    _write_key(ca_key, out / "ca.key")
    files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, files.server_key)
    files.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    return files


def make_supernode_keys(out_dir: str | Path, count: int) -> list[tuple[Path, Path]]:
    """Write ``count`` SuperNode authentication key pairs.

    Parameters
    ----------
    out_dir : str or Path
    count : int

    Returns
    -------
    list of (Path, Path)
        ``(private key, public key)`` of SuperNode ``i`` at index ``i``: EC NIST P-384 keys in
        OpenSSH format (``flower-supernode --auth-supernode-private-key`` and
        ``flwr supernode register``).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = []
    for i in range(count):
        key = ec.generate_private_key(ec.SECP384R1())
        private, public = out / f"supernode-{i}.key", out / f"supernode-{i}.pub"
        private.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
            )
        )
        private.chmod(0o600)
        public.write_bytes(
            key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            + b"\n"
        )
        pairs.append((private, public))
    return pairs


def pin_lines(pairs: list[tuple[Path, Path]]) -> str:
    """The ``peer-fingerprints`` lines of these key pairs: ``<partition> SHA256:<fingerprint>``.

    Parameters
    ----------
    pairs : list of (Path, Path)
        :func:`make_supernode_keys`' output (the public key of partition ``i`` at index ``i``).

    Returns
    -------
    str
    """
    return "".join(f"{i} {fingerprint(load_public_key(public))}\n" for i, (_, public) in enumerate(pairs))


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m fedmf_app.deployment.certificates DIR [--supernodes N] [--host H ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="folder for the files")
    parser.add_argument(
        "--supernodes", type=int, default=0, help="number of SuperNode key pairs to make (default 0)"
    )
    parser.add_argument(
        "--host", action="append", default=[], help="DNS name or IP address of the SuperLink (repeatable)"
    )
    args = parser.parse_args(argv)
    files = make_certificates(args.out_dir, tuple(args.host))
    keys = make_supernode_keys(args.out_dir, args.supernodes)
    log(INFO, "CA certificate:     %s", files.ca_cert)
    log(INFO, "SuperLink cert/key: %s %s", files.server_cert, files.server_key)
    for private, public in keys:
        log(INFO, "SuperNode key pair: %s %s", private, public)


if __name__ == "__main__":
    main()
