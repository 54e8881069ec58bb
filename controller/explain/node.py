"""What removing one node would do now: the `karpy explain node` answer.

Pure. `explain_node()` reads one deprovisioning `Snapshot` and simulates the node's removal with
consolidation's own simulation (`deprovisioning/simulation.py`, the scheduler consolidation
uses, one replacement node at most) and its own predicates (`new_candidate`, `blocked_reason`,
`consolidation_blocker`, `compute_consolidation`), so the answer is what the controller would
do, not a second opinion. It says where each pod would go (an existing node or a new node of a
given type), the node's hourly price against its replacements', and every blocker, each with
its category: `pdb`, `do-not-evict`, `volume` (a pod whose volumes pin it), `limits`,
`unschedulable`, `do-not-consolidate`, `consolidation-disabled`, `deleting`, `not-candidate`.
Neighbours: `outlook.py` (the one-line verdict of the node pages), `service.py` (serves this
from cluster state).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from controller.core import labels as L
from controller.deprovisioning.candidates import new_candidate
from controller.deprovisioning.consolidation import compute_consolidation, consolidation_blocker
from controller.deprovisioning.outlook import not_candidate_reason
from controller.deprovisioning.simulation import simulate
from controller.deprovisioning.types import Inputs, Scheduler
from controller.scheduling.types import NewNode, Reason
from controller.state.snapshot import NodeView

PDB = "pdb"
DO_NOT_EVICT = "do-not-evict"
VOLUME = "volume"
LIMITS = "limits"
UNSCHEDULABLE = "unschedulable"
DO_NOT_CONSOLIDATE = "do-not-consolidate"
CONSOLIDATION_DISABLED = "consolidation-disabled"
DELETING = "deleting"
NOT_CANDIDATE = "not-candidate"

LIMIT_TEXT = "limits would be exceeded"  # the limit clause's text (`scheduling/reasons.py`)
VOLUME_TEXTS = ("volume", "persistentvolumeclaim")  # the volume clauses (`scheduling/volumes.py`)


def reason_kind(why: str, reason: Reason | None = None) -> str:
    """The blocker category of the scheduler's reason for a pod that would not schedule: its
    clauses' stages when the scheduler explained it (`Reason`), else its text."""
    if reason is not None and reason.clauses:
        if all("limits" in c.stages for c in reason.clauses):
            return LIMITS
    elif LIMIT_TEXT in why:
        return LIMITS
    if any(text in why for text in VOLUME_TEXTS):
        return VOLUME
    return UNSCHEDULABLE


@dataclass(frozen=True, slots=True)
class Blocker:
    kind: str
    message: str
    pod: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "message": self.message}
        if self.pod:
            out["pod"] = self.pod
        return out


@dataclass(frozen=True, slots=True)
class Destination:
    """Where one pod would go: an existing node (`node`) or new node number `new_node`."""

    pod: str
    node: str = ""
    new_node: int = -1

    def to_json(self) -> dict[str, Any]:
        if self.node:
            return {"pod": self.pod, "kind": "existing", "node": self.node}
        return {"pod": self.pod, "kind": "new", "newNode": self.new_node}


