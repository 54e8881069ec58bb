"""The certificate Secret: read or create, races between replicas, renewal, CA rollover, caBundles."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from cryptography import x509

from controller.kube.client import Obj
from controller.kube.errors import ConflictError
from controller.kube.resources import Kind
from tests.fakes.kube import FakeKube
from webapp import certificates as C
from webapp.settings import WebappSettings

SPEC = C.CertSpec(
    secret="karpy-webapp-cert",
    namespace="karpy",
    hosts=("karpy-webhook.karpy.svc", "karpy-webhook.karpy", "127.0.0.1"),
    mutating=("defaulting.webhook.karpy.sh",),
    validating=("validation.webhook.karpy.sh",),
)
DAY = 86400.0


def webhook_configs(kube: FakeKube) -> None:
    for kind, name in ((C.MUTATING, SPEC.mutating[0]), (C.VALIDATING, SPEC.validating[0])):
        kube.put(kind, {"metadata": {"name": name}, "webhooks": [{"name": name, "clientConfig": {"url": "https://x"}}]})


def cluster() -> FakeKube:
    kube = FakeKube()
    webhook_configs(kube)
    return kube


def secret(kube: FakeKube) -> Obj:
    return kube.get(C.SECRETS, SPEC.secret, SPEC.namespace)


def leaf(bundle: C.Bundle) -> x509.Certificate:
    return x509.load_pem_x509_certificate(bundle.cert)


def cas(bundle: C.Bundle) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(bundle.ca)


def writes(kube: FakeKube) -> list[str]:
    return [m for m, _ in kube.calls if m in ("create", "replace", "patch")]


def test_an_absent_secret_is_created_and_the_webhooks_trust_its_ca() -> None:
    kube = cluster()
    bundle = C.ensure(kube, SPEC, time.time())
    assert C.decode(secret(kube)) == bundle
    leaf(bundle).verify_directly_issued_by(cas(bundle)[0])
    sans = leaf(bundle).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"karpy-webhook.karpy.svc", "karpy-webhook.karpy"} <= set(sans.get_values_for_type(x509.DNSName))
    for kind, name in ((C.MUTATING, SPEC.mutating[0]), (C.VALIDATING, SPEC.validating[0])):
        hook = kube.get(kind, name)["webhooks"][0]["clientConfig"]
        assert base64.b64decode(hook["caBundle"]) == bundle.ca
        assert hook["url"] == "https://x"  # only the caBundle changes


def test_a_valid_secret_is_used_as_it_is_and_nothing_is_written() -> None:
    kube = cluster()
    first = C.ensure(kube, SPEC, time.time())
    kube.calls.clear()
    assert C.ensure(kube, SPEC, time.time() + 30 * DAY) == first
    assert writes(kube) == []


class Racing(FakeKube):
    """Runs `other` (the second replica) just before this replica's first write lands."""

    def __init__(self) -> None:
        super().__init__()
        self.other: Callable[[], Any] | None = None

    def _race(self) -> None:
        if self.other is not None:
            other, self.other = self.other, None
            other()

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self._race()
        return super().create(kind, obj, namespace)

    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self._race()
        return super().replace(kind, name, obj, namespace)


@pytest.mark.parametrize("placeholder", [False, True], ids=["secret-absent", "empty-secret-from-the-chart"])
def test_two_replicas_starting_at_once_serve_one_certificate(placeholder: bool) -> None:
    kube = Racing()
    webhook_configs(kube)
    if placeholder:
        kube.put(C.SECRETS, {"metadata": {"name": SPEC.secret, "namespace": SPEC.namespace}, "type": "Opaque"})
    results: dict[str, C.Bundle] = {}
    kube.other = lambda: results.setdefault("b", C.ensure(kube, SPEC, time.time()))
    results["a"] = C.ensure(kube, SPEC, time.time())
    assert results["a"] == results["b"] == C.decode(secret(kube))
    assert writes(kube).count("create" if not placeholder else "replace") >= 2  # the loser's write was refused


def test_the_leaf_is_renewed_under_the_same_ca_a_third_of_its_life_before_expiry() -> None:
    kube = cluster()
    old = C.ensure(kube, SPEC, time.time())
    expiry = leaf(old).not_valid_after_utc.timestamp()
    lifetime = expiry - leaf(old).not_valid_before_utc.timestamp()
    assert C.ensure(kube, SPEC, expiry - lifetime / 3 + DAY) is not None
    new = C.decode(secret(kube))
    assert new is not None and new.cert != old.cert
    assert new.ca == old.ca  # replicas still serving the old leaf stay trusted
    leaf(new).verify_directly_issued_by(cas(old)[0])


