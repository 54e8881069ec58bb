"""`karpy webapp` under gunicorn with TLS: a review over HTTPS, verified against the generated CA."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization

from tests.support.procs import free_port, karpy, stop, wait_until
from webapp.server import _ssl_context


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("webapp")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "karpy",
            "certs",
            "generate",
            "--dir",
            str(tmp / "certs"),
            "--host",
            "127.0.0.1",
            "--host",
            "localhost",
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    proc = karpy(
        ["webapp", "--cert-dir", str(tmp / "certs"), "--port", str(port), "--host", "127.0.0.1"], tmp / "webapp.log"
    )
    url = f"https://127.0.0.1:{port}"
    ca = tmp / "certs" / "ca.crt"
    try:
        wait_until(lambda: requests.get(f"{url}/healthz", verify=str(ca), timeout=1).ok, 30, "webapp", proc)
        yield url, ca
    finally:
        stop(proc)


def test_review_over_https_verified_against_the_ca(server: tuple[str, Path]) -> None:
    url, ca = server
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "tls-1",
            "operation": "CREATE",
            "kind": {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
            "object": {
                "apiVersion": "karpenter.sh/v1alpha5",
                "kind": "Provisioner",
                "metadata": {"name": "default"},
                "spec": {"ttlSecondsAfterEmpty": 1, "consolidation": {"enabled": True}},
            },
        },
    }
    resp = requests.post(
        f"{url}/webhooks/validate",
        data=json.dumps(review),
        verify=str(ca),
        timeout=5,
        headers={"Content-Type": "application/json"},
    )
    assert resp.status_code == 200
    body = resp.json()["response"]
    assert body["uid"] == "tls-1" and body["allowed"] is False
    assert "spec.consolidation.enabled" in body["status"]["message"]


def test_server_is_not_trusted_without_the_ca(server: tuple[str, Path]) -> None:
    url, _ = server
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{url}/healthz", timeout=5)


def test_tls_is_1_2_or_newer(server: tuple[str, Path]) -> None:
    url, ca = server
    host, port = url.removeprefix("https://").split(":")
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection((host, int(port)), timeout=5) as sock,
        context.wrap_socket(sock, server_hostname=host) as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_tls_1_2_offers_aead_suites_only(server: tuple[str, Path]) -> None:
    """Issue 20, defect 8: two CBC suites were still accepted over TLS 1.2."""
    url, ca = server
    host, port = url.removeprefix("https://").split(":")
    offered = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    offered.set_ciphers("ALL:@SECLEVEL=0")
    accepted = []
    for cipher in (c["name"] for c in offered.get_ciphers() if c["protocol"] == "TLSv1.2"):
        context = ssl.create_default_context(cafile=str(ca))
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.set_ciphers(cipher)
            with (
                socket.create_connection((host, int(port)), timeout=5) as sock,
                context.wrap_socket(sock, server_hostname=host) as tls,
            ):
                negotiated = tls.cipher()
                assert negotiated is not None
                accepted.append(negotiated[0])
        except (ssl.SSLError, OSError):
            continue
    assert accepted, "no TLS 1.2 suite at all"
    assert all("GCM" in name or "CHACHA20" in name for name in accepted), accepted


def test_server_context_refuses_old_protocols() -> None:
    context = _ssl_context(None, lambda: ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def _served(port: int) -> bytes | None:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, ctx.wrap_socket(raw) as tls:
            return tls.getpeercert(binary_form=True)
    except OSError:
        return None


def test_renewed_certificate_files_are_served_without_a_restart(tmp_path: Path) -> None:
    """What a Secret volume renewed by cert-manager does: new files in --cert-dir; the next
    connection gets them (the TLS context is built per connection), the process stays."""
    from cryptography import x509

    from certs import generate

    paths = generate(tmp_path / "certs", ["127.0.0.1"])
    port = free_port()
    argv = ["webapp", "--cert-dir", str(tmp_path / "certs"), "--port", str(port), "--host", "127.0.0.1",
            "--workers", "1"]  # fmt: skip
    proc = karpy(argv, tmp_path / "webapp.log")
    try:
        wait_until(lambda: _served(port) is not None, 30, "webapp", proc)
        first = _served(port)
        generate(tmp_path / "certs", ["127.0.0.1"])
        new = x509.load_pem_x509_certificate(paths.cert.read_bytes()).public_bytes(serialization.Encoding.DER)
        assert new != first
        wait_until(lambda: _served(port) == new, 30, "the renewed certificate served", proc)
        assert proc.poll() is None
    finally:
        stop(proc)
