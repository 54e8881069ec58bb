"""The plain, frozen objects the scheduler decides over, and the shape of its answer.

Pure data: no Kubernetes client, no clock. Every decision function of karpy's provisioning
(the controller, `karpy simulate`, the benchmark, the tests) reads these and nothing else:

- `InstanceType` / `Offering` — what the cloud can launch (from `cloudprovider`).
- `PodRequest` — one pod, reduced to what scheduling needs (built by `pods.py`).
- `ProvisionerSpec` — a Provisioner as the scheduler sees it (built by `provisioners.py`).
- `StateNode` — an existing or in-flight node, with the pods bound to it.
- `NewNode` — a node the scheduler wants launched, with its instance-type options and pods.
- `Claim` / `Volume` / `StorageClass` / `VolumeObjects` — PersistentVolumeClaims, volumes,
  storage classes and CSINode attach limits (read by `volumeobjects.py`, judged by `volumes.py`).
- `SchedulingInput` → `scheduler.schedule()` → `SchedulingResult`.

Resources are `Mapping[str, int]`: `cpu` in millicores, `memory` and `ephemeral-storage` in
bytes, `pods` and extended resources (`nvidia.com/gpu`, …) as counts; `controller.core.resources`
parses and formats them, `controller.core.taints` holds `Taint` and `Toleration`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from controller.core.labels import INSTANCE_TYPE, PROVISIONER_NAME
from controller.core.requirements import Requirement, Requirements
from controller.core.resources import Resources
from controller.core.taints import Taint, Toleration


def pod_key(namespace: str, name: str) -> str:
    """The `ns/name` reference used in results, events and logs."""
    return f"{namespace}/{name}"


@dataclass(frozen=True, slots=True)
class Offering:
    """One (zone, capacity type) in which an instance type can be bought, and its hourly price."""

    zone: str
    capacity_type: str
    price: float
    available: bool = True


@dataclass(frozen=True, eq=False)
class InstanceType:
    """A launchable machine shape.

    `requirements` holds every well-known label key (`DoesNotExist` where it does not apply,
    zone and capacity type from the *available* offerings), spec §4.4. `capacity` minus
    `overhead` (kube-reserved + system-reserved + eviction threshold, spec §4.5) is what pods
    can use.
    """

    name: str
    requirements: Requirements
    capacity: Resources
    overhead: Resources
    offerings: tuple[Offering, ...]
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    """CSI driver → how many of its volumes a node of this type can attach (the cloud's
    documented limit; a driver not named here is not limited)."""

    @property
    def allocatable(self) -> dict[str, int]:
        return {k: v - self.overhead.get(k, 0) for k, v in self.capacity.items()}

    @property
    def labels(self) -> dict[str, str]:
        """Every single-valued requirement as a label (zone/capacity type come from the launch)."""
        out = {}
        for key, req in self.requirements.items():
            if not req.complement and len(req.values) == 1:
                out[key] = next(iter(req.values))
        return out

    def available_offerings(self) -> tuple[Offering, ...]:
        return tuple(o for o in self.offerings if o.available)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: `match_labels` AND every expression (In/NotIn/Exists/DoesNotExist)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, op, values in self.match_expressions:
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.match_labels]
        parts += [f"{k} {op} {','.join(vs)}".rstrip() for k, op, vs in self.match_expressions]
        return ",".join(parts) or "<all>"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A required or preferred pod (anti-)affinity term; `weight` is 0 for required terms."""

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None
    weight: int = 0


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    topology_key: str
    max_skew: int
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"  # Honor: kube-scheduler counts only the nodes the pod may use | Ignore


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """A PersistentVolumeClaim a pod mounts, in the pod's namespace: `volumes[].persistentVolumeClaim`,
    or for a generic ephemeral volume (`ephemeral: true`) the claim `<pod>-<volume>` it creates."""

    name: str
    ephemeral: bool = False


