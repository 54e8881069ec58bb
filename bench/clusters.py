"""Generated large clusters for the scale benchmarks (issue 21), as wire objects cluster state reads.

`consolidation_cluster(nodes, pods)`: one Provisioner (`default`, consolidation enabled), `nodes`
on-demand nodes of five simulated types in three zones, launched and initialized an hour ago, and
`pods` ReplicaSet pods of mixed shapes (160 apps) bound to them first-fit, each node filled up to
a random 35–75 % of its CPU (20 pods a node fill ~60 % on average) — a fleet after a scale-down,
which consolidation should shrink; optionally every pod with a zonal topology spread over its app.
`pending_pods(n, impossible)`: `n` pending pods of five shapes, the first `impossible` of which
never fit (1,000 CPUs, or a label no provisioner gives). Seeded (`random.Random(seed)`): the same
cluster every run.
"""

from __future__ import annotations

import random
import resource
from typing import Any

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.core.resources import format_resources
from controller.scheduling.types import InstanceType

Obj = dict[str, Any]
NODE_TYPES = ("m5.xlarge", "m5.2xlarge", "m5.4xlarge", "c5.4xlarge", "r5.2xlarge")
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
SHAPES = (("100m", 100, "128Mi"), ("250m", 250, "512Mi"), ("500m", 500, "1Gi"), ("1", 1000, "2Gi"),
          ("2", 2000, "4Gi"))  # fmt: skip
LAUNCHED = "2024-01-01T00:00:00Z"
NOW = 1_704_067_200.0 + 3600  # an hour after LAUNCHED


def rss_mib() -> float:
    """This process's resident memory now (MiB), from /proc."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def catalog() -> tuple[InstanceType, ...]:
    return simulated_catalog()


def provisioner(name: str = "default") -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "creationTimestamp": LAUNCHED},
        "spec": {"consolidation": {"enabled": True},
                 "requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]},
    }  # fmt: skip


def node(i: int, it: InstanceType) -> Obj:
    name, zone = f"node-{i:05d}", ZONES[i % len(ZONES)]
    labels = {
        L.PROVISIONER_NAME: "default", L.INSTANCE_TYPE: it.name, L.ZONE: zone, L.CAPACITY_TYPE: "on-demand",
        L.ARCH: "amd64", L.OS: "linux", L.HOSTNAME: name, L.INITIALIZED: "true",
    }  # fmt: skip
    return ready_node(name, it, labels)


def ready_node(name: str, it: InstanceType, labels: dict[str, str]) -> Obj:
    """A karpy-owned, initialized, Ready Node of type `it` with `labels`, launched at LAUNCHED."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels, "resourceVersion": "1",
                     "creationTimestamp": LAUNCHED, "finalizers": [L.TERMINATION_FINALIZER]},
        "spec": {"providerID": f"kwok://{name}"},
        "status": {"capacity": format_resources(it.capacity), "allocatable": format_resources(it.allocatable),
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": LAUNCHED}]},
    }  # fmt: skip


def pod(
    i: int, shape: int, node_name: str = "", node_selector: dict[str, str] | None = None, spread: bool = False
) -> Obj:
    cpu, _, memory = SHAPES[shape]
    spec: Obj = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    status: Obj = {"phase": "Running" if node_name else "Pending"}
    if node_name:
        spec["nodeName"] = node_name
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "lastTransitionTime": LAUNCHED}]  # fmt: skip
    if node_selector:
        spec["nodeSelector"] = node_selector
    owner = f"app-{shape}-{i % 40}"
    if spread:
        spec["topologySpreadConstraints"] = [{"topologyKey": L.ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": owner}}}]  # fmt: skip
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"pod-{i:06d}", "namespace": f"ns-{i % 10}", "uid": f"uid-pod-{i}", "resourceVersion": "1",
                     "labels": {"app": owner}, "creationTimestamp": LAUNCHED,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                          "uid": f"uid-{owner}", "controller": True}]},
        "spec": spec, "status": status,
    }  # fmt: skip


def consolidation_cluster(
    nodes: int, pods: int, seed: int = 42, fill: tuple[float, float] = (0.35, 0.75), spread: bool = False
) -> dict[str, list[Obj]]:
    """Wire objects by kind name: `nodes` nodes holding `pods` pods, each node filled up to a
    random fraction of its CPU within `fill` (fewer pods when every node reaches it first; see the
    module docstring); `spread`: every pod spread over zones with its app (DoNotSchedule, maxSkew 1)."""
    rng = random.Random(seed)
    types = {it.name: it for it in catalog()}
    node_objs, target = [], []
    for i in range(nodes):
        it = types[NODE_TYPES[i % len(NODE_TYPES)]]
        node_objs.append(node(i, it))
        target.append(int(it.allocatable.get("cpu", 0) * rng.uniform(*fill)))
    pod_objs, used, k = [], [0] * nodes, 0
    for i in range(pods):
        shape = rng.choice((0, 0, 0, 1, 1, 1, 2, 3))  # 319m on average: 20 pods a node fill ~60 %
        need = SHAPES[shape][1]
        for _ in range(nodes):  # next node with room under its fill target (first-fit, round robin)
            if used[k] + need <= target[k]:
                break
            k = (k + 1) % nodes
        else:
            break  # every node is at its target: fewer pods than asked
        used[k] += need
        pod_objs.append(pod(i, shape, node_objs[k]["metadata"]["name"], spread=spread))
        k = (k + 1) % nodes
    return {"nodes": node_objs, "pods": pod_objs, "provisioners": [provisioner()]}


def pending_pods(n: int, impossible: int, seed: int = 42) -> list[Obj]:
    """`n` pending pods; the first `impossible` never fit (half too big, half selecting a label no
    provisioner gives), the rest of five shapes."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i < impossible:
            big = pod(i, 4, node_selector=None if i % 2 else {"example.com/pool": f"p{i % 97}"})
            if i % 2:
                big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000"
            out.append(big)
        else:
            out.append(pod(i, rng.choice((0, 0, 1, 1, 2, 2, 3, 4))))
    return out
