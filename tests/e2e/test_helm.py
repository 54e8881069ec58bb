"""`helm install` into the real local control plane, with karpy running as the chart's accounts.

A cluster of its own (the session cluster's webhook registrations have the chart's names). The
rendered chart is accepted by the apiserver (`kubectl apply --dry-run=server`, defaults and every
option); `helm install` creates it; then the webapp (two replicas started at once) and the
controller run as local processes with TokenRequest tokens of the chart's two ServiceAccounts:
the webapp fills the certificate Secret and sets the caBundles, the webhooks default a
Provisioner applied with kubectl, and the controller scales nodes up and down — so the RBAC is
enough. `kubectl auth can-i --as` shows it is no more than that. `helm upgrade` keeps the
certificate; `helm uninstall` leaves the CRDs only.

The chart's webhook configurations call a Service, which nothing here can route (no
kube-proxy, no cluster DNS): the test, as admin, points them at the local webapp's URL instead
(as envtest does) — the caBundle is still the webapp's own doing.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from localcluster import LocalCluster, procs
from tests.e2e.env import REPO
from tests.support.poll import until

CHART = REPO / "charts" / "karpy"
EVERY_OPTION = REPO / "tests" / "charts" / "every-option-values.yaml"
NS = "karpy"
WEBAPP_SA, CONTROLLER_SA = "karpy-webapp", "karpy"
SECRET = "karpy-webhook-cert"
HOOKS = {"mutatingwebhookconfiguration": "defaulting.webhook.karpy.sh",
         "validatingwebhookconfiguration": "validation.webhook.karpy.sh"}  # fmt: skip
PATHS = {"mutatingwebhookconfiguration": "/webhooks/mutate", "validatingwebhookconfiguration": "/webhooks/validate"}


def foreign_crd(group: str, kind: str, version: str = "v1") -> dict[str, Any]:
    """Another operator's kind, structure only: what a cluster using `serviceMonitor.enabled`
    (Prometheus operator) or `webhook.certManager.enabled` (cert-manager) already has."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List", "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [{"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }  # fmt: skip


FOREIGN_CRDS = [foreign_crd("monitoring.coreos.com", "ServiceMonitor"), foreign_crd("cert-manager.io", "Certificate"),
                foreign_crd("cert-manager.io", "Issuer")]  # fmt: skip

PROVISIONER = """\
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: helm-e2e
spec:
  ttlSecondsAfterEmpty: 5
  limits:
    resources:
      cpu: "64"
"""


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "helm-e2e"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "helm-e2e", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"karpenter.sh/provisioner-name": "helm-e2e"},
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "app", "image": "registry.example/app:1",
                                    "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}],
                },
            },
        },
    }  # fmt: skip


class Helm:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(self.cluster.bin_dir / "helm"), f"--kubeconfig={self.cluster.kubeconfig}", *args]
        env = {"HOME": str(self.cluster.dir), "PATH": "/usr/bin:/bin"}
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, check=False)
        if check:
            assert proc.returncode == 0, f"helm {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def template(self, *args: str) -> str:
        return self("template", "karpy", str(CHART), "--namespace", NS, *args).stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    own = LocalCluster(tmp_path_factory.mktemp("helm-cluster"))
    own.up(timeout=180)
    try:
        yield own
    finally:
        own.down()


@pytest.fixture(scope="module")
def helm(cluster: LocalCluster) -> Helm:
    return Helm(cluster)


def kubectl_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json").stdout)


def sa_kubeconfig(cluster: LocalCluster, account: str, path: Path) -> Path:
    """A kubeconfig carrying a TokenRequest token of `account` (what the pod would mount)."""
    token = cluster.kubectl("create", "token", account, "-n", NS, "--duration=2h").stdout.strip()
    state = cluster.state
    assert state is not None
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {
            "server": state.server, "certificate-authority-data": base64.b64encode(cluster.ca_pem).decode()}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": "local", "user": account}}],
        "current-context": account,
    }  # fmt: skip
    path.write_text(yaml.safe_dump(config))
    return path


def can_i(cluster: LocalCluster, account: str, *args: str) -> bool:
    proc = cluster.kubectl("auth", "can-i", *args, f"--as=system:serviceaccount:{NS}:{account}", check=False)
    return proc.stdout.strip() == "yes"


