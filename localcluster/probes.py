"""Readiness probes (plain HTTP(S) GETs) and the kubeconfig the clients share.

Neighbours: `cluster.py` polls these through `procs.wait_until`.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from localcluster.pki import Pki


def admin_context(pki: Pki) -> ssl.SSLContext:
    """TLS context trusting our CA and presenting the admin client certificate."""
    ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
    ctx.load_cert_chain(str(pki.admin_crt), str(pki.admin_key))
    return ctx


def insecure_context() -> ssl.SSLContext:
    """For the self-signed health endpoints of the scheduler and controller manager."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 2.0) -> tuple[int, bytes]:
    """(status, body) of a GET; (0, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return int(resp.status), bytes(resp.read())
    except urllib.error.HTTPError as err:
        return int(err.code), bytes(err.read())
    except (OSError, http.client.HTTPException, ValueError):
        return 0, b""


def ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    return get(url, ctx)[0] == 200


def etcd_healthy(port: int) -> bool:
    status, body = get(f"http://127.0.0.1:{port}/health")
    if status != 200:
        return False
    try:
        return bool(json.loads(body).get("health") == "true")
    except ValueError:
        return False


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, pki: Pki, name: str = "karpy-local") -> None:
    """A self-contained kubeconfig (certificates inlined) for the admin user."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(pki.ca_crt)}}],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": _b64(pki.admin_crt),
                    "client-key-data": _b64(pki.admin_key),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
        "preferences": {},
    }
    # JSON is YAML; kubectl, client-go and the Python client all read it.
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)
