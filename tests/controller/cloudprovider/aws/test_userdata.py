"""User data per AMI family, and the launch template data (spec §5.9)."""

from __future__ import annotations

import base64
import email
import re
import tomllib
from typing import Any

import pytest

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.provisioner import KubeletConfiguration
from controller.apis.validation import validate_provisioner
from controller.cloudprovider.aws.amifamily import ephemeral_storage, node_shape
from controller.cloudprovider.aws.launchtemplates import launch_template_data, template_name
from controller.cloudprovider.aws.userdata import Bootstrap, user_data
from controller.core.taints import Taint
from controller.scheduling.provisioners import kubelet_spec
from controller.scheduling.types import KubeletSpec
from tests.support import kubeletcheck
from tests.support.seeds import provisioner_documents

GIB = 2**30
BOOT = Bootstrap(
    cluster_name="prod",
    endpoint="https://api.example",
    ca_bundle="Q0E=",
    dns_ip="10.100.0.10",
    labels={"team": "a", "karpenter.sh/provisioner-name": "default"},
    taints=(Taint("dedicated", "a", "NoSchedule"),),
    kubelet=KubeletSpec(max_pods=20, pods_per_core=2, system_reserved={"cpu": 100}),
    max_pods=20,
)


def template(**spec: object) -> AWSNodeTemplate:
    return AWSNodeTemplate.from_wire({"metadata": {"name": "t"}, "spec": {"subnetSelector": {"a": "b"}, **spec}})


def test_al2_is_mime_with_the_custom_part_first_and_bootstrap_last() -> None:
    text = user_data("AL2", BOOT, "#!/bin/bash\necho custom\n")
    parts = [p.get_payload() for p in email.message_from_string(text).walk() if not p.is_multipart()]
    assert len(parts) == 2 and "echo custom" in parts[0]
    script = parts[1]
    assert "/etc/eks/bootstrap.sh 'prod'" in script and "--apiserver-endpoint 'https://api.example'" in script
    assert "--b64-cluster-ca 'Q0E='" in script and "--dns-cluster-ip '10.100.0.10'" in script
    assert "--container-runtime containerd" in script and "--use-max-pods false" in script
    assert "--node-labels=karpenter.sh/provisioner-name=default,team=a" in script
    assert "--register-with-taints=dedicated=a:NoSchedule" in script
    assert "--max-pods=20" in script and "--pods-per-core=2" in script and "--system-reserved=cpu=100m" in script


def test_a_mime_custom_user_data_keeps_its_parts() -> None:
    custom = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b"\n\n'
        "--b\nContent-Type: text/x-shellscript\n\necho one\n--b--\n"
    )
    text = user_data("AL2", BOOT, custom)
    parts = [p.get_payload() for p in email.message_from_string(text).walk() if not p.is_multipart()]
    assert "echo one" in parts[0] and "bootstrap.sh" in parts[1]


def test_bottlerocket_is_toml_merged_over_the_custom_settings() -> None:
    custom = (
        "[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n"
        "[settings.host-containers.admin]\nenabled = true\n"
    )
    doc = tomllib.loads(user_data("Bottlerocket", BOOT, custom))
    k8s = doc["settings"]["kubernetes"]
    assert k8s["cluster-name"] == "prod" and k8s["api-server"] == "https://api.example" and k8s["max-pods"] == 20
    assert k8s["node-labels"]["team"] == "a" and k8s["node-taints"] == {"dedicated": ["a:NoSchedule"]}
    assert k8s["image-gc-high-threshold-percent"] == 80 and doc["settings"]["host-containers"]["admin"]["enabled"]
    with pytest.raises(ValueError):
        user_data("Bottlerocket", BOOT, "this is = not [toml")