def served_certificate(port: int) -> x509.Certificate:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def secret_data(cluster: LocalCluster) -> dict[str, bytes]:
    data = kubectl_json(cluster, "get", "secret", SECRET, "-n", NS).get("data") or {}
    return {k: base64.b64decode(v) for k, v in data.items()}


def karpy(*args: str) -> list[str]:
    return [sys.executable, "-m", "karpy", *args]


# --------------------------------------------------------------------------------------------


def test_rendered_chart_is_accepted_by_the_apiserver(cluster: LocalCluster, helm: Helm) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": FOREIGN_CRDS}))
    cluster.kubectl("wait", "--for=condition=Established", *[f"crd/{c['metadata']['name']}" for c in FOREIGN_CRDS])
    cluster.kubectl("create", "namespace", NS)
    for args, expect in (
        ([], "secret/karpy-webhook-cert"),
        (["--values", str(EVERY_OPTION)], "servicemonitor.monitoring.coreos.com/karpy-controller"),
        (["--set", "webhook.certManager.enabled=true"], "issuer.cert-manager.io/karpy-selfsigned"),
    ):
        rendered = helm.template(*args)
        assert rendered == helm.template(*args)  # stable across renders
        proc = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=rendered, check=False)
        assert proc.returncode == 0, proc.stderr
        assert f"{expect} created (server dry run)" in proc.stdout, proc.stdout
    cluster.kubectl("delete", "namespace", NS, "--wait=true")


@pytest.fixture(scope="module")
def installed(cluster: LocalCluster, helm: Helm) -> LocalCluster:
    helm("install", "karpy", str(CHART), "--namespace", NS, "--create-namespace")
    cluster.kubectl("wait", "--for=condition=Established", "crd/provisioners.karpenter.sh",
                    "crd/awsnodetemplates.karpenter.k8s.aws")  # fmt: skip
    return cluster


def test_installed_objects(installed: LocalCluster) -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for d in
             kubectl_json(installed, "get", "deploy,svc,sa,secret,pdb,role,rolebinding,lease", "-n", NS,
                          "-l", "app.kubernetes.io/instance=karpy")["items"]}  # fmt: skip
    assert {("Deployment", "karpy-controller"), ("Deployment", "karpy-webapp"), ("Secret", SECRET),
            ("ServiceAccount", WEBAPP_SA), ("ServiceAccount", CONTROLLER_SA), ("Lease", "karpy-controller"),
            ("PodDisruptionBudget", "karpy-webapp"), ("Service", "karpy-dashboard"), ("Service", "karpy-webhook"),
            ("Service", "karpy-controller")} <= kinds  # fmt: skip
    assert secret_data(installed) == {}  # nothing from Helm: the webapp fills it


@dataclass
class Running:
    cluster: LocalCluster
    ports: list[int]
    tmp: Path
    procs: list[procs.Proc]


@pytest.fixture(scope="module")
def running(installed: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """Two webapp replicas started at once and one controller, each as its chart ServiceAccount."""
    tmp = tmp_path_factory.mktemp("helm-run")
    web_config = sa_kubeconfig(installed, WEBAPP_SA, tmp / "webapp.kubeconfig")
    ctl_config = sa_kubeconfig(installed, CONTROLLER_SA, tmp / "controller.kubeconfig")
    ports = [procs.free_port(), procs.free_port()]
    for kind, name in HOOKS.items():  # route to the local process (no Service routing here)
        patch = [{"op": "replace", "path": "/webhooks/0/clientConfig",
                  "value": {"url": f"https://127.0.0.1:{ports[0]}{PATHS[kind]}"}}]  # fmt: skip
        installed.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(patch))
    started: list[procs.Proc] = []
    try:
        for i, port in enumerate(ports):
            argv = karpy(
                "webapp", "--kubeconfig", str(web_config), "--host", "127.0.0.1", "--port", str(port),
                "--cert-dir", str(tmp / f"certs-{i}"), "--cert-secret", SECRET, "--cert-namespace", NS,
                "--cert-host", "karpy-webhook.karpy.svc", "--cert-host", "127.0.0.1",
                "--mutating-webhook", HOOKS["mutatingwebhookconfiguration"],
                "--validating-webhook", HOOKS["validatingwebhookconfiguration"], "--workers", "1",
                "--cert-check-seconds", "1",
            )  # fmt: skip
            started.append(procs.start(f"webapp-{i}", argv, tmp, die_with_parent=True, cwd=REPO))
        for i, port in enumerate(ports):
            procs.wait_until(f"webapp {i} serving", functools.partial(_serves, port), 60, [started[i]])
        controller_port = procs.free_port()
        argv = karpy(
            "controller", "--kubeconfig", str(ctl_config), "--simulated-db", str(tmp / "cloud.db"),
            "--leader-election-namespace", NS, "--leader-election-name", "karpy-controller",
            "--http-host", "127.0.0.1", "--http-port", str(controller_port), "--log-format", "text",
        )  # fmt: skip
        started.append(procs.start("controller", argv, tmp, die_with_parent=True, cwd=REPO))
        yield Running(installed, ports, tmp, started)
    finally:
        for proc in reversed(started):
            procs.stop(proc)


