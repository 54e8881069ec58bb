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
  `karpy.sh/topology-spread`; `add_pod(gate=False)`: one the webhook failed open for); the fake
  kube-scheduler leaves gated pods alone.
- Volumes: `add_volume_pod()` makes a pod with a claim — bound to a volume in one zone, of a
  WaitForFirstConsumer class that provisions, or missing. kube_scheduler() honours volumes as
  kube-scheduler does (a bound volume's zone; a claim to bind gets its volume in the chosen node's
  zone, as the CSI provisioner makes it, before the pod is bound; a missing claim keeps the pod
  pending).
- `violations()` replays the write log through the checker, plus its volume rules on the final
  state (a pod karpy bound with a claim still to bind shows as a claim never Bound).
"""

from __future__ import annotations

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
from controller.kube.resources import (
    CLAIMS,
    DAEMONSETS,
    NODES,
    PODS,
    PROVISIONERS,
    STORAGECLASSES,
    VOLUMES,
)
from controller.provisioning.controller import ProvisioningController, ProvisioningSettings
from controller.state.cluster import ClusterState
from tests.builders.wire import make_pod, make_provisioner
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube
from tests.fakes.world import sync_from
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
DRIVER = "ebs.csi.aws.com"
VOLUME_KINDS = ("bound-us-west-2a", "bound-us-west-2c", "dynamic", "missing")
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
        self.kube.put(STORAGECLASSES, {"metadata": {"name": "gp3"}, "provisioner": DRIVER,
                                       "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
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
        sync_from(self.state, self.kube)

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

    def add_pod(self, app: str, cpu: str = "500m", memory: str = "512Mi", gate: bool = True, **spec: Any) -> str:
        """A new pod; with `webhook`, admitted by karpy's pod webhook unless `gate` is False (the
        webhook failed open: its call outlasted the timeout)."""
        self._seq += 1
        name = f"{app}-{self._seq}"
        pod = make_pod(name, cpu=cpu, memory=memory, labels={"app": app}, pending=False, **spec)
        pod["metadata"]["creationTimestamp"] = format_timestamp(self.clock.now())
        if self.webhook and gate:  # karpy's pod webhook, as the apiserver would call it
            for op in gate_patch(pod):
                pod["spec"].setdefault("schedulingGates", [])
                pod["spec"]["schedulingGates"] += op["value"] if isinstance(op["value"], list) else [op["value"]]
        self.kube.put(PODS, pod)
        return name

    def add_volume_pod(self, kind: str, cpu: str = "500m", memory: str = "512Mi") -> str:
        """A pod with one claim (`VOLUME_KINDS`): bound to a volume in a zone, to bind, or missing."""
        self._seq += 1
        name = f"stateful-{self._seq}"
        claim_name = f"data-{name}"
        spec: dict[str, Any] = {"storageClassName": "gp3", "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}}}  # fmt: skip
        if kind.startswith("bound-"):
            volume = f"pv-{name}"
            self._volume(volume, kind.removeprefix("bound-"), claim_name)
            spec["volumeName"] = volume
        if kind != "missing":
            phase = "Bound" if kind.startswith("bound-") else "Pending"
            claim = {"metadata": {"name": claim_name, "namespace": "default", "uid": f"uid-{claim_name}"},
                     "spec": spec, "status": {"phase": phase}}  # fmt: skip
            self.kube.put(CLAIMS, claim)
        volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
        pod = make_pod(name, cpu=cpu, memory=memory, labels={"app": "stateful"}, pending=False, volumes=volumes)
        pod["metadata"]["creationTimestamp"] = format_timestamp(self.clock.now())
        self.kube.put(PODS, pod)
        return name

    def _volume(self, name: str, zone: str, claim: str) -> None:
        term = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}
        self.kube.put(VOLUMES, {"metadata": {"name": name}, "spec": {
            "storageClassName": "gp3", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "claimRef": {"namespace": "default", "name": claim}, "csi": {"driver": DRIVER, "volumeHandle": name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}, "status": {"phase": "Bound"}})  # fmt: skip

    def volumes(self) -> placement.Volumes:
        return placement.Volumes.of(self.kube.items(CLAIMS), self.kube.items(VOLUMES))

    def _volumes_allow(self, pod: dict[str, Any], node: dict[str, Any]) -> bool:
        """kube-scheduler's VolumeBinding for this node: claims exist; bound ones' volumes allow it."""
        volumes = self.volumes()
        for name in placement.claim_names(pod):
            claim = volumes.claims.get(f"default/{name}")
            if claim is None:
                return False
        placed = {**pod, "spec": {**pod["spec"], "nodeName": node["metadata"]["name"]}}
        # a claim still to bind may go anywhere (its volume is made where the pod goes)
        problems = placement.volume_violations([node], [placed], volumes)
        return not [p for p in problems if "is not Bound" not in p]

    def _provision_for(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        """The claims still to bind get their volume in the node's zone (selected node → CSI
        provisioner → volume controller), before kube-scheduler binds the pod."""
        for name in placement.claim_names(pod):
            claim = self.kube.find(CLAIMS, name, "default")
            if claim is None or claim["spec"].get("volumeName"):
                continue
            volume = f"pv-{name}"
            self._volume(volume, node["metadata"]["labels"]["topology.kubernetes.io/zone"], name)
            claim["spec"]["volumeName"] = volume
            claim["status"] = {"phase": "Bound"}
            self.kube.put(CLAIMS, claim)

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
                if not placement.placement_violations(pod, node["metadata"]["name"], view) and self._volumes_allow(
                    pod, node
                ):
                    self._provision_for(pod, node)
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
        problems = placement.replay(events)
        return problems + placement.volume_violations(self.kube.items(NODES), self.kube.items(PODS), self.volumes())

    def pending(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.kube.items(PODS) if not p["spec"].get("nodeName"))
