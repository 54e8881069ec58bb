"""`karpy simulate` end to end on the seed 004 provisioners, and `karpy catalog`.

Runs `python -m karpy` in a subprocess, as a user would. The provisioners are
seed 004's examples: the full reference `default` (weight 10, a taint, a startup taint, zones
us-west-2a/b, 4–32 vCPU nitro c/m/r, spot or on-demand, kubelet settings, limits) without its
`ttlSecondsAfterEmpty` — the webhook rejects it next to `consolidation.enabled` — plus `gpu`
(p3.8xlarge/p3.16xlarge, tainted nvidia.com/gpu) and `cilium-startup` (a startup taint).

Walk-through a reviewer can check by hand (queue = cpu, then memory, descending):
1. trainer (8 cpu, 4 GPUs, tolerates the GPU taint) → new `gpu-1`, p3.8xlarge on-demand: the only
   provisioner with GPUs, and the cheaper of its two types;
2. web-0, web-1 (1 cpu, tolerate the default taint) → existing node ip-10-0-0-1 (3700m allocatable,
   1 cpu used by cache-0, 100m reserved for the node-agent daemonset → 2600m free);
3. web-2 → no room left there (600m) → new `default-1` (weight 10 comes first);
4. batch-0, batch-1 (500m, select provisioner cilium-startup) → new `cilium-startup-1`;
5. api-0 (500m, zone spread maxSkew 1) → the existing node in us-west-2a;
6. api-1 → us-west-2a already has one api pod, so it joins default-1, which becomes us-west-2b;
7. plain (250m, tolerates nothing) → not default (taint) nor gpu → the in-flight cilium-startup-1;
8. wants-gpu (1 GPU, no toleration) → unschedulable: only gpu has GPUs, and its taint is not tolerated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.cloudprovider.simulated.catalog import simulated_catalog
from karpy.cli import main
from tests.builders.wire import badly_packed
from tests.support.moto import MotoServer
from tests.support.seeds import provisioner_documents

REPO = Path(__file__).resolve().parents[2]
SPECIAL = {"key": "example.com/special-taint", "operator": "Exists"}


def karpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "karpy", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def seed_provisioners() -> list[dict[str, Any]]:
    docs = dict(provisioner_documents())
    default = docs["004-block0-Provisioner-default"]
    default["spec"].pop("ttlSecondsAfterEmpty")
    return [default, docs["004-block9-Provisioner-gpu"], docs["004-block10-Provisioner-cilium-startup"]]


def container(cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {"name": "main", "image": "busybox", "resources": resources}


def workloads() -> list[dict[str, Any]]:
    def deployment(name: str, replicas: int, pod_spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}},
        }

    spread = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": {"app": "api"}}}  # fmt: skip
    return [
        deployment("web", 3, {"containers": [container("1", "2Gi")], "tolerations": [SPECIAL]}),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "ml"},
         "spec": {"containers": [container("8", "32Gi", gpus=4)],
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wants-gpu", "namespace": "ml"},
         "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "namespace": "jobs"},
         "spec": {"parallelism": 2, "template": {"spec": {
             "nodeSelector": {"karpenter.sh/provisioner-name": "cilium-startup"},
             "containers": [container("500m", "512Mi")], "restartPolicy": "Never"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
         "spec": {"containers": [container("250m", "256Mi")]}},
        deployment("api", 2, {"containers": [container("500m", "512Mi")], "tolerations": [SPECIAL],
                              "topologySpreadConstraints": [spread]}),
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "node-agent", "namespace": "kube-system"},
         "spec": {"template": {"spec": {"containers": [container("100m", "128Mi")],
                                        "tolerations": [{"operator": "Exists"}]}}}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cache-0", "namespace": "shop"},
         "spec": {"nodeName": "ip-10-0-0-1", "containers": [container("1", "2Gi")], "tolerations": [SPECIAL]}},
    ]  # fmt: skip


def existing_node() -> dict[str, Any]:
    labels = {
        "karpenter.sh/provisioner-name": "default",
        "karpenter.sh/initialized": "true",
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": "m6g.xlarge",
        "topology.kubernetes.io/zone": "us-west-2a",
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": "ip-10-0-0-1",
        "billing-team": "my-team",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-0-1", "labels": labels, "creationTimestamp": "2023-05-01T00:00:00Z"},
        "spec": {"taints": [{"key": "example.com/special-taint", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4", "memory": "15155Mi", "pods": "8"},
                   "allocatable": {"cpu": "3700m", "memory": "14Gi", "pods": "8"}},
    }  # fmt: skip


def files(tmp_path: Path) -> list[str]:
    paths = {"provisioners": seed_provisioners(), "pods": workloads(), "nodes": [existing_node()]}
    args = []
    for name, docs in paths.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
        args += [f"--{name}", str(tmp_path / f"{name}.yaml")]
    return args


def cheapest_spot_4_vcpu_in_zone_b() -> str:
    """default-1's type by the rules: spot, us-west-2b, 4 vCPU (the pods need 1.5 cpu), nitro c/m/r."""
    offers = []
    for it in simulated_catalog():
        labels = it.labels
        if (
            labels["karpenter.k8s.aws/instance-cpu"] != "4"
            or labels.get("karpenter.k8s.aws/instance-hypervisor") != "nitro"
        ):
            continue
        if labels["karpenter.k8s.aws/instance-category"] not in ("c", "m", "r"):
            continue
        offers += [(o.price, it.name) for o in it.offerings if o.zone == "us-west-2b" and o.capacity_type == "spot"]
    return min(offers)[1]