def _serves(port: int) -> bool:
    try:
        served_certificate(port)
    except OSError:
        return False
    return True


def test_webapp_bootstraps_the_secret_and_the_ca_bundles(running: Running) -> None:
    cluster = running.cluster
    data = secret_data(cluster)
    assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    ca = x509.load_pem_x509_certificates(data["ca.crt"])[0]
    for port in running.ports:  # both replicas serve the one certificate in the Secret
        cert = served_certificate(port)
        cert.verify_directly_issued_by(ca)
        assert cert == x509.load_pem_x509_certificate(data["tls.crt"])
    for kind, name in HOOKS.items():
        bundle: str = kubectl_json(cluster, "get", kind, name)["webhooks"][0]["clientConfig"]["caBundle"]
        assert base64.b64decode(bundle) == data["ca.crt"]


def test_a_replaced_certificate_is_served_without_a_restart(running: Running) -> None:
    """Emptying the Secret (as a rotation or an operator would) makes the replicas issue a new CA,
    agree on it through the apiserver's conflict check, re-point the caBundles and reload."""
    cluster = running.cluster
    old = secret_data(cluster)
    patch = [{"op": "remove", "path": "/data"}]
    cluster.kubectl("patch", "secret", SECRET, "-n", NS, "--type=json", "-p", json.dumps(patch))

    def renewed() -> dict[str, bytes] | None:
        data = secret_data(cluster)
        return data if data.get("ca.crt") and data["ca.crt"] != old["ca.crt"] else None

    new: dict[str, bytes] = until(renewed, 30, "a new CA in the Secret")
    cert = x509.load_pem_x509_certificate(new["tls.crt"])

    def serves_new(port: int) -> bool:
        try:
            return served_certificate(port) == cert
        except OSError:  # workers being replaced
            return False

    def trusts_new(kind: str, name: str) -> bool:
        bundle: str = kubectl_json(cluster, "get", kind, name)["webhooks"][0]["clientConfig"]["caBundle"]
        return base64.b64decode(bundle) == new["ca.crt"]

    for port in running.ports:
        until(functools.partial(serves_new, port), 30, f"the webapp on {port} serving the new certificate")
    for kind, name in HOOKS.items():
        until(functools.partial(trusts_new, kind, name), 30, f"{name} trusting the new CA")
    assert all(procs.alive(proc) for proc in running.procs)  # reloaded, not restarted


