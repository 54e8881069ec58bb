"""Dashboard render time on a large cluster (`make bench`): 2,000 nodes and 30,000 pods.

The webapp keeps the cluster in a watch-fed `ClusterState`; a page request takes one snapshot,
builds the page's data and renders the template. Here the state is fed once with 2,000 nodes
(three provisioners, four zones, spot and on-demand, 100 unmanaged) and 30,000 pods (28,500
bound, 1,500 pending, a DaemonSet pod per node included), the controller's answers (a price and
an outlook per node, a reason per pending pod, 500 decisions) are canned, and every page is
requested through Flask's test client: the figure is the server-side time of the whole request
(snapshot + data + render), median and worst of the repeats, and the page size.

    python -m bench.dashboard [--nodes 2000] [--pods 30000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from controller.clock import FakeClock
from controller.core import labels as L
from controller.kube.resources import WATCHED
from controller.state.cluster import ClusterState
from webapp import create_app
from webapp.dashboard.source import ControllerAnswers, DashboardInputs, Sample

NOW = 1_704_067_200.0 + 3600
TYPES = [("m5.large", 2, "8Gi", 0.096), ("m5.xlarge", 4, "16Gi", 0.192), ("c5.2xlarge", 8, "16Gi", 0.34)]
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
CREATED = "2024-01-01T00:00:00Z"
KEPT = {"verdict": "kept", "reason": "not consolidated: can't replace with a cheaper node"}
LIMITED = "provisioner 'general' limits would be exceeded (cpu: 0 of 4000 left)"
PAGES = ["/", "/nodes", "/nodes?sort=pricePerHour&order=desc&capacityType=spot", "/nodes/node-00042",
         "/provisioners", "/provisioners/general", "/pods/pending", "/decisions", "/api/v1/nodes"]  # fmt: skip


def _node(i: int) -> dict[str, Any]:
    name, (itype, cpu, memory, _) = f"node-{i:05d}", TYPES[i % len(TYPES)]
    labels = {L.INSTANCE_TYPE: itype, L.ZONE: ZONES[i % 4], L.ARCH: "amd64", L.HOSTNAME: name}
    if i >= 100:
        labels.update({L.PROVISIONER_NAME: ("general", "batch", "spot")[i % 3],
                       L.CAPACITY_TYPE: "spot" if i % 2 else "on-demand"})  # fmt: skip
    resources = {"cpu": str(cpu), "memory": memory, "pods": "58"}
    return {
        "metadata": {"name": name, "labels": labels, "resourceVersion": "1", "creationTimestamp": CREATED},
        "spec": {"providerID": f"aws:///{ZONES[i % 4]}/i-{i:017x}"},
        "status": {"capacity": resources, "allocatable": resources,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:01:00Z"}]},
    }  # fmt: skip


def _pod(i: int, node: str, daemon: bool = False) -> dict[str, Any]:
    owner = {"kind": "DaemonSet", "name": "agent"} if daemon else {"kind": "ReplicaSet", "name": f"app-{i % 300}"}
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if not node:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {
        "metadata": {"name": f"pod-{i:06d}", "namespace": f"ns-{i % 20}", "uid": f"u{i}", "resourceVersion": "1",
                     "labels": {"app": f"app-{i % 300}"}, "creationTimestamp": "2024-01-01T00:30:00Z",
                     "ownerReferences": [{**owner, "apiVersion": "apps/v1", "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
        "status": status,
    }  # fmt: skip


def _provisioner(name: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner",
            "metadata": {"name": name, "resourceVersion": "1"},
            "spec": {"limits": {"resources": {"cpu": "4000"}}, "consolidation": {"enabled": True}}}  # fmt: skip


class StaticSource:
    """The webapp's source over a pre-fed state (as the informers leave it) and canned answers."""

    def __init__(self, nodes: int, pods: int) -> None:
        self.state = ClusterState(FakeClock(NOW))
        node_objs = [_node(i) for i in range(nodes)]
        pending = pods // 20
        pod_objs = [_pod(i, "", False) for i in range(pending)]
        pod_objs += [_pod(i, f"node-{i % nodes:05d}", i < pending + nodes) for i in range(pending, pods)]
        provisioners = [_provisioner(n) for n in ("general", "batch", "spot")]
        objects = {"nodes": node_objs, "pods": pod_objs, "provisioners": provisioners}
        for kind in WATCHED:
            self.state.replace(kind.name, objects.get(kind.name, []))
        price = {t[0]: t[3] for t in TYPES}
        answers_nodes = {
            n["metadata"]["name"]: {"pricePerHour": price[n["metadata"]["labels"][L.INSTANCE_TYPE]], "outlook": KEPT}
            for n in node_objs if L.PROVISIONER_NAME in n["metadata"]["labels"]
        }  # fmt: skip
        reasons = {f"ns-{i % 20}/pod-{i:06d}": {"reason": LIMITED, "action": "unschedulable", "time": CREATED}
                   for i in range(pending)}  # fmt: skip
        decisions = tuple({"controller": "provisioning", "action": "launched", "subject": f"node/node-{i:05d}",
                           "reason": "pods did not fit on existing nodes", "pods": [f"ns-1/pod-{i:06d}"],
                           "price": 0.096, "time": CREATED} for i in range(500))  # fmt: skip
        self.answers = ControllerAnswers("", answers_nodes, reasons, decisions)
        self.history = tuple(Sample(NOW - 3600 + 15 * k, nodes, 250.0) for k in range(240))

    def read(self) -> DashboardInputs:
        return DashboardInputs(self.state.snapshot(), self.answers, self.history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    source = StaticSource(args.nodes, args.pods)
    print(f"dashboard: {args.nodes} nodes, {args.pods} pods (state fed in {time.perf_counter() - started:.1f}s)")
    client = create_app(dashboard_source=source).test_client()
    client.get("/")  # template compilation and first snapshot views, as after a webapp start
    print(f"{'page':58} {'median ms':>10} {'worst ms':>9} {'KiB':>7}")
    for path in PAGES:
        times, size = [], 0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            resp = client.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            assert resp.status_code == 200, (path, resp.status_code)
            size = len(resp.data)
        print(f"{path:58} {statistics.median(times):10.0f} {max(times):9.0f} {size / 1024:7.0f}")


if __name__ == "__main__":
    main()
