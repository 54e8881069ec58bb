"""The Helm chart: lints, renders stably, and renders the posture the README promises.

Whether the apiserver accepts the objects, and whether the RBAC is enough and no more, is
tests/e2e/test_helm.py's job; these check the rendered documents.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localcluster.binaries import ensure_binaries

CHART = Path(__file__).resolve().parents[2] / "charts" / "karpy"
EVERY_OPTION = Path(__file__).resolve().parent / "every-option-values.yaml"


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_binaries() / "helm"


def render_text(helm: Path, *args: str) -> str:
    return subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--namespace", "karpy", *args],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def render(helm: Path, *args: str) -> dict[str, dict[str, Any]]:
    import yaml

    docs = [d for d in yaml.safe_load_all(render_text(helm, *args)) if d]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def pod_spec(docs: dict[str, dict[str, Any]], component: str) -> dict[str, Any]:
    spec: dict[str, Any] = docs[f"Deployment/karpy-{component}"]["spec"]["template"]["spec"]
    return spec


def test_chart_lints(helm: Path) -> None:
    for extra in ([], ["--values", str(EVERY_OPTION)]):
        proc = subprocess.run([str(helm), "lint", str(CHART), *extra], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_renders_every_object(helm: Path) -> None:
    kinds = set(render(helm, "--include-crds"))
    assert {
        "CustomResourceDefinition/provisioners.karpenter.sh",
        "CustomResourceDefinition/awsnodetemplates.karpenter.k8s.aws",
        "Deployment/karpy-controller",
        "Deployment/karpy-webapp",
        "Service/karpy-webhook",
        "Service/karpy-controller",
        "Service/karpy-dashboard",
        "Secret/karpy-webhook-cert",
        "MutatingWebhookConfiguration/defaulting.webhook.karpy.sh",
        "ValidatingWebhookConfiguration/validation.webhook.karpy.sh",
        "ClusterRole/karpy-controller",
        "ClusterRole/karpy-webapp",
        "Role/karpy-controller",
        "Role/karpy-webapp",
        "ServiceAccount/karpy",
        "ServiceAccount/karpy-webapp",
        "PodDisruptionBudget/karpy-controller",
        "PodDisruptionBudget/karpy-webapp",
    } <= kinds
    assert not any(k.startswith("ServiceMonitor/") for k in kinds)  # off by default


def test_renders_the_same_bytes_every_time(helm: Path) -> None:
    """No key material is generated at render time (GitOps tools render, then diff)."""
    assert render_text(helm) == render_text(helm)
    secret = render(helm)["Secret/karpy-webhook-cert"]
    assert "data" not in secret and "stringData" not in secret


def test_webhooks(helm: Path) -> None:
    docs = render(helm)
    for kind, path in (
        ("MutatingWebhookConfiguration/defaulting.webhook.karpy.sh", "/webhooks/mutate"),
        ("ValidatingWebhookConfiguration/validation.webhook.karpy.sh", "/webhooks/validate"),
    ):
        hook = docs[kind]["webhooks"][0]
        assert hook["clientConfig"]["service"] == {
            "name": "karpy-webhook",
            "namespace": "karpy",
            "path": path,
            "port": 443,
        }
        assert "caBundle" not in hook["clientConfig"]  # the webapp sets it
        assert (hook["failurePolicy"], hook["sideEffects"], hook["timeoutSeconds"]) == ("Fail", "None", 10)
        assert {(r["apiGroups"][0], r["resources"][0]) for r in hook["rules"]} == {
            ("karpenter.sh", "provisioners"),
            ("karpenter.k8s.aws", "awsnodetemplates"),
        }
        assert all(r["operations"] == ["CREATE", "UPDATE"] for r in hook["rules"])


def test_the_topology_gate_webhook_admits_pods_on_creation_and_never_blocks_one(helm: Path) -> None:
    hooks = render(helm)["MutatingWebhookConfiguration/defaulting.webhook.karpy.sh"]["webhooks"]
    assert [h["name"] for h in hooks] == ["defaulting.webhook.karpy.sh", "topology-gate.webhook.karpy.sh"]
    gate = hooks[1]
    assert gate["clientConfig"]["service"]["path"] == "/webhooks/mutate"
    assert (gate["failurePolicy"], gate["timeoutSeconds"], gate["sideEffects"]) == ("Ignore", 5, "None")
    assert gate["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods"], "scope": "Namespaced"}]  # fmt: skip
    system, opted_out = gate["namespaceSelector"]["matchExpressions"]
    assert (system["key"], system["operator"], sorted(system["values"])) == (
        "kubernetes.io/metadata.name", "NotIn", ["karpy", "kube-system"])  # fmt: skip
    assert opted_out == {"key": "karpy.sh/topology-gate", "operator": "NotIn", "values": ["disabled"]}
    # only pods with a DoNotSchedule spread on a key other than the hostname are sent (CEL, 1.30+ GA)
    [condition] = gate["matchConditions"]
    assert condition == {
        "name": "zonal-do-not-schedule-spread",
        "expression": "has(object.spec.topologySpreadConstraints) && object.spec.topologySpreadConstraints.exists(c, "
        "has(c.whenUnsatisfiable) && c.whenUnsatisfiable == 'DoNotSchedule' && "
        "has(c.topologyKey) && c.topologyKey != '' && c.topologyKey != 'kubernetes.io/hostname')",
    }
    assert all("matchConditions" not in h for h in hooks[:1])  # Provisioners and templates: every one
    off = render(helm, "--set", "webhook.topologyGate=false")[
        "MutatingWebhookConfiguration/defaulting.webhook.karpy.sh"
    ]
    assert [h["name"] for h in off["webhooks"]] == ["defaulting.webhook.karpy.sh"]


def test_the_webapp_keeps_its_certificate_in_the_secret(helm: Path) -> None:
    spec = pod_spec(render(helm), "webapp")
    args = spec["containers"][0]["args"]
    assert "--cert-secret=karpy-webhook-cert" in args and "--cert-namespace=karpy" in args
    assert "--cert-host=karpy-webhook.karpy.svc" in args
    hooks = {"--mutating-webhook=defaulting.webhook.karpy.sh", "--validating-webhook=validation.webhook.karpy.sh"}
    assert hooks <= set(args)
    assert spec["serviceAccountName"] == "karpy-webapp"


@pytest.mark.parametrize("component", ["controller", "webapp"])
def test_pod_posture(helm: Path, component: str) -> None:
    docs = render(helm)
    assert docs[f"Deployment/karpy-{component}"]["spec"]["replicas"] == 2
    spec = pod_spec(docs, component)
    assert spec["priorityClassName"] == "system-cluster-critical"
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "karpenter.sh/provisioner-name", "operator": "DoesNotExist"} in term["matchExpressions"]
    spread = spec["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    assert all(c["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == component for c in spread)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = spec["containers"]
    sc = container["securityContext"]
    assert (sc["readOnlyRootFilesystem"], sc["allowPrivilegeEscalation"], sc["capabilities"]) == (
        True,
        False,
        {"drop": ["ALL"]},
    )
    assert container["livenessProbe"] and container["readinessProbe"] and container["resources"]["requests"]
    assert docs[f"PodDisruptionBudget/karpy-{component}"]["spec"]["maxUnavailable"] == 1


def test_no_role_grants_secrets_to_the_controller_or_wildcards(helm: Path) -> None:
    docs = render(helm)
    for name, doc in docs.items():
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in doc["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], name
            if "secrets" in rule["resources"]:
                assert name == "Role/karpy-webapp" and rule["resourceNames"] == ["karpy-webhook-cert"]
                assert set(rule["verbs"]) == {"get", "update"}


def test_every_option(helm: Path) -> None:
    docs = render(helm, "--values", str(EVERY_OPTION))
    controller = pod_spec(docs, "controller")
    assert docs["Deployment/karpy-controller"]["spec"]["replicas"] == 3
    assert "--log-format=json" in controller["containers"][0]["args"]
    assert controller["imagePullSecrets"] == [{"name": "regcred"}]
    assert docs["ServiceAccount/karpy-controller-sa"]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert docs["ServiceMonitor/karpy-controller"]["spec"]["endpoints"][0]["interval"] == "15s"
    webhook = docs["ValidatingWebhookConfiguration/validation.webhook.karpy.sh"]["webhooks"][0]
    assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Ignore", 5)
    certificate = docs["Certificate/karpy-webhook"]["spec"]
    assert certificate["issuerRef"] == {"kind": "ClusterIssuer", "name": "company-ca", "group": "cert-manager.io"}
    assert certificate["duration"] == "2160h" and not any(k.startswith("Issuer/") for k in docs)


def test_cert_manager_option(helm: Path) -> None:
    """cert-manager fills the Secret (mounted) and injects the caBundle; the webapp keeps no
    certificate rights at all."""
    docs = render(helm, "--set", "webhook.certManager.enabled=true")
    certificate = docs["Certificate/karpy-webhook"]["spec"]
    assert certificate["secretName"] == "karpy-webhook-cert"
    assert "karpy-webhook.karpy.svc" in certificate["dnsNames"]
    assert certificate["issuerRef"] == {"kind": "Issuer", "name": "karpy-selfsigned"}
    assert docs["Issuer/karpy-selfsigned"]["spec"] == {"selfSigned": {}}
    assert "Secret/karpy-webhook-cert" not in docs  # cert-manager owns it
    for kind in ("MutatingWebhookConfiguration/defaulting.webhook.karpy.sh",
                 "ValidatingWebhookConfiguration/validation.webhook.karpy.sh"):  # fmt: skip
        assert docs[kind]["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": "karpy/karpy-webhook"}
    spec = pod_spec(docs, "webapp")
    args = spec["containers"][0]["args"]
    assert "--cert-dir=/etc/karpy/certs" in args and not any(a.startswith("--cert-secret") for a in args)
    assert {"name": "certs", "secret": {"secretName": "karpy-webhook-cert"}} in spec["volumes"]
    assert "Role/karpy-webapp" not in docs and "ClusterRole/karpy-webapp" not in docs


def test_the_webapp_may_change_only_the_ca_bundles(helm: Path) -> None:
    """Issue 20, defect 3: `update` on the webhook configurations covered the whole object. The
    policy's effect on the real API server is `tests/e2e/test_helm.py`'s."""
    docs = render(helm)
    policy = docs["ValidatingAdmissionPolicy/karpy-webapp-ca-bundle-only"]["spec"]
    assert policy["failurePolicy"] == "Fail"
    [match] = policy["matchConditions"]
    assert match["expression"] == 'request.userInfo.username == "system:serviceaccount:karpy:karpy-webapp"'
    [rule] = policy["matchConstraints"]["resourceRules"]
    assert set(rule["resources"]) == {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
    binding = docs["ValidatingAdmissionPolicyBinding/karpy-webapp-ca-bundle-only"]["spec"]
    assert binding == {"policyName": "karpy-webapp-ca-bundle-only", "validationActions": ["Deny"]}
    for off in (("--set", "webhook.certManager.enabled=true"), ("--set", "webhook.caBundleOnlyPolicy=false")):
        assert not any(k.startswith("ValidatingAdmissionPolicy") for k in render(helm, *off))


def test_the_dashboard_reads_with_get_list_watch_only_and_asks_the_controller(helm: Path) -> None:
    docs = render(helm)
    webapp = pod_spec(docs, "webapp")
    assert webapp["serviceAccountName"] == "karpy-webapp"
    assert "--controller-url=http://karpy-controller.karpy.svc:8080" in webapp["containers"][0]["args"]
    binding = docs["ClusterRoleBinding/karpy-dashboard"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "karpy-webapp", "namespace": "karpy"}]
    verbs = {v for rule in docs["ClusterRole/karpy-dashboard"]["rules"] for v in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}
    assert docs["Service/karpy-controller"]["spec"]["ports"][0]["port"] == 8080
    assert pod_spec(docs, "controller")["serviceAccountName"] == "karpy"


def test_aws_values_become_the_controllers_aws_settings(helm: Path) -> None:
    docs = render(
        helm, "--set", "controller.cloudProvider=aws", "--set", "controller.aws.region=eu-west-1",
        "--set", "controller.aws.interruptionQueue=karpy-q", "--set", "controller.aws.tags.team=infra",
        "--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/karpy",
    )  # fmt: skip
    container = pod_spec(docs, "controller")["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "--cloud-provider=aws" in container["args"]
    assert env["KARPY_AWS_REGION"] == "eu-west-1" and env["KARPY_AWS_INTERRUPTION_QUEUE"] == "karpy-q"
    assert json.loads(env["KARPY_AWS_TAGS"]) == {"team": "infra"}
    # every KARPY_AWS_* name is a real controller setting
    from controller.settings import Settings

    names = {f"KARPY_{f.upper()}" for f in Settings.__dataclass_fields__}
    assert {n for n in env if n.startswith("KARPY_")} <= names
    sa = docs["ServiceAccount/karpy"]
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::1:role/karpy"


def test_aws_without_a_region_is_refused(helm: Path) -> None:
    proc = subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--set", "controller.cloudProvider=aws"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0 and "controller.aws.region is required" in proc.stderr


def test_an_unknown_cloud_provider_is_refused(helm: Path) -> None:
    proc = subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--set", "controller.cloudProvider=gcp"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0 and "controller.cloudProvider must be simulated or aws" in proc.stderr


def test_a_controller_not_configured_is_alive_but_not_ready(helm: Path) -> None:
    """Liveness is /healthz (a controller waiting for its configuration is not restarted into a crash
    loop), readiness /readyz (it is not ready until configured). Without a cluster name the aws
    install is not refused: karpenter-global-settings, which the chart does not manage, may name it."""
    aws = ["--set", "controller.cloudProvider=aws", "--set", "controller.aws.region=us-east-1"]
    container = pod_spec(render(helm, *aws), "controller")["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "KARPY_CLUSTER_NAME" not in {e["name"] for e in container["env"]}
    lint = subprocess.run([str(helm), "lint", str(CHART), *aws], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr  # NOTES.txt's warning renders


def test_simulated_cloud_state_is_shared_by_the_controller_replicas(helm: Path) -> None:
    # issue 14, item 3: each replica had its own store on an emptyDir, so after a failover the
    # new leader saw no instances (and garbage collection deleted every node)
    docs = render(helm)
    pod = pod_spec(docs, "controller")
    state = next(v for v in pod["volumes"] if v["name"] == "state")
    assert state == {"name": "state", "persistentVolumeClaim": {"claimName": "karpy-simulated-cloud"}}
    assert "PersistentVolumeClaim/karpy-simulated-cloud" in docs
    together = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert together["topologyKey"] == "kubernetes.io/hostname"
    assert together["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "controller"
    assert "nodeAffinity" in pod["affinity"]  # the values' affinity is kept

    throwaway = render(helm, "--set", "controller.simulatedState.persistence=false")
    assert {"name": "state", "emptyDir": {}} in pod_spec(throwaway, "controller")["volumes"]
    assert not any(key.startswith("PersistentVolumeClaim/") for key in throwaway)


def test_the_charts_webhooks_are_the_local_clusters(helm: Path) -> None:
    """The webhook registration is written twice — the chart's template (Service-backed) and
    `localcluster/manifests.py` (URL-backed, for `karpy dev` and the e2e tests) — so the two are
    compared here: same names, paths, rules and every policy, only the way to reach the server differs."""
    from localcluster.manifests import webhook_configurations

    docs = render(helm)
    local = {d["kind"]: d for d in webhook_configurations("https://127.0.0.1:8443", b"ca")}
    assert set(local) == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for kind, mine in local.items():
        theirs = docs[f"{kind}/{mine['metadata']['name']}"]
        for ours, chart in zip(mine["webhooks"], theirs["webhooks"], strict=True):
            url, service = ours["clientConfig"]["url"], chart["clientConfig"]["service"]
            assert url.removeprefix("https://127.0.0.1:8443") == service["path"]
            drop = {"clientConfig"}
            assert {k: v for k, v in ours.items() if k not in drop} == {k: v for k, v in chart.items() if k not in drop}


def test_the_dashboard_has_its_own_port_and_kubernetes_authorization_by_default(helm: Path) -> None:
    """Issue 20, defect 7: the dashboard was open to every pod on the webhook port, and the
    controller's API on 0.0.0.0. Its behaviour on the real API server: tests/e2e/test_dashboard_access.py."""
    docs = render(helm)
    webapp = pod_spec(docs, "webapp")["containers"][0]
    assert {"--dashboard-port=8444", "--dashboard-auth=kubernetes"} <= set(webapp["args"])
    assert {"name": "dashboard", "containerPort": 8444} in webapp["ports"]
    assert docs["Service/karpy-dashboard"]["spec"]["ports"][0]["targetPort"] == "dashboard"
    assert docs["Service/karpy-webhook"]["spec"]["ports"][0]["targetPort"] == "https"
    assert "--api-auth=kubernetes" in pod_spec(docs, "controller")["containers"][0]["args"]
    viewer = docs["ClusterRole/karpy-dashboard-viewer"]["rules"]
    assert viewer == [{"apiGroups": ["karpy.sh"], "resources": ["dashboard"], "verbs": ["get"]}]
    delegator = docs["ClusterRoleBinding/karpy-auth-delegator"]
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert {s["name"] for s in delegator["subjects"]} == {"karpy", "karpy-webapp"}
    assert docs["ClusterRoleBinding/karpy-dashboard-viewer-webapp"]["subjects"][0]["name"] == "karpy-webapp"
    assert not any(k.startswith("NetworkPolicy/") for k in docs)
    open_docs = render(helm, "--set", "dashboard.auth=none")
    assert "--dashboard-auth=none" in pod_spec(open_docs, "webapp")["containers"][0]["args"]
    assert "ClusterRoleBinding/karpy-auth-delegator" not in open_docs


def test_the_network_policy_admits_only_the_api_server_to_the_webhook_port(helm: Path) -> None:
    docs = render(helm, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.apiServerCIDRs={10.0.0.0/24}")
    policy = docs["NetworkPolicy/karpy-webapp"]["spec"]
    assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webapp"
    webhook, dashboard = policy["ingress"]
    assert webhook == {"ports": [{"port": "https", "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}
    assert dashboard == {"ports": [{"port": "dashboard", "protocol": "TCP"}]}
    refused = subprocess.run(
        [str(helm), "template", "karpy", str(CHART), "--set", "networkPolicy.enabled=true"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "networkPolicy.apiServerCIDRs is required" in refused.stderr