def test_webhooks_default_a_provisioner_and_the_controller_scales_up_and_down(running: Running) -> None:
    cluster = running.cluster
    cluster.kubectl("apply", "-f", "-", input=PROVISIONER)
    spec = kubectl_json(cluster, "get", "provisioner", "helm-e2e")["spec"]
    assert {r["key"] for r in spec["requirements"]} >= {"karpenter.sh/capacity-type", "kubernetes.io/os"}

    cluster.kubectl("apply", "-f", "-", input=json.dumps(deployment(3)))

    def running_pods() -> int:
        pods = kubectl_json(cluster, "get", "pods", "-n", "default", "-l", "app=helm-e2e")["items"]
        return sum(1 for p in pods if p["status"].get("phase") == "Running")

    def karpy_nodes() -> list[str]:
        nodes = kubectl_json(cluster, "get", "nodes", "-l", "karpenter.sh/provisioner-name=helm-e2e")["items"]
        return [n["metadata"]["name"] for n in nodes]

    until(lambda: running_pods() == 3, 120, "3 pods Running on nodes karpy launched")
    assert karpy_nodes()
    cluster.kubectl("scale", "deployment/helm-e2e", "-n", "default", "--replicas=0")
    until(lambda: not karpy_nodes(), 120, "the empty nodes removed")
    cluster.kubectl("delete", "deployment/helm-e2e", "-n", "default")
    for name in ("controller", "webapp-0", "webapp-1"):  # the dashboard reads as the webapp's account too
        log = (running.tmp / f"{name}.log").read_text()
        assert "forbidden" not in log.lower(), f"{name}: {log[-3000:]}"
    lease = kubectl_json(cluster, "get", "lease", "karpy-controller", "-n", NS)
    assert lease["spec"]["holderIdentity"]  # it led through the chart's Lease


def as_webapp(running: Running, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl with the webapp ServiceAccount's token (the kubeconfig the `running` webapp uses)."""
    argv = [str(running.cluster.bin_dir / "kubectl"), f"--kubeconfig={running.tmp / 'webapp.kubeconfig'}", *args]
    return subprocess.run(argv, input=input, capture_output=True, text=True, timeout=60, check=False)


POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}
TAMPERING: dict[str, Any] = {
    "the issue's: a Pod rule and an outside URL": lambda h: (
        h["webhooks"][0]["rules"].append(POD_RULE),
        h["webhooks"][0]["clientConfig"].update({"url": "https://attacker.example/mutate"}),
    ),
    "a Pod rule": lambda h: h["webhooks"][0]["rules"].append(POD_RULE),
    "the URL": lambda h: h["webhooks"][0]["clientConfig"].update({"url": "https://attacker.example/mutate"}),
    "failurePolicy": lambda h: h["webhooks"][0].update({"failurePolicy": "Ignore"}),
    "a namespace selector": lambda h: h["webhooks"][0].update({"namespaceSelector": {"matchLabels": {"only": "this"}}}),
    "a second webhook": lambda h: h["webhooks"].append({**h["webhooks"][0], "name": "second.webhook.karpy.sh"}),
    "a label": lambda h: h["metadata"].setdefault("labels", {}).update({"x": "y"}),
}


