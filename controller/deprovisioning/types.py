"""The frozen inputs of a deprovisioning decision: one `Snapshot` of the cluster.

Pure data. The acting layer (`controller.py`) builds a `Snapshot` from cluster state; every
decision module reads only this. Times are timezone-aware `datetime`s, `Snapshot.now` comes
from the injected clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from controller.apis.provisioner import Provisioner
from controller.core import labels as L
from controller.scheduling.types import (
    InstanceType,
    LabelSelector,
    Offering,
    PodRequest,
    ProvisionerSpec,
    SchedulingInput,
    SchedulingResult,
    StateNode,
    VolumeObjects,
)

Scheduler = Callable[[SchedulingInput], SchedulingResult]
"""The pure scheduler (`controller.scheduling.scheduler.schedule`), injected for simulations."""


@dataclass(frozen=True, eq=False)
class PodInfo:
    """A pod bound to a node: its scheduling view plus what disruption decisions read."""

    request: PodRequest
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0
    deleting: bool = False

    @property
    def key(self) -> str:
        return self.request.key

    @property
    def reschedulable(self) -> bool:
        """Spec §6.2 candidate pods: not static (Node-owned), not DaemonSet-owned, not terminal/terminating."""
        owner = self.request.owner_kind
        return owner not in ("Node", "DaemonSet") and not self.request.terminal and not self.deleting

    @property
    def do_not_evict(self) -> bool:
        return self.annotations.get(L.DO_NOT_EVICT) == "true"


@dataclass(frozen=True, eq=False)
class NodeInfo:
    """A node as deprovisioning sees it. `state` is what the scheduler reads (its `pods` are the
    bound pods as `PodRequest`s); `pods` are the same pods with annotations and priority."""

    state: StateNode
    created: datetime
    annotations: Mapping[str, str] = field(default_factory=dict)
    pods: tuple[PodInfo, ...] = ()
    deleting: bool = False
    nominated: bool = False

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def labels(self) -> Mapping[str, str]:
        return self.state.labels

    @property
    def provisioner_name(self) -> str | None:
        return self.state.provisioner_name

    @property
    def marked_for_deletion(self) -> bool:
        return self.state.marked_for_deletion or self.deleting

    @property
    def reschedulable_pods(self) -> tuple[PodInfo, ...]:
        return tuple(p for p in self.pods if p.reschedulable)


@dataclass(frozen=True, eq=False)
class ProvisionerInfo:
    """A Provisioner with its scheduling view and the instance types it may launch."""

    provisioner: Provisioner
    spec: ProvisionerSpec
    instance_types: tuple[InstanceType, ...]

    @property
    def name(self) -> str:
        return self.provisioner.name


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget reduced to what candidate filtering reads (spec §6.2)."""

    namespace: str
    name: str
    selector: LabelSelector
    disruptions_allowed: int

    def selects(self, pod: PodInfo) -> bool:
        return pod.request.namespace == self.namespace and self.selector.matches(pod.request.labels)


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Everything one deprovisioning pass reads.

    `consolidated` is Karpenter's "nothing changed since the last pass that found nothing"
    flag (spec §5.10): while set, the consolidation strategies do nothing.
    """

    now: datetime
    nodes: tuple[NodeInfo, ...]
    provisioners: Mapping[str, ProvisionerInfo]
    pdbs: tuple[DisruptionBudget, ...] = ()
    pending_pods: tuple[PodRequest, ...] = ()
    daemonsets: tuple[PodRequest, ...] = ()
    consolidated: bool = False
    volumes: VolumeObjects | None = None  # the pods' claims, volumes and attach limits

    def node(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)


@dataclass(frozen=True, slots=True)
class DeprovisioningSettings:
    """Timings of the deprovisioning controller (spec §11); tests shorten them."""

    validation_wait_seconds: float = 15.0
    poll_period_seconds: float = 10.0
    replacement_timeout_seconds: float = 570.0
    deletion_timeout_seconds: float = 570.0
    consolidated_reset_seconds: float = 300.0


@dataclass(frozen=True, eq=False)
class Candidate:
    """A node that may be disrupted, with what pricing and ordering need."""

    node: NodeInfo
    provisioner: ProvisionerInfo
    instance_type: InstanceType
    capacity_type: str
    zone: str
    offering: Offering | None
    disruption_cost: float

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def pods(self) -> tuple[PodInfo, ...]:
        """The pods that would have to move (static, daemonset, terminal, terminating pods excluded)."""
        return self.node.reschedulable_pods

    @property
    def price(self) -> float | None:
        return self.offering.price if self.offering is not None else None