def test_simulate_on_the_seed_provisioners(tmp_path: Path) -> None:
    run = karpy("simulate", *files(tmp_path), "--output", "json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    nodes = {n["name"]: n for n in out["nodes"]}
    assert sorted(nodes) == ["cilium-startup-1", "default-1", "gpu-1"]

    gpu = nodes["gpu-1"]
    assert (gpu["provisioner"], gpu["instanceType"], gpu["capacityType"]) == ("gpu", "p3.8xlarge", "on-demand")
    assert gpu["pods"] == ["ml/trainer"]
    assert gpu["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]

    default = nodes["default-1"]
    assert default["pods"] == ["shop/web-2", "shop/api-1"]
    assert (default["capacityType"], default["zone"]) == ("spot", "us-west-2b")
    assert default["instanceType"] == cheapest_spot_4_vcpu_in_zone_b()
    assert default["labels"]["billing-team"] == "my-team"
    assert default["taints"] == [
        {"key": "example.com/special-taint", "effect": "NoSchedule"},
        {"key": "example.com/another-taint", "effect": "NoSchedule"},
    ]
    # the seed's kubeletConfiguration: maxPods 20, podsPerCore 2 → 8 pods; 300m cpu reserved
    assert default["allocatable"]["pods"] == "8" and default["allocatable"]["cpu"] == "3700m"

    cilium = nodes["cilium-startup-1"]
    assert cilium["pods"] == ["jobs/batch-0", "jobs/batch-1", "default/plain"]
    assert cilium["taints"] == [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
    assert cilium["capacityType"] == "on-demand" and cilium["labels"]["kubernetes.io/arch"] == "amd64"

    assert out["existingNodes"] == [{"name": "ip-10-0-0-1", "pods": ["shop/web-0", "shop/web-1", "shop/api-0"]}]
    assert out["unschedulable"] == [
        {"pod": "ml/wants-gpu", "reason": "provisioner 'gpu' has taint nvidia.com/gpu=true:NoSchedule not tolerated"}
    ]
    assert out["totalPricePerHour"] == round(sum(n["pricePerHour"] for n in out["nodes"]), 4)


def test_table_output(tmp_path: Path) -> None:
    run = karpy("simulate", *files(tmp_path), "--output", "table")
    assert run.returncode == 0, run.stderr
    assert "gpu-1" in run.stdout and "p3.8xlarge" in run.stdout
    assert "ml/wants-gpu" in run.stdout


def test_invalid_inputs_exit_2_with_a_message(tmp_path: Path) -> None:
    bad = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "bad"},
           "spec": {"weight": 1000}}  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(bad))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}))
    run = karpy("simulate", "--provisioners", str(tmp_path / "p.yaml"), "--pods", str(tmp_path / "pods.yaml"))
    assert run.returncode == 2
    assert "document 1 (Provisioner bad)" in run.stderr and "spec.weight" in run.stderr
    assert "Traceback" not in run.stderr