def test_the_webapp_account_may_change_only_the_ca_bundle(running: Running) -> None:
    """Issue 20, defect 3: the `update` right granted for caBundle injection covered the whole
    object; the chart's ValidatingAdmissionPolicy narrows it to the caBundle (server-side dry runs
    as the webapp's ServiceAccount on the real API server)."""
    cluster = running.cluster
    server = kubectl_json(cluster, "version")["serverVersion"]  # VAP is GA (admissionregistration/v1) since 1.30
    assert (int(server["major"]), int(server["minor"].rstrip("+"))) >= (1, 30)
    for kind, name in HOOKS.items():
        assert can_i(cluster, WEBAPP_SA, "update", f"{kind}/{name}")  # RBAC alone allows any update
        current = kubectl_json(cluster, "get", kind, name)
        for what, tamper in TAMPERING.items():
            changed = json.loads(json.dumps(current))
            tamper(changed)
            proc = as_webapp(running, "replace", "--dry-run=server", "-f", "-", input=json.dumps(changed))
            assert proc.returncode != 0, f"{kind}: {what} was accepted"
            assert "may change only the webhooks' clientConfig.caBundle" in proc.stderr, (what, proc.stderr)
        renewed = json.loads(json.dumps(current))
        renewed["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(b"another CA").decode()
        proc = as_webapp(running, "replace", "--dry-run=server", "-f", "-", input=json.dumps(renewed))
        assert proc.returncode == 0, proc.stderr
        # an administrator (Helm) is not matched by the policy
        admin = json.loads(json.dumps(current))
        TAMPERING["failurePolicy"](admin)
        cluster.kubectl("replace", "--dry-run=server", "-f", "-", input=json.dumps(admin))


WEBAPP_MAY = [
    ("get", "secret", SECRET), ("update", "secret", SECRET),
    ("get", "mutatingwebhookconfiguration", HOOKS["mutatingwebhookconfiguration"]),
    ("update", "mutatingwebhookconfiguration", HOOKS["mutatingwebhookconfiguration"]),
    ("update", "validatingwebhookconfiguration", HOOKS["validatingwebhookconfiguration"]),
    ("get", "leases.coordination.k8s.io", "karpy-controller"),  # the dashboard asks the leader
    ("create", "tokenreviews.authentication.k8s.io", ""),  # the dashboard's authorization
    ("create", "subjectaccessreviews.authorization.k8s.io", ""),
]  # fmt: skip
WEBAPP_MAY_NOT = [
    ("get", "leases.coordination.k8s.io", "other"), ("list", "leases.coordination.k8s.io", ""),
    ("get", "secret", "other"), ("list", "secrets", ""), ("watch", "secrets", ""), ("create", "secrets", ""),
    ("delete", "secret", SECRET), ("patch", "secret", SECRET),
    ("update", "mutatingwebhookconfiguration", "someone-elses"), ("create", "mutatingwebhookconfigurations", ""),
    ("delete", "validatingwebhookconfiguration", HOOKS["validatingwebhookconfiguration"]),
    ("create", "provisioners.karpenter.sh", ""), ("update", "provisioners.karpenter.sh", ""),
    ("delete", "provisioners.karpenter.sh", ""), ("create", "nodes", ""), ("delete", "nodes", ""),
    ("patch", "nodes", ""), ("create", "pods", ""), ("delete", "pods", ""), ("create", "pods:eviction", ""),
    ("patch", "pods:status", ""), ("create", "deployments.apps", ""), ("update", "configmaps", ""),
    ("update", "leases.coordination.k8s.io", ""),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""), ("escalate", "clusterroles", ""),
]  # fmt: skip
CONTROLLER_MAY = [
    ("create", "nodes", ""), ("delete", "nodes", ""), ("get", "nodes", ""), ("create", "pods:eviction", ""),
    ("create", "pods:binding", ""), ("list", "provisioners.karpenter.sh", ""),
    ("patch", "provisioners.karpenter.sh:status", ""), ("patch", "pods", ""), ("patch", "pods:status", ""),
    ("watch", "persistentvolumeclaims", ""), ("list", "persistentvolumes", ""),
    ("watch", "storageclasses.storage.k8s.io", ""), ("list", "csinodes.storage.k8s.io", ""),
    ("update", "leases.coordination.k8s.io", "karpy-controller"),
    ("create", "tokenreviews.authentication.k8s.io", ""),  # the API's authorization
    ("create", "subjectaccessreviews.authorization.k8s.io", ""),
    ("get", "configmaps", "karpy-savings"), ("update", "configmaps", "karpy-savings"),
]  # fmt: skip
CONTROLLER_MAY_NOT = [
    ("update", "configmaps", "other"), ("create", "configmaps", ""), ("list", "configmaps", ""),
    ("get", "secrets", ""), ("list", "secrets", ""), ("get", "secret", SECRET), ("watch", "secrets", ""),
    ("update", "provisioners.karpenter.sh", ""), ("delete", "provisioners.karpenter.sh", ""),
    ("delete", "pods", ""), ("create", "deployments.apps", ""), ("update", "leases.coordination.k8s.io", "other"),
    ("update", "mutatingwebhookconfiguration", HOOKS["mutatingwebhookconfiguration"]),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
    ("patch", "persistentvolumeclaims", ""), ("create", "persistentvolumes", ""),
    ("delete", "persistentvolumes", ""), ("update", "storageclasses.storage.k8s.io", ""),
]  # fmt: skip


def _resource(kind: str, name: str) -> list[str]:
    """kubectl auth can-i arguments: `kind:sub` is a subresource, `name` a resourceName."""
    kind, _, sub = kind.partition(":")
    return ([f"{kind}/{name}"] if name else [kind]) + ([f"--subresource={sub}"] if sub else [])


def may_view_dashboard(cluster: LocalCluster, account: str) -> bool:
    """A SubjectAccessReview for `get dashboard.karpy.sh` (kubectl auth can-i reads an unknown
    `a.b.c` as resource.version.group, so it cannot ask this one)."""
    sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{NS}:{account}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"],
        "resourceAttributes": {"group": "karpy.sh", "resource": "dashboard", "verb": "get"}}}  # fmt: skip
    answer = json.loads(cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(sar)).stdout)
    return bool(answer["status"].get("allowed"))