@dataclass(frozen=True)
class NodeExplanation:
    node: str
    found: bool
    price: float | None = None
    instance_type: str = ""
    provisioner: str = ""
    destinations: tuple[Destination, ...] = ()
    new_nodes: tuple[NewNode, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    consolidation: str = ""  # "delete", "replace" or "" (then `consolidation_why_not` says why)
    consolidation_why_not: str = ""
    removable: bool = False  # every pod has a destination and nothing blocks eviction
    unblocked_saving: float | None = None  # what consolidation would save per hour without the blockers
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def price_after(self) -> float | None:
        prices = [n.launch.price if n.launch is not None else None for n in self.new_nodes]
        return None if any(p is None for p in prices) else sum(p for p in prices if p is not None)

    def to_json(self) -> dict[str, Any]:
        after = self.price_after
        saving = None if self.price is None or after is None else round(self.price - after, 6)
        return {
            "node": self.node,
            "found": self.found,
            "provisioner": self.provisioner,
            "instanceType": self.instance_type,
            "pricePerHour": self.price,
            "priceAfterPerHour": after,
            "savingPerHour": saving,
            "removable": self.removable,
            "consolidation": {"action": self.consolidation, "whyNot": self.consolidation_why_not},
            "destinations": [d.to_json() for d in self.destinations],
            "newNodes": [new_node_json(i, n) for i, n in enumerate(self.new_nodes)],
            "blockers": [b.to_json() for b in self.blockers],
            **self.extra,
        }


def new_node_json(index: int, node: NewNode) -> dict[str, Any]:
    launch = node.launch
    return {
        "index": index,
        "provisioner": node.provisioner,
        "instanceType": launch.instance_type.name if launch is not None else "",
        "zone": launch.zone if launch is not None else "",
        "capacityType": launch.capacity_type if launch is not None else "",
        "pricePerHour": launch.price if launch is not None else None,
        "options": [it.name for it in node.instance_type_options[:10]],
        "pods": [p.key for p in node.pods],
    }


def eviction_blockers(node: NodeView, inputs: Inputs) -> list[Blocker]:
    """Every pod a PDB allowing no disruption selects, and every do-not-evict pod (the
    predicates of `candidates.blocked_reason`, listed in full instead of the first one)."""
    pods = node.movable_pods()
    out = []
    for pod in pods:
        for pdb in inputs.pdbs:
            if pdb.disruptions_allowed <= 0 and pdb.matches(pod):
                out.append(Blocker(PDB, f"pdb {pdb.namespace}/{pdb.name} prevents pod evictions", pod.key))
    out += [Blocker(DO_NOT_EVICT, f"pod {p.key} has do not evict annotation", p.key) for p in pods if p.do_not_evict]
    return out


def liftable_blockers(node: NodeView, inputs: Inputs) -> list[Blocker]:
    """The blockers a user can lift (PDB, do-not-evict, the consolidation opt-outs): cheap, no
    simulation; the savings page simulates only the nodes that have one."""
    return eviction_blockers(node, inputs) + _consolidation_blockers(node, inputs)


def _consolidation_blockers(node: NodeView, inputs: Inputs) -> list[Blocker]:
    why = consolidation_blocker(node, inputs)
    if why is None:
        return []
    return [Blocker(DO_NOT_CONSOLIDATE if L.DO_NOT_CONSOLIDATE in why else CONSOLIDATION_DISABLED, why)]


def explain_node(inputs: Inputs, name: str, scheduler: Scheduler) -> NodeExplanation:
    """What removing node `name` would do now (see the module docstring)."""
    node = inputs.node(name)
    if node is None:
        return NodeExplanation(name, found=False)
    labels = node.labels
    base = NodeExplanation(
        name, True, provisioner=labels.get(L.PROVISIONER_NAME, ""), instance_type=labels.get(L.INSTANCE_TYPE, "")
    )
    if node.marked_for_deletion or node.deleting:
        return replace(base, blockers=(Blocker(DELETING, "the node is already being deleted"),))
    cand = new_candidate(node, inputs)
    if cand is None:
        blockers = [Blocker(NOT_CANDIDATE, not_candidate_reason(node, inputs))]
        return replace(base, blockers=tuple(blockers + eviction_blockers(node, inputs)))
    blockers = eviction_blockers(node, inputs) + _consolidation_blockers(node, inputs)
    sim = simulate(inputs, [cand], scheduler)
    if sim is None:
        return replace(base, price=cand.price, blockers=(Blocker(DELETING, "the node is already being deleted"),))
    moving = {p.key for p in cand.pods}
    placed: dict[str, Destination] = {}
    for node_name, keys in sim.result.existing_assignments.items():
        placed.update({k: Destination(k, node=node_name) for k in keys if k in moving})
    new_nodes = tuple(n for n in sim.new_nodes if any(p.key in moving for p in n.pods))
    for i, new in enumerate(new_nodes):
        placed.update({p.key: Destination(p.key, new_node=i) for p in new.pods if p.key in moving})
    for key, why in sorted(sim.errors.items()):
        placed.pop(key, None)
        blockers.append(Blocker(reason_kind(why, sim.result.reasons.get(key)), why, key))
    result = compute_consolidation(inputs, [cand], scheduler)
    unblocked = result.command
    saving = None
    if unblocked is not None and unblocked.price_before is not None and unblocked.price_after is not None:
        saving = round(unblocked.price_before - unblocked.price_after, 6)
    command = unblocked if not blockers else None
    why_not = "; ".join(b.message for b in blockers) if blockers else result.why_not
    return replace(
        base,
        price=cand.price,
        destinations=tuple(placed[k] for k in sorted(placed)),
        new_nodes=new_nodes,
        blockers=tuple(blockers),
        consolidation=command.action.value if command is not None else "",
        consolidation_why_not="" if command is not None else why_not,
        removable=not blockers or all(b.kind in (DO_NOT_CONSOLIDATE, CONSOLIDATION_DISABLED) for b in blockers),
        unblocked_saving=saving,
    )