def test_catalog_json_is_what_simulate_reads(tmp_path: Path) -> None:
    run = karpy("catalog", "--output", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert len(doc["instanceTypes"]) >= 400
    small = {"instanceTypes": [e for e in doc["instanceTypes"] if e["name"] == "c5.large"]}
    (tmp_path / "catalog.json").write_text(json.dumps(small))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(seed_provisioners()[2]))
    pods = [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container("1", "1Gi")]}}]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    sim = karpy("simulate", "--provisioners", str(tmp_path / "p.yaml"), "--pods", str(tmp_path / "pods.yaml"),
                "--catalog", str(tmp_path / "catalog.json"), "--output", "json")  # fmt: skip
    assert sim.returncode == 0, sim.stderr
    assert json.loads(sim.stdout)["nodes"][0]["instanceType"] == "c5.large"
    no_region = karpy("catalog", "--provider", "aws")
    assert no_region.returncode == 2 and "--region is required" in no_region.stderr


def test_aws_catalog_from_moto(moto_server: MotoServer, tmp_path: Path) -> None:
    run = karpy("catalog", "--provider", "aws", "--region", "us-east-1", "--endpoint-url", moto_server.url,
                "--output", "json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    m5 = next(e for e in doc["instanceTypes"] if e["name"] == "m5.large")
    assert m5["capacity"]["pods"] == "29" and m5["allocatable"]["cpu"] == "1930m"
    assert {o["price"] for o in m5["offerings"] if o["capacityType"] == "on-demand"} == {0.096}
    assert m5["labels"]["karpenter.k8s.aws/instance-family"] == "m5"
    bad = tmp_path / "prices.json"
    bad.write_text('{"onDemand": {"us-east-1": {"m5.large": "cheap"}}}')
    refused = karpy("catalog", "--provider", "aws", "--region", "us-east-1", "--endpoint-url", moto_server.url,
                    "--price-file", str(bad))  # fmt: skip
    assert refused.returncode == 2 and "onDemand.us-east-1.m5.large: not a price" in refused.stderr


def test_simulate_places_pods_where_their_volumes_are(tmp_path: Path) -> None:
    """A StatefulSet whose claim templates use a WaitForFirstConsumer class limited to us-west-2c,
    a pod whose claim is bound to a volume in us-west-2b, and a pod whose claim is missing."""
    provisioner = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "default"},
                   "spec": {"requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                              "values": ["us-west-2a", "us-west-2b", "us-west-2c"]}]}}  # fmt: skip
    zone_c = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["us-west-2c"]}]}]
    gp3 = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
           "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
           "allowedTopologies": zone_c}  # fmt: skip
    template = {"metadata": {"name": "data"},
                "spec": {"storageClassName": "gp3", "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                   "spec": {"replicas": 2, "volumeClaimTemplates": [template],
                            "template": {"metadata": {"labels": {"app": "db"}},
                                         "spec": {"containers": [container("1", "1Gi")]}}}}  # fmt: skip
    in_b = {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["us-west-2b"]}
    ebs_zone_b = {"matchExpressions": [in_b]}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "logs"},
             "spec": {"storageClassName": "gp3", "volumeName": "pv-logs", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-logs"},
              "spec": {"storageClassName": "gp3", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "claimRef": {"namespace": "default", "name": "logs"},
                       "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [ebs_zone_b]}}}}  # fmt: skip

    def mounting(name: str, claim_name: str) -> dict[str, Any]:
        volumes = [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [container("1", "1Gi")], "volumes": volumes}}  # fmt: skip

    provisioners = tmp_path / "provisioners.yaml"
    provisioners.write_text(yaml.safe_dump(provisioner))
    pods = tmp_path / "pods.yaml"
    docs = [gp3, statefulset, claim, volume, mounting("logger", "logs"), mounting("orphan", "nowhere")]
    pods.write_text(yaml.safe_dump_all(docs))
    proc = karpy("simulate", "--provisioners", str(provisioners), "--pods", str(pods), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    zone_of = {pod: node["zone"] for node in out["nodes"] for pod in node["pods"]}
    assert zone_of["default/db-0"] == zone_of["default/db-1"] == "us-west-2c"
    assert zone_of["default/logger"] == "us-west-2b"
    assert out["unschedulable"] == [
        {"pod": "default/orphan", "reason": "persistentvolumeclaim default/nowhere not found"}
    ]


def test_from_cluster_reads_a_saved_dump_and_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = badly_packed()
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects["nodes"] + objects["pods"]}))
    assert main(["simulate", "--from-cluster", "--dump", str(dump), "--output", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["before"]["nodes"] == 4 and plan["after"]["pricePerHour"] < plan["before"]["pricePerHour"]
    assert main(["simulate", "--from-cluster", "--dump", str(dump)]) == 0
    text = capsys.readouterr().out
    assert "multinodeconsolidation" in text and "saving $" in text and "ng-0" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["simulate", "--from-cluster", "--dump", "/nonexistent.json"], "cannot read /nonexistent.json"),
        (["simulate", "--dump", "x.json"], "--dump and --kubeconfig go with --from-cluster"),
        (["simulate", "--pods", "x.yaml"], "--provisioners and --pods are required"),
    ],
)
def test_from_cluster_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_neuron_pods_get_the_cheapest_neuron_type_and_others_never_one(tmp_path: Path) -> None:
    """Neuron (`aws.amazon.com/neuron`) in the simulated catalog, scheduled end to end."""
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        # without one, Karpenter's defaulting keeps categories c, m, r (so no GPU nor Neuron type)
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m", "inf", "trn"]},
    ]
    provisioner = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "default"},
                   "spec": {"requirements": requirements}}  # fmt: skip

    def pod(name: str, limits: dict[str, str]) -> dict[str, Any]:
        resources = {"requests": {"cpu": "1"}, "limits": limits}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
                "spec": {"containers": [{"name": "main", "resources": resources}]}}  # fmt: skip

    def plan(*pods: dict[str, Any]) -> dict[str, str]:
        (tmp_path / "p.yaml").write_text(yaml.safe_dump(provisioner))
        (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
        done = karpy("simulate", "--provisioners", str(tmp_path / "p.yaml"), "--pods", str(tmp_path / "pods.yaml"),
                     "--output", "json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["unschedulable"] == []
        return {p: n["instanceType"] for n in out["nodes"] for p in n["pods"]}

    assert plan(pod("infer", {"aws.amazon.com/neuron": "1"})) == {"ml/infer": "inf1.xlarge"}  # cheapest with one
    where = plan(pod("infer", {"aws.amazon.com/neuron": "1"}), pod("big-infer", {"aws.amazon.com/neuron": "6"}))
    # seven devices in all: one inf1.24xlarge (16, $5.68/h) is cheaper than inf2.24xlarge + inf1.xlarge
    assert where["ml/infer"] == where["ml/big-infer"] == "inf1.24xlarge"
    assert not plan(pod("web", {}))["ml/web"].startswith(("inf", "trn"))  # exotic only when nothing else fits


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2", "sa-east-1"])
def test_aws_catalog_is_priced_in_every_commercial_region_without_the_pricing_api(
    moto_server: MotoServer, region: str
) -> None:
    """The committed price file prices the offerings of any commercial region (issue 19, part 6)."""
    from controller.cloudprovider.aws.pricing import read_price_file

    file = read_price_file()
    run = karpy("catalog", "--provider", "aws", "--region", region, "--endpoint-url", moto_server.url,
                "--isolated-vpc", "--output", "json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    types = json.loads(run.stdout)["instanceTypes"]
    m5 = next(e for e in types if e["name"] == "m5.large")
    on_demand = [o for o in m5["offerings"] if o["capacityType"] == "on-demand"]
    assert on_demand and all(o["zone"].startswith(region) for o in on_demand)
    assert {o["price"] for o in on_demand} == {file["onDemand"][region]["m5.large"]}
    priced = {
        e["name"] for e in types if any(o["available"] and o["capacityType"] == "on-demand" for o in e["offerings"])
    }
    assert len(priced) > 150 and priced <= set(file["onDemand"][region])
    date = file["regions"][region]["date"]
    assert f"from the price file, dated {date}" in run.stderr and "ec2-instances-info" in run.stderr
