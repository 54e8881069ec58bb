"""`karpy certs generate`: a CA and a serving certificate for the given hosts, keys 0600."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from cryptography import x509

from certs import generate


def test_generate_writes_ca_and_serving_cert_with_sans(tmp_path: Path) -> None:
    paths = generate(tmp_path, ["127.0.0.1", "karpy.karpy.svc"])
    for key in (paths.key, paths.ca_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate(paths.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert sans.get_values_for_type(x509.DNSName) == ["karpy.karpy.svc"]
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)


def test_the_local_control_plane_pki_is_issued_by_the_same_toolkit(tmp_path: Path) -> None:
    from localcluster.pki import generate as local_pki

    pki = local_pki(tmp_path, service_ip="10.0.0.1")
    ca = x509.load_pem_x509_certificate(pki.ca_crt.read_bytes())
    admin = x509.load_pem_x509_certificate(pki.admin_crt.read_bytes())
    serving = x509.load_pem_x509_certificate(pki.apiserver_crt.read_bytes())
    admin.verify_directly_issued_by(ca)
    serving.verify_directly_issued_by(ca)
    assert admin.subject.rfc4514_string() == "CN=admin,O=system:masters"
    usage = admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    for key in (pki.ca_key, pki.admin_key, pki.apiserver_key, pki.sa_key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
