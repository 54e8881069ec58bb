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
