"""Volumes decide where a pod may run: claims → node requirements, waits and attach counts (spec §5.8).

Pure. `pod_volumes(pod, objects)` reads a pod's PersistentVolumeClaims (`PodRequest.claims`;
generic ephemeral volumes through the claim `<pod>-<volume>` they create) against the claims,
volumes and storage classes of `types.VolumeObjects` (read by `volumeobjects.py`), the way
kube-scheduler's VolumeBinding, VolumeZone and NodeVolumeLimits plugins judge a node
(Karpenter's `volumetopology.go` and `volumeusage.go` go part of the way):

- a bound claim: its PersistentVolume's `spec.nodeAffinity` (every term shape, terms ORed);
- an unbound claim of a WaitForFirstConsumer class: the nodes where kube-scheduler could bind it
  — those of an available static volume that satisfies it (class, access modes, capacity,
  selector, volume mode; a volume pre-bound to the claim is the only one), or, when the class
  provisions, its `allowedTopologies` (anywhere without them). karpy launches for such a pod
  but never binds it (`PodVolumes.unbound`): kube-scheduler does, which sets the claim's
  `volume.kubernetes.io/selected-node` so the volume is made in the node's zone;
- an unbound claim of an Immediate class (or of no class): wait for the volume controller;
- a missing, unreadable or deleting claim, a missing class or volume: wait, naming it.

The requirements are ANDed into every required node-affinity term of the pod (`constrained`),
ORed volume terms multiplying out, so preference relaxation cannot drop them. Attach limits
(`usage`: CSI driver → distinct claims) become a per-driver scheduler resource
(`ATTACH_PREFIX + driver`) for the time of one `schedule()` call (`prepare` / `finish`): existing
nodes offer their CSINode `allocatable.count` less the claims of their pods, new nodes their
instance type's `volume_limits`; an unknown limit is no limit, as in kube-scheduler. Nodes drawn
from a `NodeSource` are given theirs once per source (`_LIMITED`), and drawn from it still.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.core.labels import ZONE
from controller.core.requirements import Requirement
from controller.core.resources import ATTACH_PREFIX
from controller.scheduling.reasons import render_requirement
from controller.scheduling.types import (
    Claim,
    InstanceType,
    Launch,
    NewNode,
    NodeSource,
    PodRequest,
    SchedulingInput,
    SchedulingResult,
    StateNode,
    Terms,
    Volume,
    VolumeObjects,
)

UNLIMITED = 1 << 40
MAX_TERMS = 64  # ORed alternatives kept per pod (more is cut: fewer options, never a wrong one)


@dataclass(frozen=True)
class PodVolumes:
    """What a pod's claims mean for its placement."""

    terms: Terms | None = None  # ORed alternatives every node must meet; None: no constraint
    blocked: str = ""  # why it cannot be placed yet ("" when it can)
    unbound: tuple[str, ...] = ()  # WaitForFirstConsumer claims kube-scheduler must bind
    usage: Mapping[str, frozenset[str]] = field(default_factory=dict)  # driver → claim keys


NONE = PodVolumes()


def claim_key(pod: PodRequest, name: str) -> str:
    return f"{pod.namespace}/{name}"


def _and(left: Terms, right: Terms) -> Terms:
    out = tuple(a + b for a in left for b in right)
    return out[:MAX_TERMS]


def _volume_terms(volume: Volume) -> Terms | None:
    """The volume's node affinity; None: anywhere."""
    return None if volume.anywhere else volume.terms


def _satisfies(volume: Volume, claim: Claim, class_name: str) -> bool:
    """kube-scheduler's FindMatchingVolume for an unbound claim (its own pre-binding aside)."""
    if volume.error or volume.deleting or volume.class_name != class_name or volume.claim_ref is not None:
        return False
    if volume.phase not in ("", "Available", "Pending"):
        return False
    if volume.volume_mode != claim.volume_mode or not claim.access_modes <= volume.access_modes:
        return False
    if volume.storage < claim.storage:
        return False
    return claim.selector is None or claim.selector.matches(volume.labels)


def _prebound(volume: Volume, claim: Claim) -> bool:
    if volume.claim_ref is None:
        return False
    ns, name, uid = volume.claim_ref
    return (ns, name) == (claim.namespace, claim.name) and uid in ("", claim.uid) and not volume.deleting