def test_custom_is_verbatim_and_ubuntu_has_no_container_runtime_flag() -> None:
    assert user_data("Custom", BOOT, "#cloud-config\n") == "#cloud-config\n"
    assert "--container-runtime" not in user_data("Ubuntu", BOOT, None)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, 20 * GIB),
        ({"amiFamily": "Bottlerocket"}, 20 * GIB),
        ({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}]}, 100 * GIB),
        (
            {
                "amiFamily": "Bottlerocket",
                "blockDeviceMappings": [
                    {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi"}},
                    {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "60Gi"}},
                ],
            },
            60 * GIB,
        ),
        (
            {
                "amiFamily": "Custom",
                "blockDeviceMappings": [
                    {"deviceName": "/dev/a", "ebs": {"volumeSize": "30Gi"}},
                    {"deviceName": "/dev/b", "ebs": {"volumeSize": "40Gi"}},
                ],
            },
            40 * GIB,
        ),
        ({"amiFamily": "Custom"}, None),
    ],
)
def test_ephemeral_storage_comes_from_the_familys_device(spec: dict[str, object], expected: int | None) -> None:
    assert ephemeral_storage(template(**spec)) == expected


def test_bottlerocket_shape_ignores_pods_per_core_and_eviction_soft() -> None:
    shape = node_shape(template(amiFamily="Bottlerocket"))
    assert not shape.pods_per_core and not shape.eviction_soft and not shape.eni_limited_memory
    assert node_shape(template()).pods_per_core