def test_least_privilege(installed: LocalCluster) -> None:
    for account, may, may_not in ((WEBAPP_SA, WEBAPP_MAY, WEBAPP_MAY_NOT),
                                  (CONTROLLER_SA, CONTROLLER_MAY, CONTROLLER_MAY_NOT)):  # fmt: skip
        allowed = [(v, k, n) for v, k, n in may if not can_i(installed, account, v, *_resource(k, n), "-n", NS)]
        assert allowed == [], f"{account} lacks"
        denied = [(v, k, n) for v, k, n in may_not if can_i(installed, account, v, *_resource(k, n), "-n", NS)]
        assert denied == [], f"{account} should not have"
    # Nothing else writable: the webapp's full list of rules holds only read verbs beyond the above.
    rules = installed.kubectl("auth", "can-i", "--list", "-n", NS, f"--as=system:serviceaccount:{NS}:{WEBAPP_SA}")
    verbs = ("create", "update", "patch", "delete")
    writes = [line for line in rules.stdout.splitlines()[1:]
              if any(v in line for v in verbs) and "selfsubject" not in line]  # fmt: skip
    # the webapp shows its own token to the controller's API (dashboard.auth=kubernetes); the controller reads no page
    assert may_view_dashboard(installed, WEBAPP_SA) and not may_view_dashboard(installed, CONTROLLER_SA)
    reviews = ("tokenreviews", "subjectaccessreviews")  # system:auth-delegator: the dashboard's authorization
    assert all(SECRET in line or "webhookconfigurations" in line or line.startswith(reviews) for line in writes), writes


def test_upgrade_keeps_the_certificate_and_uninstall_leaves_only_the_crds(running: Running, helm: Helm) -> None:
    cluster = running.cluster
    before = secret_data(cluster)
    for kind, name in HOOKS.items():  # undo the test's URL routing; the caBundle the webapp set stays
        client = kubectl_json(cluster, "get", kind, name)["webhooks"][0]["clientConfig"]
        service = {"name": "karpy-webhook", "namespace": NS, "path": PATHS[kind], "port": 443}
        patch = [{"op": "replace", "path": "/webhooks/0/clientConfig",
                  "value": {"service": service, "caBundle": client["caBundle"]}}]  # fmt: skip
        cluster.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(patch))
    helm("upgrade", "karpy", str(CHART), "--namespace", NS, "--set", "controller.replicas=1",
         "--set", "webhook.timeoutSeconds=5")  # fmt: skip
    assert kubectl_json(cluster, "get", "deploy", "karpy-controller", "-n", NS)["spec"]["replicas"] == 1
    hook = kubectl_json(cluster, "get", "validatingwebhookconfiguration", HOOKS["validatingwebhookconfiguration"])
    assert hook["webhooks"][0]["timeoutSeconds"] == 5
    assert base64.b64decode(hook["webhooks"][0]["clientConfig"]["caBundle"]) == before["ca.crt"]
    assert secret_data(cluster) == before  # Helm's three-way merge left the webapp's data alone

    for proc in running.procs:
        procs.stop(proc)
    helm("uninstall", "karpy", "--namespace", NS, "--wait")
    namespaced = kubectl_json(cluster, "get", "all,sa,secret,cm,pdb,role,rolebinding,lease", "-n", NS)["items"]
    left = [f"{d['kind']}/{d['metadata']['name']}" for d in namespaced
            if not (d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "default")
            and not (d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kube-root-ca.crt")]  # fmt: skip
    assert left == []
    cluster_scoped = kubectl_json(
        cluster, "get", "clusterrole,clusterrolebinding,mutatingwebhookconfiguration,validatingwebhookconfiguration"
    )["items"]
    assert [d["metadata"]["name"] for d in cluster_scoped if "karpy" in d["metadata"]["name"]] == []
    crds = {d["metadata"]["name"] for d in kubectl_json(cluster, "get", "crd")["items"]}
    assert {"provisioners.karpenter.sh", "awsnodetemplates.karpenter.k8s.aws"} <= crds