def _unbound_claim(claim: Claim, objects: VolumeObjects) -> tuple[Terms | None, str, str, bool]:
    """(terms, driver, blocked, wait-for-first-consumer) for a claim without a volume."""
    class_name = claim.class_name if claim.class_name is not None else objects.default_class()
    if not class_name:
        return None, "", f"persistentvolumeclaim {claim.key} is not bound yet (it names no storage class)", False
    cls = objects.classes.get(class_name)
    if cls is None:
        return None, "", f'storageclass "{class_name}" of persistentvolumeclaim {claim.key} not found', False
    if cls.error:
        return None, "", cls.error, False
    if not cls.wait_for_first_consumer:
        why = f"persistentvolumeclaim {claim.key} is not bound yet (storage class {class_name} binds immediately)"
        return None, "", why, False
    prebound = [v for v in objects.claimed.get((claim.namespace, claim.name), ()) if _prebound(v, claim)]
    candidates = prebound or [v for v in objects.unclaimed.get(class_name, ()) if _satisfies(v, claim, class_name)]
    alternatives: list[tuple[Requirement, ...]] = []
    anywhere = False
    driver = cls.driver
    for volume in candidates:
        terms = _volume_terms(volume)
        anywhere = anywhere or terms is None
        alternatives.extend(terms or ())
        driver = driver or volume.driver
    if cls.provisions and claim.selector is None and not prebound:
        anywhere = anywhere or not cls.allowed
        alternatives.extend(cls.allowed)
    if anywhere:
        return None, driver, "", True
    if not alternatives:
        if not candidates and not cls.provisions:
            why = (
                f"no persistent volume available for persistentvolumeclaim {claim.key}"
                f" (storage class {class_name} does not provision)"
            )
        else:
            why = f"no node can hold a volume for persistentvolumeclaim {claim.key}"
        return None, driver, why, True
    return tuple(alternatives[:MAX_TERMS]), driver, "", True


def pod_volumes(pod: PodRequest, objects: VolumeObjects) -> PodVolumes:
    """What the pod's claims require (see the module docstring)."""
    if not pod.claims:
        return NONE
    terms: Terms | None = None
    unbound: list[str] = []
    usage: dict[str, set[str]] = {}
    for ref in pod.claims:
        key = claim_key(pod, ref.name)
        claim = objects.claims.get(key)
        if claim is None:
            if ref.ephemeral:
                why = f"waiting for the ephemeral volume controller to create persistentvolumeclaim {key}"
                return PodVolumes(blocked=why)
            return PodVolumes(blocked=f"persistentvolumeclaim {key} not found")
        if claim.error:
            return PodVolumes(blocked=claim.error)
        if ref.ephemeral and pod.uid and pod.uid not in claim.owner_uids:
            return PodVolumes(blocked=f"persistentvolumeclaim {key} was not created for this pod's ephemeral volume")
        if claim.deleting:
            return PodVolumes(blocked=f"persistentvolumeclaim {key} is being deleted")
        if claim.phase == "Lost":
            return PodVolumes(blocked=f"persistentvolumeclaim {key} lost its persistent volume")
        if claim.volume_name:
            volume = objects.volumes.get(claim.volume_name)
            if volume is None:
                why = f'persistentvolume "{claim.volume_name}" of persistentvolumeclaim {key} not found'
                return PodVolumes(blocked=why)
            if volume.error:
                return PodVolumes(blocked=volume.error)
            mine, driver = _volume_terms(volume), volume.driver
            if mine == ():
                return PodVolumes(blocked=f'the node affinity of persistentvolume "{volume.name}" matches no node')
        else:
            mine, driver, why, wait_first = _unbound_claim(claim, objects)
            if why:
                return PodVolumes(blocked=why)
            if wait_first:
                unbound.append(key)
        if mine is not None:
            terms = mine if terms is None else _and(terms, mine)
        if driver:
            usage.setdefault(driver, set()).add(key)
    return PodVolumes(terms, "", tuple(unbound), {d: frozenset(k) for d, k in usage.items()})


def constrained(pod: PodRequest, terms: Terms | None) -> PodRequest:
    """The pod with `terms` ANDed into every required node-affinity term (Karpenter's injection)."""
    if terms is None:
        return pod
    return dataclasses.replace(pod, required_terms=_and(pod.required_terms or ((),), terms))


def terms_allow(labels: Mapping[str, str], terms: Terms | None) -> bool:
    """Whether a node's labels meet one of the ORed terms (None: no constraint)."""
    if terms is None:
        return True
    return any(all(_label_allows(labels, r) for r in term) for term in terms)


def _label_allows(labels: Mapping[str, str], req: Requirement) -> bool:
    value = labels.get(req.key)
    if value is None:
        return req.operator in ("NotIn", "DoesNotExist")
    return req.has(value)


