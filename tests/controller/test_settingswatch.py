"""The karpenter-global-settings watcher: applied when it changes, last good kept when invalid."""

from __future__ import annotations

from typing import Any

from controller.clock import FakeClock
from controller.events import EventRecorder
from controller.kube.resources import CONFIGMAPS
from controller.settings import Settings
from controller.settingswatch import VERSION_SECONDS, SettingsWatch, cluster_info, minor_version
from tests.fakes.kube import FakeKube

NS = "karpy"


def configmap(data: dict[str, str], name: str = "karpenter-global-settings", ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


class Setup:
    def __init__(self, base: Settings | None = None, version: str = "v1.29.3-eks-1234") -> None:
        self.clock = FakeClock()
        self.kube = FakeKube(self.clock)
        self.applied: list[tuple[Settings, Settings]] = []
        self.version = version
        self.endpoint = ("https://discovered.example", "RElTQw==")
        base = base or Settings(settings_namespace=NS, cloud_provider="aws", aws_region="us-west-2")
        self.watch = SettingsWatch(
            self.kube, EventRecorder(self.kube, self.clock), self.clock, base,
            lambda old, new: self.applied.append((old, new)), lambda: self.version, lambda s: self.endpoint,
        )  # fmt: skip

    def events(self) -> list[dict[str, Any]]:
        return [e for e in self.kube.events if e["reason"] == "InvalidSettings"]


def test_without_a_configmap_the_defaults_and_what_the_apiserver_says() -> None:
    s = Setup(Settings(settings_namespace=NS, cloud_provider="aws", aws_region="us-west-2", cluster_name="flagged"))
    got = s.watch.reconcile()
    assert got.cluster_name == "flagged" and got.batch_idle_seconds == 1.0
    assert got.aws_kubernetes_version == "1.29"  # the AMIs follow the cluster's version
    assert (got.aws_cluster_endpoint, got.aws_cluster_ca_bundle) == s.endpoint
    assert len(s.applied) == 1 and s.watch.problem == ""
    s.watch.reconcile()
    assert len(s.applied) == 1  # nothing moved: nothing applied again


def test_a_change_is_applied_and_an_invalid_configmap_keeps_the_last_good_settings() -> None:
    s = Setup()
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": "prod", "batchIdleDuration": "3s", "aws.tags": '{"a": "b"}'}))
    got = s.watch.reconcile()
    assert (got.cluster_name, got.batch_idle_seconds, got.tags()) == ("prod", 3.0, {"a": "b"})
    assert s.applied[-1][1] is got
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": "other", "batchIdleDuration": "soon"}))
    kept = s.watch.reconcile()
    assert kept is got and len(s.applied) == 1  # nothing of the bad version is applied, not even the good key
    assert "batchIdleDuration: invalid duration 'soon'" in s.watch.problem
    (event,) = s.events()
    assert event["type"] == "Warning" and event["involvedObject"]["kind"] == "ConfigMap"
    assert event["involvedObject"]["name"] == "karpenter-global-settings" and "batchIdleDuration" in event["message"]
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": "other"}))
    fixed = s.watch.reconcile()
    assert fixed.cluster_name == "other" and fixed.batch_idle_seconds == 1.0 and s.watch.problem == ""


def test_a_configmap_value_that_cannot_work_with_the_flags_is_refused() -> None:
    base = Settings.from_args(None, {"KARPY_SETTINGS_NAMESPACE": NS, "KARPY_BATCH_MAX_SECONDS": "2"})
    s = Setup(base)
    s.kube.put(CONFIGMAPS, configmap({"batchIdleDuration": "5s"}))
    got = s.watch.reconcile()
    assert got.batch_max_seconds == 2.0 and got.batch_idle_seconds == 1.0  # the defaults stay
    assert "batch-idle-seconds: must not be longer than batch-max-seconds" in s.watch.problem
    assert s.events()


def test_flags_win_and_the_version_follows_an_upgrade() -> None:
    base = Settings.from_args(None, {"KARPY_SETTINGS_NAMESPACE": NS, "KARPY_CLUSTER_NAME": "flagged"})
    s = Setup(base)
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": "prod"}))
    assert s.watch.reconcile().cluster_name == "flagged"
    s.version = "v1.30.1"
    assert s.watch.reconcile().aws_kubernetes_version == "1.29"  # re-read every VERSION_SECONDS
    s.clock.step(VERSION_SECONDS)
    assert s.watch.reconcile().aws_kubernetes_version == "1.30"


def test_a_set_version_and_endpoint_are_not_discovered() -> None:
    base = Settings(settings_namespace=NS, aws_kubernetes_version="1.28", aws_cluster_endpoint="https://set")
    s = Setup(base, version="v1.31.0")
    got = s.watch.reconcile()
    assert (got.aws_kubernetes_version, got.aws_cluster_endpoint) == ("1.28", "https://set")


def test_cluster_info_and_versions() -> None:
    kube = FakeKube(FakeClock())
    assert cluster_info(kube) == ("", "")
    kubeconfig = "clusters:\n- cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority-data: Q0E=\n"
    kube.put(CONFIGMAPS, configmap({"kubeconfig": kubeconfig}, "cluster-info", "kube-public"))
    assert cluster_info(kube) == ("https://10.0.0.1:6443", "Q0E=")
    assert minor_version("v1.29.3-eks-1234") == "1.29" and minor_version("garbage") == ""


def test_the_aws_provider_never_runs_without_a_cluster_name() -> None:
    """Karpenter's aws.clusterName is required: settings without one are refused like an invalid
    ConfigMap (an event, the problem on the banner), and removing it later keeps the last name."""
    s = Setup()  # aws, no --cluster-name
    s.watch.reconcile()
    assert s.applied == [] and s.watch.current.cluster_name == ""
    assert "without configmap karpy/karpenter-global-settings" in s.watch.problem
    assert "cluster-name: required with --cloud-provider aws" in s.watch.problem
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": ""}))
    s.watch.reconcile()
    assert "is invalid" in s.watch.problem and "aws.clusterName: clusterName is required" in s.watch.problem
    s.kube.put(CONFIGMAPS, configmap({"aws.clusterName": "prod"}))
    assert s.watch.reconcile().cluster_name == "prod" and s.watch.problem == ""
    s.kube.put(CONFIGMAPS, configmap({"batchIdleDuration": "2s"}))  # the key removed, no flag
    kept = s.watch.reconcile()
    assert kept.cluster_name == "prod" and kept.batch_idle_seconds == 1.0
    assert "cluster-name: required" in s.watch.problem
    messages = [e["message"] for e in s.events()]  # the last repeats the first: de-duplicated
    assert len(messages) == 2 and messages[0].startswith("cluster-name: required") and "clusterName" in messages[1]
