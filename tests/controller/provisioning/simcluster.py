"""An in-process cluster for batch-to-batch provisioning tests: karpy's real controller, a fake
kube-scheduler racing it, kwok-like readiness, arrivals at any moment, and controller restarts.

- `FakeKube` plays the apiserver and logs every write in resourceVersion order.
- `kube_scheduler()` binds each pending pod to the first node kube-scheduler would accept (the
  independent checker's own filter, `tests/support/placement.py`), skipping cordoned and deleting
  nodes, and marks the rest `PodScheduled=False/Unschedulable` — as kube-scheduler does.
- `Hooks` fire inside karpy's reconcile, right before each cloud `create` and each `bind`: they
  may run kube-scheduler, make pods arrive, or deliver the watch (re-sync cluster state), so
  karpy's plan goes stale the way it does on a real cluster.
- `with_daemonset=True` adds a DaemonSet whose pods kwok() places on every node (they tolerate
  everything, as DaemonSet pods do, so they land on held nodes too); `startup_taint=True` gives
  the Provisioner a startup taint that kwok() removes one pass after the node turns Ready, as the
  agent it waits for would.
- `webhook=True` creates pods as karpy's pod webhook admits them (zonal-spread pods gated with
  `karpy.sh/topology-spread`); the fake kube-scheduler leaves gated pods alone.
- `violations()` replays the write log through the checker.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.apis.podgate import gate_patch
from controller.clock import FakeClock
from controller.cloudprovider.base import Instance, NodeRequest
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core.timestamps import format_timestamp
from controller.decisions import DecisionLog
from controller.events import EventRecorder
from controller.kube.resources import DAEMONSETS, NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.controller import ProvisioningController, ProvisioningSettings
from controller.state.cluster import ClusterState
from tests.builders.wire import make_pod, make_provisioner
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube
from tests.support import placement

TYPES = tuple(it for it in simulated_catalog() if it.name in {"c6a.large", "m6a.large", "c6a.xlarge", "m6a.xlarge"})
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")


@dataclass
class Hooks:
    """What may happen while karpy is mid-reconcile (each a callable run at that moment)."""

    before_create: list[Callable[[], object]] = field(default_factory=list)
    before_bind: list[Callable[[], object]] = field(default_factory=list)


class HookedCloud(FakeCloudProvider):
    def __init__(self, hooks: Hooks, clock: FakeClock) -> None:
        super().__init__(TYPES, clock)
        self.hooks = hooks

    def create(self, request: NodeRequest) -> Instance:
        while self.hooks.before_create:
            self.hooks.before_create.pop(0)()
        return super().create(request)


class HookedKube(FakeKube):
    def __init__(self, hooks: Hooks, clock: FakeClock) -> None:
        super().__init__(clock)
        self.hooks = hooks

    def bind(self, namespace: str, pod: str, node: str) -> None:
        while self.hooks.before_bind:
            self.hooks.before_bind.pop(0)()
        super().bind(namespace, pod, node)


STARTUP_TAINT = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}
DAEMON_REQUESTS = {"cpu": "200m", "memory": "128Mi"}


class SimCluster:
    def __init__(
        self, with_daemonset: bool = False, startup_taint: bool = False, webhook: bool = False, **provisioner: Any
    ) -> None:
        self.webhook = webhook
        self.clock = FakeClock()
        self.hooks = Hooks()
        self.kube = HookedKube(self.hooks, self.clock)
        self.cloud = HookedCloud(self.hooks, self.clock)
        if startup_taint:
            provisioner["startupTaints"] = [STARTUP_TAINT]
        self.kube.put(PROVISIONERS, make_provisioner("default", **provisioner))
        self.with_daemonset = with_daemonset
        if with_daemonset:
            template = {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "a", "image": "x", "resources": {"requests": DAEMON_REQUESTS}}]}}  # fmt: skip
            self.kube.put(DAEMONSETS, {"apiVersion": "apps/v1", "kind": "DaemonSet",
                                       "metadata": {"name": "agent", "namespace": "kube-system"},
                                       "spec": {"template": template}})  # fmt: skip
        self._seq = 0
        self._ready_seen: set[str] = set()
        self.restart()

    # karpy -----------------------------------------------------------------------------------

    def restart(self) -> None:
        """A new controller process: empty state and memory, the same apiserver and cloud."""
        self.state = ClusterState(self.clock)
        self.controller = ProvisioningController(
            self.state, self.kube, self.cloud, self.clock, EventRecorder(self.kube, self.clock),
            DecisionLog(self.clock), ProvisioningSettings(bind_workers=1),
        )  # fmt: skip

    def sync(self) -> None:
        """The watch catches up: cluster state sees every object as the apiserver has it."""
        for kind in WATCHED:
            self.state.replace(kind.name, copy.deepcopy(self.kube.items(kind)))

    def batch(self) -> None:
        """One provisioning window: pods seen, window closes, karpy schedules, launches, binds."""
        self.kwok()
        self.sync()
        self.controller.reconcile()
        self.clock.step(11.0)
        self.sync()
        self.controller.reconcile()
        self.kwok()

    # the rest of the cluster -----------------------------------------------------------------

    def add_pod(self, app: str, cpu: str = "500m", memory: str = "512Mi", **spec: Any) -> str:
        self._seq += 1
        name = f"{app}-{self._seq}"
        pod = make_pod(name, cpu=cpu, memory=memory, labels={"app": app}, pending=False, **spec)
        pod["metadata"]["creationTimestamp"] = format_timestamp(self.clock.now())
        if self.webhook:  # karpy's pod webhook, as the apiserver would call it
            for op in gate_patch(pod):
                pod["spec"].setdefault("schedulingGates", [])
                pod["spec"]["schedulingGates"] += op["value"] if isinstance(op["value"], list) else [op["value"]]
        self.kube.put(PODS, pod)
        return name

    def kwok(self) -> None:
        """Nodes turn Ready (kwok's part); the DaemonSet's pods arrive; a Ready node's startup
        taint is removed one pass later (the agent's part)."""
        for node in self.kube.items(NODES):
            name = node["metadata"]["name"]
            status = node.setdefault("status", {})
            if not any(c.get("type") == "Ready" for c in status.get("conditions") or []):
                status["conditions"] = [{"type": "Ready", "status": "True"}]
                self.kube.put(NODES, node)
            elif name in self._ready_seen and any(
                t["key"] == STARTUP_TAINT["key"] for t in node["spec"].get("taints", [])
            ):
                node["spec"]["taints"] = [t for t in node["spec"]["taints"] if t["key"] != STARTUP_TAINT["key"]]
                self.kube.put(NODES, node)
            else:
                self._ready_seen.add(name)
            if self.with_daemonset:
                self._daemon_pod(name)

    def _daemon_pod(self, node: str) -> None:
        if any(p["spec"].get("nodeName") == node and p["metadata"]["labels"].get("app") == "agent"
               for p in self.kube.items(PODS)):  # fmt: skip
            return
        pod = make_pod(f"agent-{node}", namespace="kube-system", labels={"app": "agent"}, pending=False,
                       owner_kind="DaemonSet", tolerations=[{"operator": "Exists"}])  # fmt: skip
        pod["spec"]["containers"][0]["resources"]["requests"] = dict(DAEMON_REQUESTS)
        if not placement.placement_violations(pod, node, self.view(as_kube_scheduler=True)):
            pod["spec"]["nodeName"] = node
            self.kube.put(PODS, pod)

    def kube_scheduler(self) -> int:
        """One kube-scheduler pass over the pending pods; returns how many it bound."""
        bound = 0
        for pod in sorted(self.kube.items(PODS), key=lambda p: p["metadata"]["name"]):
            if pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            if pod["metadata"]["labels"].get("app") == "agent" or pod["spec"].get("schedulingGates"):
                continue  # a gated pod waits (kube-scheduler marks it SchedulingGated)
            view = self.view(as_kube_scheduler=True)
            for node in sorted(self.kube.items(NODES), key=lambda n: n["metadata"]["name"]):
                if node["spec"].get("unschedulable") or node["metadata"].get("deletionTimestamp"):
                    continue
                if not placement.placement_violations(pod, node["metadata"]["name"], view):
                    FakeKube.bind(self.kube, pod["metadata"]["namespace"], pod["metadata"]["name"],
                                  node["metadata"]["name"])  # fmt: skip
                    bound += 1
                    break
            else:
                conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
                if pod["status"].get("conditions") != conditions:
                    pod["status"]["conditions"] = conditions
                    self.kube.put(PODS, pod)
        return bound

    def view(self, as_kube_scheduler: bool = False) -> placement.ClusterView:
        return placement.ClusterView(
            {n["metadata"]["name"]: n for n in self.kube.items(NODES)},
            {placement.pod_key(p): p for p in self.kube.items(PODS)},
            as_kube_scheduler,
        )

    def violations(self) -> list[str]:
        events = [placement.Event(rv, kind, kind_type, obj) for rv, kind, kind_type, obj in self.kube.log
                  if kind in ("pods", "nodes")]  # fmt: skip
        return placement.replay(events)

    def pending(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.kube.items(PODS) if not p["spec"].get("nodeName"))
