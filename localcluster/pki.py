"""The local control plane's PKI, made with karpy's certificate toolkit (`certs`).

One CA signs the apiserver's serving certificate (SANs 127.0.0.1, localhost and the in-cluster
names) and the admin client certificate (O=system:masters). The service-account key pair signs
and verifies service-account tokens. Everything is ECDSA P-256 (quick to generate, accepted by
every component). Neighbours: `cluster.py` passes the file paths as flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.x509.oid import ExtendedKeyUsageOID

import certs


@dataclass(frozen=True)
class Pki:
    """Paths of the generated files (all PEM)."""

    dir: Path

    @property
    def ca_crt(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def apiserver_crt(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def admin_crt(self) -> Path:
        return self.dir / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.dir / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"


def generate(directory: Path, service_ip: str = "10.0.0.1") -> Pki:
    """Write a fresh CA, apiserver and admin certificates and the SA key pair into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca = certs.new_ca("karpy-local-ca")
    pki.ca_crt.write_bytes(certs.cert_pem(ca.cert))
    certs.write_private(pki.ca_key, certs.key_pem(ca.key))

    hosts = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "127.0.0.1",
        service_ip,
    ]
    serving, serving_key = certs.issue(ca, certs.name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, hosts)
    pki.apiserver_crt.write_bytes(certs.cert_pem(serving))
    certs.write_private(pki.apiserver_key, certs.key_pem(serving_key))

    admin, admin_key = certs.issue(ca, certs.name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH)
    pki.admin_crt.write_bytes(certs.cert_pem(admin))
    certs.write_private(pki.admin_key, certs.key_pem(admin_key))

    sa_key = certs.new_key()
    certs.write_private(pki.sa_key, certs.key_pem(sa_key))
    pki.sa_pub.write_bytes(certs.public_key_pem(sa_key))
    return pki