def test_launch_template_data_defaults_imdsv2_and_rounds_volumes_up() -> None:
    t = template(
        blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20G", "volumeType": "gp3"}}],
        detailedMonitoring=True,
    )
    data = launch_template_data(t, "ami-1", ["sg-2", "sg-1"], "echo", "profile")
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 2,
        "HttpTokens": "required",
    }
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeType": "gp3", "VolumeSize": 19}}]
    assert data["SecurityGroupIds"] == ["sg-1", "sg-2"] and data["IamInstanceProfile"] == {"Name": "profile"}
    assert base64.b64decode(data["UserData"]) == b"echo" and data["Monitoring"] == {"Enabled": True}
    hops = template(metadataOptions={"httpPutResponseHopLimit": 1, "httpTokens": "optional"})
    other = launch_template_data(hops, "ami-1", ["sg-1"], "echo", None)
    assert (
        other["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
        and other["MetadataOptions"]["HttpTokens"] == "optional"
    )
    assert template_name(data, {}) == template_name(dict(data), {}) != template_name(other, {})


# Kubelet configuration through Kubernetes' own kubelet code (issue 19) ----------------------------

FAMILIES = ("AL2", "Ubuntu", "Bottlerocket")
# Bottlerocket's documented settings.kubernetes keys → the kubelet flag its templates set
BOTTLEROCKET_FLAGS = {
    "max-pods": "--max-pods",
    "cluster-dns-ip": "--cluster-dns",
    "kube-reserved": "--kube-reserved",
    "system-reserved": "--system-reserved",
    "eviction-hard": "--eviction-hard",
    "eviction-soft": "--eviction-soft",
    "eviction-soft-grace-period": "--eviction-soft-grace-period",
    "eviction-max-pod-grace-period": "--eviction-max-pod-grace-period",
    "image-gc-high-threshold-percent": "--image-gc-high-threshold",
    "image-gc-low-threshold-percent": "--image-gc-low-threshold",
    "cpu-cfs-quota-enforced": "--cpu-cfs-quota",
    "node-labels": "--node-labels",
    "node-taints": "--register-with-taints",
}
BOTTLEROCKET_JOIN = {"eviction-hard": "<", "eviction-soft": "<"}


def seed_kubelet() -> dict[str, Any]:
    """Seed 004's reference `kubeletConfiguration` (the Provisioner that has one)."""
    found = [doc["spec"]["kubeletConfiguration"] for _, doc in provisioner_documents()
             if "kubeletConfiguration" in doc.get("spec", {})]  # fmt: skip
    assert found, "seed 004's reference Provisioner has a kubeletConfiguration"
    return dict(found[0])


def spec_of(kubelet: dict[str, Any]) -> KubeletSpec:
    spec = kubelet_spec(KubeletConfiguration.from_wire(kubelet))
    assert spec is not None
    return spec


def boot_with(kubelet: KubeletSpec) -> Bootstrap:
    return Bootstrap(
        cluster_name="prod", endpoint="https://api.example", ca_bundle="Q0E=", dns_ip="10.100.0.10",
        labels={"karpenter.sh/provisioner-name": "default", "team": "a"},
        taints=(Taint("dedicated", "a", "NoSchedule"),), kubelet=kubelet, max_pods=kubelet.max_pods,
    )  # fmt: skip


def kubelet_flags(family: str, boot: Bootstrap) -> list[str]:
    """The flags the node's kubelet starts with, read back from the rendered user data."""
    text = user_data(family, boot, None)
    if family == "Bottlerocket":
        k8s = tomllib.loads(text)["settings"]["kubernetes"]
        flags = []
        for key, value in k8s.items():
            flag = BOTTLEROCKET_FLAGS.get(key)
            if flag is None:
                continue
            if key == "node-taints":
                value = ",".join(f"{k}={v}" for k, vs in value.items() for v in vs)
            elif isinstance(value, dict):
                value = ",".join(f"{k}{BOTTLEROCKET_JOIN.get(key, '=')}{v}" for k, v in value.items())
            elif isinstance(value, bool):
                value = "true" if value else "false"
            flags.append(f"{flag}={value}")
        return flags
    script = str(next(p.get_payload() for p in email.message_from_string(text).walk() if not p.is_multipart()))
    extra = re.search(r"--kubelet-extra-args '([^']*)'", script)
    flags = extra.group(1).split(" ") if extra else []
    dns = re.search(r"--dns-cluster-ip '([^']*)'", script)
    if dns:  # bootstrap.sh writes it as the kubelet's clusterDNS
        flags.append(f"--cluster-dns={dns.group(1)}")
    return flags


def test_seed_004_reference_reaches_every_family_and_the_kubelet_accepts_it() -> None:
    kubelet = spec_of(seed_kubelet())
    boot = boot_with(kubelet)
    al2 = kubelet_flags("AL2", boot)
    for flag in ("--max-pods=20", "--pods-per-core=2", "--system-reserved=cpu=100m,ephemeral-storage=1Gi,memory=100Mi",
                 "--kube-reserved=cpu=200m,ephemeral-storage=3Gi,memory=100Mi",
                 "--eviction-hard=memory.available<5%,nodefs.available<10%,nodefs.inodesFree<10%",
                 "--eviction-soft=memory.available<500Mi,nodefs.available<15%,nodefs.inodesFree<15%",
                 "--eviction-soft-grace-period=memory.available=1m0s,nodefs.available=1m30s,nodefs.inodesFree=2m0s",
                 "--eviction-max-pod-grace-period=180", "--cluster-dns=10.0.1.100"):  # fmt: skip
        assert flag in al2, flag
    assert "--container-runtime containerd" in user_data("AL2", boot, None)
    br = tomllib.loads(user_data("Bottlerocket", boot, None))["settings"]["kubernetes"]
    assert br["cluster-dns-ip"] == "10.0.1.100" and br["max-pods"] == 20
    assert br["eviction-soft-grace-period"] == {"memory.available": "1m0s", "nodefs.available": "1m30s",
                                                "nodefs.inodesFree": "2m0s"}  # fmt: skip
    assert br["eviction-soft"]["memory.available"] == "500Mi" and br["eviction-max-pod-grace-period"] == 180
    assert user_data("Custom", boot, "my own\n") == "my own\n"  # Custom: untouched
    results = kubeletcheck.check({f: kubelet_flags(f, boot) for f in FAMILIES})
    assert results == {f: "" for f in FAMILIES}


GRID: dict[str, dict[str, Any]] = {
    "clusterDNS": {"clusterDNS": ["10.0.1.100"]},
    "containerRuntime": {"containerRuntime": "containerd"},
    "maxPods": {"maxPods": 58},
    "podsPerCore": {"podsPerCore": 4},
    "systemReserved": {"systemReserved": {"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "2Gi"}},
    "kubeReserved": {"kubeReserved": {"cpu": "1", "memory": "512Mi", "ephemeral-storage": "1Gi"}},
    "evictionHard": {"evictionHard": {"memory.available": "200Mi", "nodefs.available": "5%",
                                      "nodefs.inodesFree": "5%", "imagefs.available": "10%"}},
    "evictionSoft": {"evictionSoft": {"memory.available": "1Gi", "imagefs.inodesFree": "10%"},
                     "evictionSoftGracePeriod": {"memory.available": "90s", "imagefs.inodesFree": "1h"}},
    "evictionMaxPodGracePeriod": {"evictionSoft": {"memory.available": "1Gi"},
                                  "evictionSoftGracePeriod": {"memory.available": "30s"},
                                  "evictionMaxPodGracePeriod": 60},
    "imageGC": {"imageGCHighThresholdPercent": 90, "imageGCLowThresholdPercent": 60},
    "imageGCHighOnly": {"imageGCHighThresholdPercent": 95},
    "cpuCFSQuota": {"cpuCFSQuota": False},
}  # fmt: skip


def test_every_kubelet_field_on_every_family_is_a_configuration_the_kubelet_accepts() -> None:
    cases: dict[str, list[str]] = {}
    for name, kubelet in GRID.items():
        assert validate_provisioner(provisioner_with(kubelet)) == [], name
        boot = boot_with(spec_of(kubelet))
        for family in FAMILIES:
            cases[f"{name}/{family}"] = kubelet_flags(family, boot)
    assert kubeletcheck.check(cases) == {name: "" for name in cases}
    # and each field reached the node: its flag is in every AL2/Ubuntu set
    for name, flag in (("cpuCFSQuota", "--cpu-cfs-quota=false"), ("imageGC", "--image-gc-low-threshold=60"),
                       ("evictionMaxPodGracePeriod", "--eviction-max-pod-grace-period=60"),
                       ("clusterDNS", "--cluster-dns=10.0.1.100"), ("podsPerCore", "--pods-per-core=4")):  # fmt: skip
        assert flag in cases[f"{name}/AL2"] and flag in cases[f"{name}/Ubuntu"], name


def provisioner_with(kubelet: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "p"},
            "spec": {"kubeletConfiguration": kubelet}}  # fmt: skip


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "soft threshold without its grace period": (
        {"evictionSoft": {"memory.available": "500Mi"}}, "spec.kubeletConfiguration.evictionSoft"),
    "image GC low above the kubelet's default high (85)": (
        {"imageGCLowThresholdPercent": 90}, "spec.kubeletConfiguration.imageGCLowThresholdPercent"),
    "image GC high equal to low": (
        {"imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 70},
        "spec.kubeletConfiguration.imageGCLowThresholdPercent"),
    "image GC high below the kubelet's default low (80)": (
        {"imageGCHighThresholdPercent": 75}, "spec.kubeletConfiguration.imageGCHighThresholdPercent"),
    "negative hard threshold": (
        {"evictionHard": {"memory.available": "-1Mi"}}, 'spec.kubeletConfiguration.evictionHard["memory.available"]'),
    "percentage above 100": (
        {"evictionHard": {"nodefs.available": "150%"}}, 'spec.kubeletConfiguration.evictionHard["nodefs.available"]'),
    "negative pods per core": ({"podsPerCore": -1}, "spec.kubeletConfiguration.podsPerCore"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_the_kubelet_refuses_admission_refuses_naming_the_field(case: str) -> None:
    kubelet, field = REFUSED[case]
    raw = dict(kubelet)
    spec = KubeletSpec(
        eviction_soft=raw.get("evictionSoft", {}),
        eviction_hard=raw.get("evictionHard", {}),
        image_gc_high_threshold_percent=raw.get("imageGCHighThresholdPercent"),
        image_gc_low_threshold_percent=raw.get("imageGCLowThresholdPercent"),
        pods_per_core=raw.get("podsPerCore"),
    )  # rendered directly: what would reach the node if admission let it through
    refused = kubeletcheck.check({f: kubelet_flags(f, boot_with(spec)) for f in ("AL2", "Bottlerocket")})
    assert refused["AL2"], f"the kubelet accepts {case}: the table is wrong"
    errors = validate_provisioner(provisioner_with(kubelet))
    assert any(field in e.paths for e in errors), [e.render() for e in errors]
