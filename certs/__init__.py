"""karpy's one certificate toolkit: keys, a CA, certificates it issues, and the webhook's set.

Primitives (`new_key`, `new_ca`, `issue`, `key_pem`, `cert_pem`, `public_key_pem`,
`write_private`) are what both users of certificates build on: `generate(dir, hosts)` here makes
the webhook server's CA and serving certificate (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`; the
CA's PEM is what a webhook configuration carries as `caBundle`), and `localcluster/pki.py` makes
the local control plane's CA, apiserver, admin and service-account keys. Everything is ECDSA
P-256 with SHA-256; private keys are created mode 0600. Imports nothing of karpy. No
certificate or key is ever committed: they are made where they are used.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY_DAYS = 365
_BACKDATE = datetime.timedelta(minutes=5)  # tolerate a little clock skew between processes


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_private(path: Path, data: bytes) -> None:
    """Write key material readable by its owner only (0600 from the moment it exists)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def san(host: str) -> x509.GeneralName:
    """An IP address or DNS name as a subjectAltName entry."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def name(common_name: str, organization: str = "") -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)] if organization else []
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def _usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


@dataclass(frozen=True)
class Authority:
    """A CA: its certificate and private key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def new_ca(common_name: str, days: int = VALIDITY_DAYS) -> Authority:
    """A self-signed CA that issues leaf certificates only (path length 0)."""
    key = new_key()
    subject = name(common_name)
    cert = (
        _builder(subject, subject, key, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def issue(
    ca: Authority,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    hosts: Sequence[str] = (),
    days: int = VALIDITY_DAYS,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A leaf certificate and its new key, signed by `ca`, for server or client auth (`usage`),
    with `hosts` (IPs or DNS names) as subjectAltNames."""
    key = new_key()
    builder = (
        _builder(subject, ca.cert.subject, key, days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName([san(h) for h in hosts]), critical=False)
    return builder.sign(ca.key, hashes.SHA256()), key


@dataclass(frozen=True)
class CertPaths:
    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path

    @staticmethod
    def in_dir(directory: str | Path) -> CertPaths:
        d = Path(directory)
        return CertPaths(d / "ca.crt", d / "ca.key", d / "tls.crt", d / "tls.key")


MAX_DAYS = 36_500
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", re.IGNORECASE)


def _host_problem(host: str) -> str | None:
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    dns = host[2:] if host.startswith("*.") else host
    if not dns or len(dns) > 253:
        return "must be an IP address or a DNS name of 1 to 253 characters"
    if not all(_DNS_LABEL.match(label) for label in dns.split(".")):
        return "must be an IP address or a DNS name (ASCII letters, digits and '-', labels of at most 63)"
    return None


def check_request(hosts: Sequence[str], days: int) -> list[str]:
    """Every problem with a webhook certificate request, as messages (empty when it can be made):
    each host an IP address or an ASCII DNS name (an optional leading `*.`), 1 to 36,500 days."""
    problems = [] if hosts else ["at least one --host is needed"]
    for host in hosts:
        why = _host_problem(host)
        if why:
            problems.append(f"host {host[:80]!r}: {why}")
    if not 1 <= days <= MAX_DAYS:
        problems.append(f"days must be from 1 to {MAX_DAYS}, got {days}")
    return problems


def generate(
    directory: str | Path, hosts: list[str], days: int = VALIDITY_DAYS, ca_name: str = "karpy-webhook-ca"
) -> CertPaths:
    """Make a fresh CA and a serving certificate for `hosts` (IPs or DNS names) in `directory`.

    Raises ValueError naming every problem of the request (nothing is written then)."""
    problems = check_request(hosts, days)
    if problems:
        raise ValueError("; ".join(problems))
    paths = CertPaths.in_dir(directory)
    paths.cert.parent.mkdir(parents=True, exist_ok=True)
    ca = new_ca(ca_name, days)
    cert, key = issue(ca, name(hosts[0]), ExtendedKeyUsageOID.SERVER_AUTH, hosts, days)
    write_private(paths.ca_key, key_pem(ca.key))
    write_private(paths.key, key_pem(key))
    paths.ca_cert.write_bytes(cert_pem(ca.cert))
    paths.cert.write_bytes(cert_pem(cert))
    return paths
