"""User data per AMI family, and the launch template data (spec §5.9)."""

from __future__ import annotations

import base64
import email
import tomllib

import pytest

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.aws.amifamily import ephemeral_storage, node_shape
from controller.cloudprovider.aws.launchtemplates import launch_template_data, template_name
from controller.cloudprovider.aws.userdata import Bootstrap, user_data
from controller.core.taints import Taint
from controller.scheduling.types import KubeletSpec

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