def test_a_ca_near_expiry_is_replaced_and_the_old_one_stays_trusted_while_valid() -> None:
    kube = cluster()
    old = C.ensure(kube, SPEC, time.time())
    ca_expiry = cas(old)[0].not_valid_after_utc.timestamp()
    new = C.ensure(kube, SPEC, ca_expiry - DAY)
    assert [c.subject for c in cas(new)] == [cas(old)[0].subject] * 2
    assert cas(new)[1] == cas(old)[0]
    leaf(new).verify_directly_issued_by(cas(new)[0])
    hook = kube.get(C.MUTATING, SPEC.mutating[0])["webhooks"][0]["clientConfig"]
    assert base64.b64decode(hook["caBundle"]) == new.ca


def test_the_secret_keeps_its_type_labels_and_annotations() -> None:
    kube = cluster()
    meta = {"name": SPEC.secret, "namespace": SPEC.namespace, "labels": {"app": "karpy"}, "annotations": {"a": "b"}}
    kube.put(C.SECRETS, {"metadata": meta, "type": "kubernetes.io/tls"})
    C.ensure(kube, SPEC, time.time())
    stored = secret(kube)
    assert stored["type"] == "kubernetes.io/tls"
    assert stored["metadata"]["labels"] == {"app": "karpy"} and stored["metadata"]["annotations"] == {"a": "b"}


def _corrupt(bundle: C.Bundle, **fields: bytes) -> C.Bundle:
    return C.Bundle(**{"ca": bundle.ca, "ca_key": bundle.ca_key, "cert": bundle.cert, "key": bundle.key} | fields)


@pytest.mark.parametrize(
    ("change", "action"),
    [
        ("nothing", C.Action.KEEP),
        ("garbage-ca", C.Action.NEW_CA),
        ("ca-key-of-another-ca", C.Action.NEW_CA),
        ("key-of-another-leaf", C.Action.NEW_LEAF),
        ("leaf-of-another-ca", C.Action.NEW_LEAF),
        ("another-host", C.Action.NEW_LEAF),
    ],
)
def test_plan(change: str, action: C.Action) -> None:
    good = C.issue(None, C.Plan(C.Action.NEW_CA, ""), SPEC, time.time())
    other = C.issue(None, C.Plan(C.Action.NEW_CA, ""), SPEC, time.time())
    bundle, hosts = good, SPEC.hosts
    if change == "garbage-ca":
        bundle = _corrupt(good, ca=b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    elif change == "ca-key-of-another-ca":
        bundle = _corrupt(good, ca_key=other.ca_key)
    elif change == "key-of-another-leaf":
        bundle = _corrupt(good, key=other.key)
    elif change == "leaf-of-another-ca":
        bundle = _corrupt(good, cert=other.cert, key=other.key)
    elif change == "another-host":
        hosts = (*SPEC.hosts, "karpy-webhook.other.svc")
    assert C.plan(bundle, hosts, time.time()).action is action


def test_an_incomplete_or_undecodable_secret_means_a_new_ca() -> None:
    assert C.decode({"data": {"ca.crt": "!!"}}) is None
    assert C.decode({"metadata": {}}) is None
    assert C.plan(None, SPEC.hosts, time.time()).action is C.Action.NEW_CA


def test_a_missing_webhook_configuration_is_an_error() -> None:
    kube = FakeKube()
    with pytest.raises(C.CertificateError, match=r"defaulting\.webhook\.karpy\.sh not found"):
        C.ensure(kube, SPEC, time.time())


def test_a_conflicting_webhook_update_is_read_again() -> None:
    class OnceConflicting(FakeKube):
        conflicts = 1

        def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
            if kind is C.MUTATING and self.conflicts:
                self.conflicts -= 1
                raise ConflictError("modified", 409)
            return super().replace(kind, name, obj, namespace)

    kube = OnceConflicting()
    webhook_configs(kube)
    bundle = C.ensure(kube, SPEC, time.time())
    hook = kube.get(C.MUTATING, SPEC.mutating[0])["webhooks"][0]["clientConfig"]
    assert base64.b64decode(hook["caBundle"]) == bundle.ca


def test_bundle_files_are_written_with_a_private_key(tmp_path: Any) -> None:
    bundle = C.ensure(cluster(), SPEC, time.time())
    bundle.write(tmp_path / "certs")
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == bundle.cert
    assert (tmp_path / "certs" / "tls.key").stat().st_mode & 0o777 == 0o600
    serving = tmp_path / "certs" / C.SERVING_PEM  # what the TLS server reads: one file, one rename
    assert serving.read_bytes() == bundle.cert + bundle.key and serving.stat().st_mode & 0o777 == 0o600
    assert not list((tmp_path / "certs").glob(".*.tmp"))


@pytest.mark.parametrize(
    "overrides",
    [
        {"cert_secret": "s", "cert_dir": "/tmp/x"},  # no host
        {"cert_secret": "s", "cert_hosts": ["a"]},  # no directory
        {"cert_check_seconds": 0.0},
    ],
)
def test_settings_refuse_an_incomplete_certificate_setup(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebappSettings.from_env(**overrides)