def describe(terms: Terms) -> str:
    """`topology.kubernetes.io/zone in [us-west-2c]`, alternatives joined by "or"."""
    zones = [r for term in terms for r in term if r.key == ZONE and not r.complement]
    if zones and all(len(term) == 1 and term[0].key == ZONE for term in terms):
        values = sorted({v for r in zones for v in r.values})
        return f"zone {' or '.join(values)}"
    return " or ".join(", ".join(render_requirement(r) for r in term) for term in terms)


# -- one schedule() call ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Prepared:
    """A scheduling input with the volumes applied, and what `finish` needs to undo."""

    inp: SchedulingInput
    blocked: Mapping[str, str]
    constraints: Mapping[str, str]  # pod key → its volumes' constraint, for failure reasons
    originals: Mapping[int, InstanceType]  # id of a type with attach capacity → the provider's
    pods: Mapping[str, PodRequest] = field(default_factory=dict)  # pod key → as given, where changed


def node_usage(pods: Iterable[PodRequest], objects: VolumeObjects) -> dict[str, set[str]]:
    """Distinct claims per driver over the pods of a node (Karpenter's volumeusage): the driver of
    each claim's volume, or of its class while it has none — counted even where the claim is in a
    state that keeps a pending pod waiting (being deleted, lost), since it is still attached."""
    out: dict[str, set[str]] = {}
    for pod in pods:
        for ref in pod.claims:
            key = claim_key(pod, ref.name)
            claim = objects.claims.get(key)
            if claim is None:
                continue
            volume = objects.volumes.get(claim.volume_name) if claim.volume_name else None
            if volume is not None:
                driver = volume.driver
            else:
                cls = objects.classes.get(claim.class_name if claim.class_name is not None else objects.default_class())
                driver = cls.driver if cls is not None else ""
            if driver:
                out.setdefault(driver, set()).add(key)
    return out


@functools.lru_cache(maxsize=4096)
def _with_attach_capacity(it: InstanceType, drivers: tuple[str, ...]) -> InstanceType:
    extra = {ATTACH_PREFIX + d: it.volume_limits.get(d, UNLIMITED) for d in drivers}
    return dataclasses.replace(it, capacity={**it.capacity, **extra})


def prepare(inp: SchedulingInput) -> Prepared:
    """Apply the pods' volumes to `inp` (unchanged when it carries no volume objects)."""
    objects = inp.volumes
    if objects is None or not any(p.claims for p in inp.pods):
        return Prepared(inp, {}, {}, {})
    blocked: dict[str, str] = {}
    constraints: dict[str, str] = {}
    pods: list[PodRequest] = []
    drivers: set[str] = set()
    changed: dict[str, PodRequest] = {}
    for pod in inp.pods:
        found = pod_volumes(pod, objects)
        if found.blocked:
            blocked[pod.key] = found.blocked
            continue
        if found.terms is not None:
            constraints[pod.key] = f"its volumes allow only {describe(found.terms)}"
        counts = {ATTACH_PREFIX + d: len(keys) for d, keys in found.usage.items()}
        drivers.update(found.usage)
        given = pod
        pod = constrained(pod, found.terms)
        pod = dataclasses.replace(pod, requests={**pod.requests, **counts}) if counts else pod
        if pod is not given:
            changed[pod.key] = given
        pods.append(pod)
    if not drivers:
        return Prepared(dataclasses.replace(inp, pods=pods), blocked, constraints, {}, changed)
    keys = tuple(sorted(drivers))
    nodes, source = _nodes_with_limits(inp, keys, objects)
    originals: dict[int, InstanceType] = {}

    def extend(types: Sequence[InstanceType]) -> list[InstanceType]:
        out = []
        for it in types:
            ext = _with_attach_capacity(it, keys)
            originals[id(ext)] = it
            out.append(ext)
        return out

    catalog = inp.instance_types
    types = {k: extend(v) for k, v in catalog.items()} if isinstance(catalog, Mapping) else extend(catalog)
    inp = dataclasses.replace(inp, pods=pods, nodes=nodes, instance_types=types, node_source=source)
    return Prepared(inp, blocked, constraints, originals, changed)


Limited = tuple[VolumeObjects, NodeSource, dict[int, tuple[StateNode, StateNode]]]
_LIMITED: weakref.WeakKeyDictionary[NodeSource, dict[tuple[str, ...], Limited]] = weakref.WeakKeyDictionary()
"""Per node source and drivers: its nodes with their attach limits, as a source of their own (a
cache of a pure function: the same objects for every solve of a pass)."""