@dataclass(frozen=True, eq=False)
class PodRequest:
    """One pod, reduced to what scheduling reads (build with `pods.pod_request(obj)`).

    `requests` is Karpenter's Ceiling (max of summed containers and each init container) plus
    `pods: 1`. Node affinity keeps the wire order: `required_terms` are ORed, `preferred_terms`
    are (weight, requirements). `owner_kind` is the controller owner's kind (`DaemonSet`, …).
    `ignore_reason` is set when Karpenter would not provision for the pod at all (spec §5.2).
    `claims` are the PersistentVolumeClaims it mounts (`volumes.py` turns them into node
    requirements and attach counts).
    """

    namespace: str
    name: str
    requests: Resources
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[tuple[Requirement, ...], ...] = ()
    preferred_terms: tuple[tuple[int, tuple[Requirement, ...]], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    creation_timestamp: str = ""
    node_name: str = ""
    owner_kind: str = ""
    terminal: bool = False
    ignore_reason: str = ""
    claims: tuple[ClaimRef, ...] = ()

    @property
    def key(self) -> str:
        return pod_key(self.namespace, self.name)


# Volumes as the scheduler reads them (`volumeobjects.py` reads them, `volumes.py` decides).

NO_PROVISIONER = "kubernetes.io/no-provisioner"
# in-tree volume plugins → the CSI driver that counts their attachments (CSI migration)
IN_TREE_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}

Terms = tuple[tuple[Requirement, ...], ...]


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str = ""
    class_name: str | None = None  # spec.storageClassName; None when not set
    volume_name: str = ""  # spec.volumeName: bound (or pre-bound) to this PersistentVolume
    phase: str = ""
    access_modes: frozenset[str] = frozenset()
    storage: int = 0  # spec.resources.requests.storage, bytes
    selector: LabelSelector | None = None
    volume_mode: str = "Filesystem"
    deleting: bool = False
    owner_uids: frozenset[str] = frozenset()
    error: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Volume:
    name: str
    class_name: str = ""
    phase: str = ""
    claim_ref: tuple[str, str, str] | None = None  # (namespace, name, uid)
    access_modes: frozenset[str] = frozenset()
    storage: int = 0
    volume_mode: str = "Filesystem"
    labels: Mapping[str, str] = field(default_factory=dict)
    terms: Terms = ()  # spec.nodeAffinity.required, ORed; () with `anywhere`: no constraint
    anywhere: bool = True  # False: it has node affinity (a PV whose terms are all empty matches no node)
    driver: str = ""
    deleting: bool = False
    error: str = ""
    aliased_keys: frozenset[str] = frozenset()  # keys it names that karpy reads under another name


@dataclass(frozen=True)
class StorageClass:
    name: str
    provisioner: str = ""
    wait_for_first_consumer: bool = False
    allowed: Terms = ()  # allowedTopologies, ORed; () = anywhere
    default: bool = False
    error: str = ""
    created: str = ""  # metadata.creationTimestamp (RFC 3339 orders as text)

    @property
    def provisions(self) -> bool:
        return bool(self.provisioner) and self.provisioner != NO_PROVISIONER

    @property
    def driver(self) -> str:
        return IN_TREE_DRIVERS.get(self.provisioner, self.provisioner) if self.provisions else ""


@dataclass(frozen=True, eq=False)
class VolumeObjects:
    """Everything the pods' claims are judged against in one decision."""

    claims: Mapping[str, Claim] = field(default_factory=dict)  # "namespace/name"
    volumes: Mapping[str, Volume] = field(default_factory=dict)
    classes: Mapping[str, StorageClass] = field(default_factory=dict)
    node_limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # node → driver → count

    def default_class(self) -> str:
        """The cluster's default StorageClass ("" when none; the newest when several are, as Kubernetes)."""
        defaults = sorted((c.created, c.name) for c in self.classes.values() if c.default)
        return defaults[-1][1] if defaults else ""

    @cached_property
    def unclaimed(self) -> Mapping[str, tuple[Volume, ...]]:
        """Storage class name → its volumes without a claim reference, by name (computed once)."""
        out: dict[str, list[Volume]] = {}
        for volume in sorted(self.volumes.values(), key=lambda v: v.name):
            if volume.claim_ref is None:
                out.setdefault(volume.class_name, []).append(volume)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def claimed(self) -> Mapping[tuple[str, str], tuple[Volume, ...]]:
        """(namespace, claim name) → the volumes whose claim reference names it (computed once)."""
        out: dict[tuple[str, str], list[Volume]] = {}
        for volume in sorted(self.volumes.values(), key=lambda v: v.name):
            if volume.claim_ref is not None:
                out.setdefault(volume.claim_ref[:2], []).append(volume)
        return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True, slots=True)
