"""The Helm chart: lints, renders every object karpy needs, and keeps its webhook CA consistent."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from localcluster.binaries import ensure_binaries

CHART = Path(__file__).resolve().parents[2] / "charts" / "karpy"


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_binaries() / "helm"


def render(helm: Path, *args: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--namespace", "karpy", *args],
        capture_output=True, text=True, check=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def test_chart_lints(helm: Path) -> None:
    proc = subprocess.run([str(helm), "lint", str(CHART)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_renders_every_object(helm: Path) -> None:
    docs = render(helm, "--include-crds")
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    for expected in (
        "CustomResourceDefinition/provisioners.karpenter.sh",
        "CustomResourceDefinition/awsnodetemplates.karpenter.k8s.aws",
        "Deployment/karpy-controller",
        "Deployment/karpy-webapp",
        "Service/karpy-webhook",
        "Secret/karpy-webhook-cert",
        "MutatingWebhookConfiguration/defaulting.webhook.karpy.sh",
        "ValidatingWebhookConfiguration/validation.webhook.karpy.sh",
        "ClusterRole/karpy",
        "Role/karpy",
        "ServiceAccount/karpy",
        "PodDisruptionBudget/karpy-controller",
    ):
        assert expected in kinds


def test_webhooks_trust_the_certificate_the_webapp_serves(helm: Path) -> None:
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in render(helm)}
    secret = docs["Secret/karpy-webhook-cert"]["data"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["ca.crt"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )
    assert "karpy-webhook.karpy.svc" in names
    for kind, path in (("MutatingWebhookConfiguration/defaulting.webhook.karpy.sh", "/webhooks/mutate"),
                       ("ValidatingWebhookConfiguration/validation.webhook.karpy.sh", "/webhooks/validate")):
        hook = docs[kind]["webhooks"][0]
        assert hook["clientConfig"]["caBundle"] == secret["ca.crt"]
        assert hook["clientConfig"]["service"]["path"] == path
        assert hook["failurePolicy"] == "Fail"
        assert {r["resources"][0] for r in hook["rules"]} == {"provisioners", "awsnodetemplates"}
        assert all(r["operations"] == ["CREATE", "UPDATE"] for r in hook["rules"])


def test_rbac_allows_what_the_controller_does(helm: Path) -> None:
    role = next(d for d in render(helm) if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "karpy")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    for need in (("", "nodes", "create"), ("", "nodes", "delete"), ("", "pods/eviction", "create"),
                 ("", "pods/binding", "create"), ("karpenter.sh", "provisioners/status", "patch"),
                 ("policy", "poddisruptionbudgets", "watch")):
        assert need in granted


def test_values_flow_into_the_deployment(helm: Path) -> None:
    docs = render(helm, "--set", "controller.cloudProvider=simulated", "--set", "controller.replicas=3")
    controller = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "karpy-controller")
    assert controller["spec"]["replicas"] == 3
    assert "--cloud-provider=simulated" in controller["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_dashboard_reads_with_get_list_watch_only_and_asks_the_controller(helm: Path) -> None:
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in render(helm)}
    webapp = docs["Deployment/karpy-webapp"]["spec"]["template"]["spec"]
    assert webapp["serviceAccountName"] == "karpy-webapp"
    assert "--controller-url=http://karpy-controller.karpy.svc:8080" in webapp["containers"][0]["args"]
    binding = docs["ClusterRoleBinding/karpy-dashboard"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "karpy-webapp", "namespace": "karpy"}]
    verbs = {v for rule in docs["ClusterRole/karpy-dashboard"]["rules"] for v in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}
    assert docs["Service/karpy-controller"]["spec"]["ports"][0]["port"] == 8080
    controller = docs["Deployment/karpy-controller"]["spec"]["template"]["spec"]
    assert controller["serviceAccountName"] == "karpy"


def test_aws_values_become_the_controllers_aws_settings(helm: Path) -> None:
    docs = render(
        helm, "--set", "controller.cloudProvider=aws", "--set", "controller.aws.region=eu-west-1",
        "--set", "controller.aws.interruptionQueue=karpy-q", "--set", "controller.aws.tags.team=infra",
        "--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/karpy",
    )
    controller = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "karpy-controller")
    container = controller["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "--cloud-provider=aws" in container["args"]
    assert env["KARPY_AWS_REGION"] == "eu-west-1" and env["KARPY_AWS_INTERRUPTION_QUEUE"] == "karpy-q"
    assert json.loads(env["KARPY_AWS_TAGS"]) == {"team": "infra"}
    # every KARPY_AWS_* name is a real controller setting
    from controller.settings import Settings

    names = {f"KARPY_{f.upper()}" for f in Settings.__dataclass_fields__}
    assert {n for n in env if n.startswith("KARPY_")} <= names
    sa = next(d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "karpy")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/karpy"


def test_aws_without_a_region_is_refused(helm: Path) -> None:
    proc = subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--set", "controller.cloudProvider=aws"],
        capture_output=True, text=True,
    )
    assert proc.returncode != 0 and "controller.aws.region is required" in proc.stderr