def _nodes_with_limits(
    inp: SchedulingInput, drivers: tuple[str, ...], objects: VolumeObjects
) -> tuple[list[StateNode], NodeSource | None]:
    """`inp.nodes` offering their attach limits, and the source they are now drawn from: when
    they are the input's source's own nodes, the same nodes of that source with limits, so the
    solve still takes their set-up from a source (`existing.py`); else None."""
    source = inp.node_source
    if source is None:
        return [_node_with_limits(n, drivers, objects) for n in inp.nodes], None
    memo = _LIMITED.setdefault(source, {})
    found = memo.get(drivers)
    if found is None or found[0] is not objects:
        pairs = {id(n): (n, _node_with_limits(n, drivers, objects)) for n in source.nodes}
        found = memo[drivers] = (objects, NodeSource(tuple(limited for _, limited in pairs.values())), pairs)
    _, limited_source, pairs = found
    nodes = []
    for node in inp.nodes:
        pair = pairs.get(id(node))
        if pair is None or pair[0] is not node:
            return [_node_with_limits(n, drivers, objects) for n in inp.nodes], None
        nodes.append(pair[1])
    return nodes, limited_source


def _node_with_limits(node: StateNode, drivers: Sequence[str], objects: VolumeObjects) -> StateNode:
    limits = objects.node_limits.get(node.name, {})
    used = node_usage((p for p in node.pods if not p.terminal), objects)
    extra = {ATTACH_PREFIX + d: max(0, limits.get(d, UNLIMITED) - len(used.get(d, ()))) for d in drivers}
    return dataclasses.replace(node, allocatable={**node.allocatable, **extra})


def finish(prepared: Prepared, result: SchedulingResult) -> SchedulingResult:
    """The result as the caller's inputs know it: no attach resources, the provider's types, and
    the pods the volumes keep waiting among the unschedulable."""
    if not prepared.blocked and not prepared.pods:
        return result
    unschedulable = {**prepared.blocked}
    for key, why in result.unschedulable.items():
        constraint = prepared.constraints.get(key)
        unschedulable[key] = f"{why} ({constraint})" if constraint else why
    new_nodes = tuple(_restored(n, prepared) for n in result.new_nodes)
    return SchedulingResult(new_nodes, result.existing_assignments, unschedulable, result.reasons)


def _restored(node: NewNode, prepared: Prepared) -> NewNode:
    def original(it: InstanceType) -> InstanceType:
        return prepared.originals.get(id(it), it)

    launch = node.launch
    if launch is not None:
        launch = Launch(original(launch.instance_type), launch.zone, launch.capacity_type, launch.price)
    return dataclasses.replace(
        node,
        instance_type_options=tuple(original(it) for it in node.instance_type_options),
        pods=tuple(prepared.pods.get(p.key, p) for p in node.pods),
        requests={k: v for k, v in node.requests.items() if not k.startswith(ATTACH_PREFIX)},
        daemon_requests={k: v for k, v in node.daemon_requests.items() if not k.startswith(ATTACH_PREFIX)},
        launch=launch,
    )


def bind_refusal(
    pod: PodRequest, node: str, labels: Mapping[str, str], on_node: Iterable[PodRequest], objects: VolumeObjects
) -> str:
    """Why a binder may not bind `pod` to this node now because of its volumes ("" when it may):
    a claim still to bind (kube-scheduler must, so that it picks the volume's node), a volume
    the node's labels do not allow or whose keys the node lacks as written (an alias such as
    `topology.ebs.csi.aws.com/zone`, which karpy reads as the zone: kube-scheduler binds once
    the node has it), or an attach limit of the node's CSINode reached."""
    if not pod.claims:
        return ""
    found = pod_volumes(pod, objects)
    if found.blocked:
        return found.blocked
    if found.unbound:
        claim = found.unbound[0]
        return f"persistentvolumeclaim {claim} is not bound yet: kube-scheduler binds the pod and picks its volume"
    if not terms_allow(labels, found.terms):
        return f"its volumes allow only {describe(found.terms or ())}"
    for ref in pod.claims:
        bound = objects.claims.get(claim_key(pod, ref.name))
        volume = objects.volumes.get(bound.volume_name) if bound is not None else None
        if volume is None:
            continue
        missing = sorted(k for k in volume.aliased_keys if k not in labels)
        if missing:
            # kube-scheduler reads the volume's keys as written: it binds once the node has them
            return f"the node has no label {missing[0]}, which persistentvolume {volume.name} names"
    limits = objects.node_limits.get(node, {})
    if limits and found.usage:
        used = node_usage(on_node, objects)
        for driver, keys in sorted(found.usage.items()):
            total = len(used.get(driver, set()) | keys)
            if driver in limits and total > limits[driver]:
                return f"the node can attach {limits[driver]} {driver} volume(s); it would need {total}"
    return ""
