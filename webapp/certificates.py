"""The webapp's serving certificate, kept in a Secret without Helm or cert-manager.

On start every webapp replica calls `ensure()`: it reads the Secret (`ca.crt`, `ca.key`,
`tls.crt`, `tls.key`), decides with the pure `plan()` whether it can be used as it is, and if
not issues what is missing and writes it back — `create` when the Secret is absent,
`replace` with the read resourceVersion otherwise. Two replicas starting at once both try; the
loser gets 409 (AlreadyExists or Conflict), reads the winner's Secret again and uses it, so
every replica serves a certificate from the same CA. The leaf is renewed a third of its
validity before expiry under the same CA (replicas still serving the old leaf stay trusted);
a CA near its own expiry is replaced and the previous one stays in `ca.crt` while it is
valid. Then the `caBundle` of each of its webhook configurations is set to `ca.crt`.
Neighbours: `certs` (the toolkit), `server.py` (runs `ensure` at start and periodically).
"""

from __future__ import annotations

import base64
import datetime
import enum
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

import certs
from controller.kube.client import Kube, Obj
from controller.kube.errors import ConflictError, NotFoundError
from controller.kube.resources import Kind

log = logging.getLogger(__name__)

SECRETS = Kind("secrets", "v1", "secrets", True)
_ADMISSION = "admissionregistration.k8s.io/v1"
MUTATING = Kind("mutatingwebhookconfigurations", _ADMISSION, "mutatingwebhookconfigurations", False)
VALIDATING = Kind("validatingwebhookconfigurations", _ADMISSION, "validatingwebhookconfigurations", False)
CA_NAME = "karpy-webhook-ca"
KEYS = ("ca.crt", "ca.key", "tls.crt", "tls.key")
SERVING_PEM = "serving.pem"  # certificate then key, the one file the TLS server reads
_ATTEMPTS = 5


class CertificateError(RuntimeError):
    """The Secret or a webhook configuration could not be brought up to date."""


@dataclass(frozen=True)
class CertSpec:
    """Which Secret to keep, for which DNS names/IPs, and which webhook configurations trust it."""

    secret: str
    namespace: str
    hosts: tuple[str, ...]
    mutating: tuple[str, ...] = ()
    validating: tuple[str, ...] = ()
    leaf_days: int = 365
    ca_days: int = 3650


@dataclass(frozen=True)
class Bundle:
    """PEM bytes as stored in the Secret; `ca` may hold more than one CA certificate."""

    ca: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def data(self) -> dict[str, str]:
        values = (self.ca, self.ca_key, self.cert, self.key)
        return {k: base64.b64encode(v).decode() for k, v in zip(KEYS, values, strict=True)}

    def write(self, directory: Path) -> None:
        """Write `serving.pem` (certificate and key, 0600) for the TLS server, and `tls.crt`,
        `tls.key` (0600), `ca.crt` for people; each replaced atomically (rename)."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, data, private in (
            ("ca.crt", self.ca, False),
            ("tls.crt", self.cert, False),
            ("tls.key", self.key, True),
            (SERVING_PEM, self.cert + self.key, True),
        ):
            tmp = directory / f".{name}.tmp"
            if private:
                certs.write_private(tmp, data)
            else:
                tmp.write_bytes(data)
            os.replace(tmp, directory / name)


class Action(enum.Enum):
    KEEP = "keep"  # the Secret serves as it is
    NEW_LEAF = "new-leaf"  # same CA, a new serving certificate
    NEW_CA = "new-ca"  # a new CA (and leaf); the old CA stays in ca.crt while valid


@dataclass(frozen=True)
class Plan:
    action: Action
    reason: str


def decode(secret: Obj | None) -> Bundle | None:
    """The Secret's four keys as PEM bytes, or None if any is missing or not base64."""
    data = (secret or {}).get("data") or {}
    try:
        values = [base64.b64decode(data[k], validate=True) for k in KEYS]
    except (KeyError, TypeError, ValueError):
        return None
    return Bundle(*values)


def _expiry(cert: x509.Certificate) -> float:
    return cert.not_valid_after_utc.timestamp()


def _lifetime(cert: x509.Certificate) -> float:
    return (cert.not_valid_after_utc - cert.not_valid_before_utc).total_seconds()


def _due(cert: x509.Certificate, now: float) -> bool:
    """Renew once less than a third of the validity is left."""
    return _expiry(cert) - now < _lifetime(cert) / 3


def _names(cert: x509.Certificate) -> set[str]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return set(sans.get_values_for_type(x509.DNSName)) | {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}


def plan(bundle: Bundle | None, hosts: Sequence[str], now: float) -> Plan:
    """Pure: what to do with the Secret's contents at time `now` (epoch seconds)."""
    if bundle is None:
        return Plan(Action.NEW_CA, "the Secret is missing or incomplete")
    try:
        ca = x509.load_pem_x509_certificates(bundle.ca)[0]
        ca_key = serialization.load_pem_private_key(bundle.ca_key, password=None)
        leaf = x509.load_pem_x509_certificate(bundle.cert)
        key = serialization.load_pem_private_key(bundle.key, password=None)
    except ValueError as err:
        return Plan(Action.NEW_CA, f"the Secret does not hold valid PEM: {err}")
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey) or ca_key.public_key() != ca.public_key():
        return Plan(Action.NEW_CA, "ca.key does not match ca.crt")
    if _due(ca, now):
        return Plan(Action.NEW_CA, "the CA expires soon")
    if key.public_key() != leaf.public_key():
        return Plan(Action.NEW_LEAF, "tls.key does not match tls.crt")
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return Plan(Action.NEW_LEAF, "tls.crt is not issued by the current CA")
    missing = set(hosts) - _names(leaf)
    if missing:
        return Plan(Action.NEW_LEAF, f"tls.crt does not name {sorted(missing)}")
    if _due(leaf, now):
        return Plan(Action.NEW_LEAF, "the serving certificate expires soon")
    return Plan(Action.KEEP, "valid")


