"""karpy's CRDs and admission webhook registrations, applied with kubectl.

The webhooks call karpy's webhook server by URL (no Service: there is no kube-proxy or cluster
DNS here) and trust the CA that signed its serving certificate. Neighbours: the CRD files in
`charts/karpy/crds/`; `cluster.LocalCluster` supplies the kubectl runner.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]

MUTATING_NAME = "defaulting.webhook.karpy.sh"
VALIDATING_NAME = "validation.webhook.karpy.sh"
MUTATE_PATH = "/webhooks/mutate"
VALIDATE_PATH = "/webhooks/validate"

RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["karpenter.sh"],
        "apiVersions": ["v1alpha5"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["provisioners"],
        "scope": "Cluster",
    },
    {
        "apiGroups": ["karpenter.k8s.aws"],
        "apiVersions": ["v1alpha1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["awsnodetemplates"],
        "scope": "Cluster",
    },
]


# karpy's topology gate (controller/apis/podgate.py): pods on creation, never blocking one (Ignore),
# never in kube-system or karpy's own namespace (the chart's default; those pods must schedule
# while karpy itself is not running), nor in a namespace labelled karpy.sh/topology-gate=disabled.
POD_GATE_NAME = "topology-gate.webhook.karpy.sh"
POD_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "Namespaced"}
]
# Only pods that may need the gate reach the webhook (a CEL matchCondition, GA since Kubernetes
# 1.30): a DoNotSchedule spread on a key other than the hostname, the rule of
# `controller.apis.podgate.spread_keys`; the webhook still checks everything else (`needs_gate`).
# A pod the condition cannot evaluate is not sent (failurePolicy Ignore), and is scheduled as before.
POD_MATCH_CONDITIONS: list[dict[str, str]] = [
    {
        "name": "zonal-do-not-schedule-spread",
        "expression": (
            "has(object.spec.topologySpreadConstraints) && object.spec.topologySpreadConstraints.exists(c, "
            "has(c.whenUnsatisfiable) && c.whenUnsatisfiable == 'DoNotSchedule' && "
            "has(c.topologyKey) && c.topologyKey != '' && c.topologyKey != 'kubernetes.io/hostname')"
        ),
    }
]
SYSTEM_NAMESPACES = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "karpy"]},
        {"key": "karpy.sh/topology-gate", "operator": "NotIn", "values": ["disabled"]},
    ]
}


class ManifestError(RuntimeError):
    pass


def default_crd_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "charts" / "karpy" / "crds"


def crd_names(crd_dir: Path) -> list[str]:
    names = []
    for path in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                names.append(str(doc["metadata"]["name"]))
    return names


def install_crds(kubectl: Kubectl, crd_dir: Path, timeout: float = 60.0) -> list[str]:
    """Apply every CRD in `crd_dir` and wait until each is Established."""
    names = crd_names(crd_dir)
    if not names:
        raise ManifestError(f"no CustomResourceDefinition found in {crd_dir}")
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd_dir))
    kubectl("wait", "--for=condition=Established", f"--timeout={int(timeout)}s", *[f"crd/{n}" for n in names])
    return names


def webhook_configurations(url_base: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration documents for karpy's webhook server."""
    base = url_base.rstrip("/")
    ca_bundle = base64.b64encode(ca_pem).decode()

    def webhook(name: str, path: str) -> dict[str, Any]:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": base + path, "caBundle": ca_bundle},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 10,
            "rules": RULES,
        }

    mutating = webhook(MUTATING_NAME, MUTATE_PATH) | {"reinvocationPolicy": "Never"}
    pod_gate = webhook(POD_GATE_NAME, MUTATE_PATH) | {
        "reinvocationPolicy": "Never", "failurePolicy": "Ignore", "timeoutSeconds": 5, "rules": POD_RULES,
        "namespaceSelector": SYSTEM_NAMESPACES, "matchConditions": POD_MATCH_CONDITIONS,
    }  # fmt: skip
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": VALIDATING_NAME},
            "webhooks": [webhook(VALIDATING_NAME, VALIDATE_PATH)],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": MUTATING_NAME},
            "webhooks": [mutating, pod_gate],
        },
    ]


def _dry_run(kubectl: Kubectl, name: str, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    doc = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": name}, "spec": spec}
    return kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(doc), check=False)


def _probe(kubectl: Kubectl) -> tuple[bool, str]:
    """True once the apiserver calls every webhook (dry-run requests, nothing is stored).

    An empty Provisioner must come back with defaulted requirements (the mutating webhook), one
    with both consolidation and ttlSecondsAfterEmpty must be denied by the validating webhook,
    and a pod with a zonal DoNotSchedule spread must come back gated (the pod webhook).
    """
    proc = _dry_run(kubectl, "karpy-webhook-probe", {})
    if proc.returncode != 0:
        return False, proc.stderr.strip()
    if not (json.loads(proc.stdout).get("spec") or {}).get("requirements"):
        return False, "the mutating webhook did not default the requirements:\n" + proc.stdout
    proc = _dry_run(kubectl, "karpy-webhook-probe", {"consolidation": {"enabled": True}, "ttlSecondsAfterEmpty": 30})
    if f'admission webhook "{VALIDATING_NAME}" denied' not in proc.stderr:
        return False, "the validating webhook did not deny consolidation + ttlSecondsAfterEmpty:\n" + (
            proc.stderr.strip() or proc.stdout
        )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "karpy-webhook-probe", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "probe"}], "topologySpreadConstraints": [
               {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"probe": "karpy"}}}]}}  # fmt: skip
    proc = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(pod), check=False)
    if proc.returncode != 0 or not (json.loads(proc.stdout or "{}").get("spec") or {}).get("schedulingGates"):
        return False, "the pod webhook did not gate a zonal-spread pod:\n" + (proc.stderr.strip() or proc.stdout)
    return True, ""


def install_webhooks(kubectl: Kubectl, url_base: str, ca_pem: bytes, timeout: float = 30.0) -> None:
    """Register the webhooks and wait until the apiserver actually calls them."""
    docs = {"apiVersion": "v1", "kind": "List", "items": webhook_configurations(url_base, ca_pem)}
    kubectl("apply", "-f", "-", input=json.dumps(docs))
    # The apiserver picks new configurations up through an informer, so poll.
    deadline = time.monotonic() + timeout
    while True:
        live, detail = _probe(kubectl)
        if live:
            return
        if time.monotonic() > deadline:
            raise ManifestError(
                f"webhooks at {url_base} did not take effect within {timeout:.0f}s; last answer:\n{detail}"
            )
        time.sleep(0.25)


def uninstall_webhooks(kubectl: Kubectl) -> None:
    kubectl(
        "delete",
        "--ignore-not-found",
        f"mutatingwebhookconfiguration/{MUTATING_NAME}",
        f"validatingwebhookconfiguration/{VALIDATING_NAME}",
    )