class KubeletSpec:
    """A provisioner's kubeletConfiguration: the parts that change capacity or overhead, then the
    ones that only reach the node's kubelet (user data, `cloudprovider/aws/userdata.py`)."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: Resources = field(default_factory=dict)
    kube_reserved: Resources = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)  # signal → Go duration
    eviction_max_pod_grace_period: int | None = None  # seconds
    cluster_dns: tuple[str, ...] = ()
    container_runtime: str | None = None
    image_gc_high_threshold_percent: int | None = None
    image_gc_low_threshold_percent: int | None = None
    cpu_cfs_quota: bool | None = None


@dataclass(frozen=True, eq=False)
class ProvisionerSpec:
    """A Provisioner as the scheduler sees it (`provisioners.provisioner_spec()` adapts one).

    `requirements` = spec.requirements ∩ each label as `In [value]` ∩
    `karpenter.sh/provisioner-name In [name]` (spec §5.3). `limits` are integers per resource.
    `annotations` are those of every node it launches (its own plus its drift hash).
    """

    name: str
    requirements: Requirements
    weight: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    kubelet: KubeletSpec | None = None
    limits: Resources = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class StateNode:
    """An existing or in-flight node, as cluster state sees it.

    `allocatable` is what the kubelet reports (for a node that is not initialized yet, the
    caller fills zero values from the instance type's expected allocatable, spec §5.5.1).
    `pods` are the pods bound to it (daemonset pods included, flagged by `owner_kind`).
    Only nodes with a `karpenter.sh/provisioner-name` label that are not marked for deletion
    receive pods; every node counts for topology.
    """

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    capacity: Resources = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    pods: tuple[PodRequest, ...] = ()
    initialized: bool = True
    marked_for_deletion: bool = False
    creation_timestamp: str = ""

    @property
    def provisioner_name(self) -> str | None:
        return self.labels.get(PROVISIONER_NAME)

    @property
    def instance_type_name(self) -> str | None:
        return self.labels.get(INSTANCE_TYPE)

    @cached_property
    def label_sets(self) -> Mapping[frozenset[tuple[str, str]], int]:
        """How many of its pods, DaemonSet pods aside, carry each set of labels — what
        kube-scheduler's default spread counts of a node (`solver.Solver._default_spread`). Made
        once per node: a deprovisioning pass's simulations share its nodes."""
        out: dict[frozenset[tuple[str, str]], int] = {}
        for pod in self.pods:
            if pod.owner_kind != "DaemonSet":
                labels = frozenset(pod.labels.items())
                out[labels] = out.get(labels, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class Launch:
    """The offering a simulated launch of a `NewNode` takes: spot first, then the cheapest."""

    instance_type: InstanceType
    zone: str
    capacity_type: str
    price: float


@dataclass(frozen=True, eq=False)
class NewNode:
    """A node to launch: its provisioner, requirements and instance-type options (cheapest
    first, at most `SchedulingSettings.max_instance_types`), the pods it was computed for and
    their total requests (daemonset overhead included)."""

    name: str
    provisioner: str
    requirements: Requirements
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    instance_type_options: tuple[InstanceType, ...]
    pods: tuple[PodRequest, ...]
    requests: Resources
    daemon_requests: Resources
    launch: Launch | None


@dataclass(frozen=True, slots=True)
class SchedulingSettings:
    """Knobs of one scheduling decision.

    `exact_time_limit`: seconds (wall clock: HiGHS's time limits and a monotonic timer) the
    near-optimal packing of small pools (`exact.py`, `patterns.py`) may take per decision, every
    pool included; 0 turns that pass off. `exact_max_bins`: the largest
    pool (nodes it may open) the pass takes on. `exact_more_nodes`: whether the pass may use
    more new nodes than the heuristic did — Karpenter's consolidators, which accept one
    replacement node at most, turn it off; karpy's repack consolidation keeps it on.
    `least_allocated`: which existing node accepts a pod that several could take — False: the
    first in the given order (creation time, then name: Karpenter's, spec §5.5 step 1); True:
    the one kube-scheduler's default profile scores highest (`LeastAllocated`, balanced
    allocation, and the default spread that sends a ReplicaSet's pods where fewest like them run:
    `solver.Solver._existing_choice`; ties to the first) — deprovisioning's model of where
    kube-scheduler puts a deleted node's pods (`deprovisioning/simulation.py` `spill`).
    """

    max_instance_types: int = 60
    exact_time_limit: float = 0.2
    exact_max_bins: int = 24
    exact_more_nodes: bool = True
    least_allocated: bool = False


@dataclass(frozen=True, eq=False)
class NodeSource:
    """The nodes a run of solves draws from, e.g. a deprovisioning pass's remaining nodes: a solve
    whose `nodes` are some of these very objects takes their set-up from it, done once for
    all of them (`existing.py`), instead of setting each up again. The results are the same with
    or without it."""

    nodes: tuple[StateNode, ...]


@dataclass(frozen=True, eq=False)
class SchedulingInput:
    """Everything one scheduling decision reads.

    `instance_types` is either one catalog used as given for all provisioners, or a mapping
    provisioner name → its types (what the cloud provider's `get_instance_types(provisioner,
    node_template)` returned: kubelet settings and node template already applied; the scheduler
    computes no capacity). `daemonsets` are the daemonset pod templates as PodRequests.
    `volumes`: the claims, volumes, storage classes and per-node attach limits the pods' claims
    are judged against (`volumes.py`); None: claims are not looked at (inputs without volumes).
    `node_source`: the nodes `nodes` are drawn from, set up once for many solves (`NodeSource`).
    """

    pods: Sequence[PodRequest]
    provisioners: Sequence[ProvisionerSpec]
    instance_types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]]
    nodes: Sequence[StateNode] = ()
    daemonsets: Sequence[PodRequest] = ()
    settings: SchedulingSettings = field(default_factory=SchedulingSettings)
    volumes: VolumeObjects | None = None
    node_source: NodeSource | None = None


@dataclass(frozen=True, slots=True)
class Clause:
    """One part of an unschedulable reason: the provisioners that failed the same way, the stages
    they failed (`STAGES`), and the sentence naming them."""

    provisioners: tuple[str, ...]
    stages: tuple[str, ...]
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"provisioners": list(self.provisioners), "stages": list(self.stages), "text": self.text}


STAGES = ("taints", "requirements", "topology", "instance-types", "limits")
"""The stages a provisioner is checked in when a pod could not be placed (`reasons.py`)."""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a pod could not be placed, as values: the clauses (readers such as the dashboard read
    their fields) and the sentence they make."""

    text: str
    clauses: tuple[Clause, ...] = ()

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, eq=False)
class SchedulingResult:
    """The plan: nodes to launch, pods placed on existing nodes (node name → pod keys), and
    one human-readable reason per pod that could not be placed (pod key → reason), with the
    structured `reasons` behind the ones the scheduler explained."""

    new_nodes: tuple[NewNode, ...]
    existing_assignments: Mapping[str, tuple[str, ...]]
    unschedulable: Mapping[str, str]
    reasons: Mapping[str, Reason] = field(default_factory=dict)

    @property
    def all_scheduled(self) -> bool:
        return not self.unschedulable
