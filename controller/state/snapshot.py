"""Immutable views of the cluster: what every controller decides over.

Pure. `ClusterState.snapshot()` (see `cluster.py`) returns a `Snapshot`; nothing in it changes
afterwards, so a decision can read it without locks. Views are built once per object
resourceVersion and shared between snapshots.

- `PodView` — one pod: binding, phase, owner, priority class, do-not-evict, and its
  `PodRequest` for the scheduler (`request`, None if the pod could not be read).
  `provisionable` is karpy's rule for "pods considered" (decisions table; spec §5.2);
  `queued` for the pods kube-scheduler has not decided yet (issue 21).
- `NodeView` — one node (real, or in-flight: launched by us, not yet seen by the watch) with the
  pods bound to it, `marked_for_deletion` (deleting, or marked by deprovisioning) and
  `nominated` (recently chosen for pods); `state_node()` gives the scheduler's `StateNode`.
- `ProvisionerView` — the raw object, the loaded `Provisioner`/`ProvisionerSpec` (or the load
  error), and `status.resources`.
- `PdbView` — a PodDisruptionBudget's selector and `disruptionsAllowed`.
- `Snapshot` — all of the above plus `synced` (every watch has listed), the DaemonSets' pod
  templates (`daemonset_pods`, converted once per snapshot) and `volumes`: the claims, volumes,
  storage classes and CSINode attach limits (`scheduling/volumeobjects.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from controller.apis.podgate import DEFAULT_SCHEDULER
from controller.apis.provisioner import Provisioner
from controller.core import labels as L
from controller.core.resources import Resources
from controller.core.taints import Taint
from controller.scheduling.types import LabelSelector, PodRequest, ProvisionerSpec, StateNode, VolumeObjects

Obj = Mapping[str, Any]

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


@dataclass(frozen=True, eq=False, slots=True)
class PodView:
    """A pod as cluster state holds it. Slotted, and what every pass reads of every pod — `key`,
    `spread_pinned`, `provisionable`, `queued` — computed once when the view is made (issue 21:
    per-view dicts and cached properties were ~2 KB of each pending pod's ~6 KB)."""

    namespace: str
    name: str
    uid: str
    node_name: str
    phase: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_kind: str
    priority_class_name: str
    deletion_timestamp: float | None
    created: float
    unschedulable: bool  # PodScheduled=False with reason Unschedulable
    nominated_node_name: str
    tolerates_unschedulable: bool
    request: PodRequest | None
    obj: Obj = field(repr=False)
    unschedulable_since: float = 0.0  # that condition's lastTransitionTime (0: not marked or unknown)
    scheduling_gates: tuple[str, ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER  # spec.schedulerName (absent: the default scheduler)
    scheduler_tried: bool = False  # PodScheduled=False, any reason: a scheduler attempted it and failed
    key: str = field(init=False, repr=False)
    spread_pinned: bool = field(init=False, repr=False)
    provisionable: bool = field(init=False, repr=False)
    queued: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        derive = object.__setattr__  # frozen: set once, here (and again by dataclasses.replace)
        derive(self, "key", f"{self.namespace}/{self.name}")
        derive(self, "spread_pinned", self._spread_pinned())
        derive(self, "provisionable", self._provisionable())
        derive(self, "queued", self._queued())

    def _spread_pinned(self) -> bool:
        """Pending, ungated, and its own node selector fixes the domain of one of its
        DoNotSchedule spreads off the hostname (a pod karpy pinned when lifting its topology
        gate, or one a user pinned). Considered by provisioning without kube-scheduler's mark, so
        the group's counts hold it where it must go while it waits to be bound."""
        pod = self.request
        return (
            pod is not None
            and not self.scheduling_gates
            and any(
                c.when_unsatisfiable == "DoNotSchedule" and c.topology_key != L.HOSTNAME
                and c.topology_key in pod.node_selector
                for c in pod.topology_spread
            )
        )  # fmt: skip

    @property
    def topology_gated(self) -> bool:
        """Gated by karpy's topology gate alone: waiting for provisioning to choose its domain
        (no one else schedules it; `provisioning/spreadpin.py` lifts the gate)."""
        return self.scheduling_gates == (L.TOPOLOGY_GATE,)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def deleting(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @property
    def is_mirror(self) -> bool:
        return L.MIRROR_ANNOTATION in self.annotations or self.owner_kind == "Node"

    @property
    def do_not_evict(self) -> bool:
        return self.annotations.get(L.DO_NOT_EVICT) == "true"

    @property
    def critical(self) -> bool:
        return self.priority_class_name in CRITICAL_PRIORITY_CLASSES

    @property
    def priority(self) -> int:
        """`spec.priority` as admission resolved it (0 when absent or unreadable)."""
        spec = self.obj.get("spec")
        value = spec.get("priority") if isinstance(spec, Mapping) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def _provisionable(self) -> bool:
        """Pods considered (decisions table): PodScheduled=False reason Unschedulable (or gated by
        karpy's topology gate alone, or `spread_pinned`), not bound, not preempting, not owned by
        a DaemonSet or a Node, not terminal, not being deleted."""
        return (
            not self.node_name
            and (self.unschedulable or self.topology_gated or self.spread_pinned)
            and not self.nominated_node_name
            and not self.is_daemonset
            and not self.is_mirror
            and not self.terminal
            and not self.deleting
        )

    def _queued(self) -> bool:
        """Waiting for kube-scheduler's first decision (issue 21): not bound, for the default
        scheduler, not gated, not marked `PodScheduled=False` yet (neither `Unschedulable` nor any
        other failure: a pod kube-scheduler tried and keeps retrying has had its decision), not
        `provisionable`, not a DaemonSet or mirror pod, not terminal, not being deleted.
        kube-scheduler will still place it in the room nodes have now, so consolidation does not
        take that room away meanwhile (`deprovisioning/decide.py`)."""
        return (
            not self.node_name
            and not self.scheduler_tried
            and not self.scheduling_gates
            and self.scheduler_name == DEFAULT_SCHEDULER
            and not self.provisionable
            and not self.is_daemonset
            and not self.is_mirror
            and not self.terminal
            and not self.deleting
        )


@dataclass(frozen=True, eq=False)
class NodeView:
    name: str
    provider_id: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Resources
    allocatable: Resources
    unschedulable: bool
    deletion_timestamp: float | None
    created: float
    finalizers: tuple[str, ...]
    ready: bool
    obj: Obj = field(repr=False)
    in_flight: bool = False
    marked_for_deletion: bool = False
    nominated: bool = False
    pods: tuple[PodView, ...] = ()

    @property
    def key(self) -> str:
        """Cluster state's key: the provider ID, or the name when it is empty (spec §5.10)."""
        return self.provider_id or self.name

    @property
    def provisioner(self) -> str | None:
        return self.labels.get(L.PROVISIONER_NAME)

    @property
    def owned(self) -> bool:
        return L.PROVISIONER_NAME in self.labels

    @property
    def deleting(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def initialized(self) -> bool:
        """karpy's nodes: labelled `karpenter.sh/initialized` (`provisioning/initialization.py`);
        nodes it does not manage: Ready."""
        if self.owned:
            return self.labels.get(L.INITIALIZED) == "true"
        return self.ready and not self.in_flight

    @property
    def instance_type(self) -> str | None:
        return self.labels.get(L.INSTANCE_TYPE)

    @property
    def capacity_type(self) -> str | None:
        return self.labels.get(L.CAPACITY_TYPE)

    def movable_pods(self) -> tuple[PodView, ...]:
        """The pods that would have to run elsewhere if the node went (readable, not DaemonSet or
        mirror pods, not terminal, not being deleted). Found once per view: a deprovisioning pass
        asks every node several times, and a node that did not change keeps its view."""
        return self._movable

    @cached_property
    def _movable(self) -> tuple[PodView, ...]:
        return tuple(
            p for p in self.pods
            if p.request is not None and not p.is_daemonset and not p.is_mirror and not p.terminal and not p.deleting
        )  # fmt: skip

    def state_node(self) -> StateNode:
        """The scheduler's view; pods that are terminal or deleting do not take room. Built once
        per view (a view is immutable): a pass's simulations read every node again and again."""
        return self._state_node

    @cached_property
    def _state_node(self) -> StateNode:
        pods = tuple(p.request for p in self.pods if p.request is not None and not p.terminal and not p.deleting)
        return StateNode(
            name=self.name,
            labels=dict(self.labels),
            allocatable=dict(self.allocatable),
            capacity=dict(self.capacity),
            taints=self.taints,
            pods=pods,
            initialized=self.initialized,
            marked_for_deletion=self.marked_for_deletion,
            creation_timestamp=str((self.obj.get("metadata") or {}).get("creationTimestamp") or ""),
        )


@dataclass(frozen=True, eq=False)
class ProvisionerView:
    name: str
    obj: Obj = field(repr=False)
    provisioner: Provisioner | None = None
    spec: ProvisionerSpec | None = None
    error: str = ""
    deleting: bool = False
    status_resources: Resources = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class PdbView:
    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int
    obj: Obj = field(repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, pod: PodView) -> bool:
        return pod.namespace == self.namespace and self.selector is not None and self.selector.matches(pod.labels)


@dataclass(frozen=True, eq=False)
class Snapshot:
    synced: bool
    now: float
    pods: Mapping[str, PodView]
    nodes: Mapping[str, NodeView]
    provisioners: Mapping[str, ProvisionerView]
    daemonsets: tuple[Obj, ...] = ()
    pdbs: tuple[PdbView, ...] = ()
    awsnodetemplates: Mapping[str, Obj] = field(default_factory=dict)
    volumes: VolumeObjects = field(default_factory=VolumeObjects)
    daemonset_pods: tuple[PodRequest, ...] = ()
    """Each readable DaemonSet's pod template (`scheduling.workloads.daemonset_pods`), converted
    once by `ClusterState` for every reader of the snapshot."""
    unbound: tuple[PodView, ...] | None = None
    """The pods of `pods` not bound to a node, as `ClusterState` indexes them (None: not indexed,
    `unbound_pods()` finds them in `pods`)."""

    def unbound_pods(self) -> Iterable[PodView]:
        """The pods not bound to a node (no `node_name`): where the pending, queued and nominated
        pods are, without a walk over every bound pod (the provisioning tick, every 0.2 s)."""
        if self.unbound is not None:
            return self.unbound
        return [p for p in self.pods.values() if not p.node_name]

    def valid_provisioners(self) -> list[ProvisionerView]:
        """The Provisioners that loaded and are not being deleted, by name: the ones a decision may
        launch for."""
        return [v for _, v in sorted(self.provisioners.items()) if v.spec is not None and not v.deleting]

    def pending_pods(self, ordered: bool = True) -> list[PodView]:
        """Provisionable pods, oldest first then by name (karpy's stable order); `ordered=False`
        skips the sort for readers that only look pods up (the provisioning tick, every 0.2 s)."""
        pending = [p for p in self.unbound_pods() if p.provisionable]
        if ordered:
            pending.sort(key=_pod_order)
        return pending

    def queued_pods(self) -> list[PodView]:
        """The pods kube-scheduler has not decided yet (`PodView.queued`), in no particular order."""
        return [p for p in self.unbound_pods() if p.queued]

    def provisioner_usage(self, name: str) -> dict[str, int]:
        """Sum of capacity of the provisioner's nodes not marked for deletion (the counter)."""
        out: dict[str, int] = {}
        for node in self.nodes.values():
            if node.provisioner == name and not node.marked_for_deletion:
                for resource, value in node.capacity.items():
                    out[resource] = out.get(resource, 0) + value
        return {k: v for k, v in out.items() if v}


def _pod_order(pod: PodView) -> tuple[float, str]:
    return pod.created, pod.key