def _still_valid(pem: bytes, now: float) -> bytes:
    return b"".join(certs.cert_pem(c) for c in x509.load_pem_x509_certificates(pem) if _expiry(c) > now)


def issue(current: Bundle | None, decision: Plan, spec: CertSpec, now: float) -> Bundle:
    """A Bundle carrying out `decision` (a new leaf under the current CA, or a new CA and leaf)."""
    if decision.action is Action.NEW_LEAF and current is not None:
        ca_key = serialization.load_pem_private_key(current.ca_key, password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        authority = certs.Authority(x509.load_pem_x509_certificates(current.ca)[0], ca_key)
        ca_pem = current.ca
    else:
        authority = certs.new_ca(CA_NAME, spec.ca_days)
        previous = _still_valid(current.ca, now) if current is not None else b""
        ca_pem = certs.cert_pem(authority.cert) + previous
    leaf, key = issue_leaf(authority, spec)
    return Bundle(ca_pem, certs.key_pem(authority.key), certs.cert_pem(leaf), certs.key_pem(key))


def issue_leaf(authority: certs.Authority, spec: CertSpec) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    return certs.issue(
        authority, certs.name(spec.hosts[0]), ExtendedKeyUsageOID.SERVER_AUTH, spec.hosts, spec.leaf_days
    )


def _secret(spec: CertSpec, bundle: Bundle, existing: Obj | None) -> Obj:
    meta: dict[str, Any] = {"name": spec.secret, "namespace": spec.namespace}
    secret_type = "Opaque"
    if existing is not None:  # keep labels, annotations, resourceVersion (optimistic lock) and type
        meta = dict(existing.get("metadata") or {}) | meta
        secret_type = str(existing.get("type") or secret_type)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": secret_type, "data": bundle.data()}


def ensure_secret(kube: Kube, spec: CertSpec, now: float) -> Bundle:
    """Read the Secret, and create or update it when `plan` says so; 409 means re-read and retry."""
    for _ in range(_ATTEMPTS):
        try:
            existing: Obj | None = kube.get(SECRETS, spec.secret, spec.namespace)
        except NotFoundError:
            existing = None
        current = decode(existing)
        decision = plan(current, spec.hosts, now)
        if decision.action is Action.KEEP and current is not None:
            return current
        fresh = issue(current, decision, spec, now)
        try:
            if existing is None:
                kube.create(SECRETS, _secret(spec, fresh, None), spec.namespace)
            else:
                kube.replace(SECRETS, spec.secret, _secret(spec, fresh, existing), spec.namespace)
        except ConflictError:
            log.info("secret %s/%s changed meanwhile; reading it again", spec.namespace, spec.secret)
            continue
        log.info("secret %s/%s: %s (%s)", spec.namespace, spec.secret, decision.action.value, decision.reason)
        return fresh
    raise CertificateError(f"secret {spec.namespace}/{spec.secret} kept changing; gave up after {_ATTEMPTS} tries")


def patch_ca_bundles(kube: Kube, spec: CertSpec, ca_pem: bytes) -> list[str]:
    """Set every webhook's `clientConfig.caBundle` in the named configurations; return those changed.

    The configuration is replaced with its resourceVersion (a webhooks list cannot be merge-patched
    item by item); a 409 re-reads it. A configuration that does not exist is an error: the
    apiserver would call the webhooks with no CA.
    """
    wanted = base64.b64encode(ca_pem).decode()
    changed: list[str] = []
    targets = [(MUTATING, n) for n in spec.mutating] + [(VALIDATING, n) for n in spec.validating]
    for kind, config_name in targets:
        for attempt in range(_ATTEMPTS):
            try:
                obj = kube.get(kind, config_name)
            except NotFoundError as err:
                raise CertificateError(f"{kind.plural} {config_name} not found") from err
            hooks = obj.get("webhooks") or []
            if all((h.get("clientConfig") or {}).get("caBundle") == wanted for h in hooks):
                break
            for hook in hooks:
                hook.setdefault("clientConfig", {})["caBundle"] = wanted
            try:
                kube.replace(kind, config_name, obj)
            except ConflictError:
                if attempt == _ATTEMPTS - 1:
                    raise CertificateError(f"{kind.plural} {config_name} kept changing") from None
                continue
            changed.append(config_name)
            log.info("caBundle of %s %s updated", kind.plural, config_name)
            break
    return changed


def ensure(kube: Kube, spec: CertSpec, now: float) -> Bundle:
    """The Secret up to date and every webhook configuration trusting its CA."""
    if not spec.hosts:
        raise CertificateError("the serving certificate needs at least one host name")
    bundle = ensure_secret(kube, spec, now)
    patch_ca_bundles(kube, spec, bundle.ca)
    return bundle


def expires_at(bundle: Bundle) -> datetime.datetime:
    return x509.load_pem_x509_certificate(bundle.cert).not_valid_after_utc
