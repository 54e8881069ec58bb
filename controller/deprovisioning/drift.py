"""Drift: replace nodes that no longer match their Provisioner or AWSNodeTemplate (spec §6.5).

Pure. Karpenter v0.31 behind `featureGates.driftEnabled` (karpy: `--drift-enabled`, off by
default as in Karpenter). A node is drifted (`node_drift`, checked in Karpenter's order) when:

1. its Provisioner's static fields changed since launch — the node's
   `karpenter.sh/provisioner-hash` is not the Provisioner's hash now (`ProvisionerDrifted`);
2. its labels no longer meet the Provisioner's requirements (`RequirementsDrifted`);
3. its AWSNodeTemplate's static fields changed — `karpenter.k8s.aws/nodetemplate-hash`
   (`NodeTemplateDrift`); only for a template named by `providerRef` (or the provider's
   default), an inline `spec.provider` never drifts a node;
4. the cloud says so (`CloudProvider.is_drifted`, asked by `driftcheck.py`): AMI, subnet or
   security groups no longer selected.

A node without a hash, or stamped by another version of the hash's canonical form, is not drifted
by it (`apis/drifthash.py`); the latter is re-stamped (`drift_annotations`).

Marker (`drift_annotations`, Karpenter's node drift marker): writes
`karpenter.sh/voluntary-disruption: drifted` on a drifted node, removes it when the node is no
longer drifted (or the switch is off); leaves a node alone whose annotation has another value
(e.g. `expired`), and a node whose cloud answer is unknown keeps its annotation.

Method (`Drift`, after expiration, before emptiness): the candidates annotated `drifted` (a
user's annotation too) unless known to be back in line — then the marker removes the annotation,
as Karpenter's does — filtered (PDB, do-not-evict), oldest first. Empty ones
are deleted together; otherwise the first whose simulation places every pod that must move is
replaced by the nodes the simulation launches (none: deleted), one node per pass; a node whose
pods would not all find a place waits, with a `DeprovisioningBlocked` event (v0.31's rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from controller.apis.drifthash import HashState, static_drift
from controller.apis.provisioner import Provisioner
from controller.cloudprovider import drift as cloud
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.deprovisioning.candidates import candidates, filter_candidates
from controller.deprovisioning.events import blocked
from controller.deprovisioning.simulation import simulate
from controller.deprovisioning.types import DRIFT, Annotate, Candidate, Command, Inputs, Proposal, Scheduler
from controller.state.snapshot import NodeView

DRIFTED = L.VOLUNTARY_DISRUPTION_DRIFTED
SIMULATION_FAILED = "Scheduling simulation failed to schedule all pods"


def requirements_drift(node: NodeView, provisioner: Provisioner) -> cloud.Drift | None:
    """The node's labels no longer meet its Provisioner's requirements (Karpenter's Compatible)."""
    wanted = Requirements.from_wire(r.to_wire() for r in provisioner.requirements)
    errors = Requirements.from_labels(node.labels).compatible_errors(wanted)
    if not errors:
        return None
    return cloud.Drift(
        cloud.DriftReason.REQUIREMENTS,
        f"its labels no longer meet the requirements of Provisioner {provisioner.name}: {'; '.join(errors)}",
    )


def static_drifts(node: NodeView, provisioner: Provisioner, inputs: Inputs) -> Iterator[cloud.Drift]:
    """The drifts found without asking the cloud, in Karpenter's order."""
    now = inputs.stamps[provisioner.name]
    if static_drift(node.annotations, now.provisioner) is HashState.DRIFTED:
        yield cloud.Drift(
            cloud.DriftReason.PROVISIONER, f"Provisioner {provisioner.name} changed since the node was launched"
        )
    found = requirements_drift(node, provisioner)
    if found is not None:
        yield found
    template = inputs.drift.templates.get(provisioner.name)
    if (
        template is not None
        and now.template is not None
        and static_drift(node.annotations, now.template) is (HashState.DRIFTED)
    ):
        yield cloud.Drift(
            cloud.DriftReason.NODE_TEMPLATE, f"AWSNodeTemplate {template.name} changed since the node was launched"
        )


def node_drift(node: NodeView, inputs: Inputs) -> cloud.Drift | None:
    """Why `node` is drifted now (None: not drifted, or not known to be)."""
    provisioner = inputs.provisioners.get(node.labels.get(L.PROVISIONER_NAME, ""))
    if provisioner is None:
        return None
    found = next(static_drifts(node, provisioner, inputs), None)
    return found if found is not None else inputs.drift.cloud.get(node.name)


def _restamps(node: NodeView, provisioner: Provisioner, inputs: Inputs) -> Iterator[Annotate]:
    now = inputs.stamps[provisioner.name]
    for stamp in (now.provisioner, now.template):
        if stamp is None:
            continue
        if static_drift(node.annotations, stamp) is HashState.RESTAMP:
            yield from (Annotate(node.name, k, v) for k, v in stamp.items())


def drift_annotations(inputs: Inputs) -> Iterator[Annotate]:
    """The drift marker's writes for this pass (see the module docstring)."""
    for node in inputs.nodes:
        provisioner = inputs.provisioners.get(node.labels.get(L.PROVISIONER_NAME, ""))
        if provisioner is None or node.deleting:
            continue
        yield from _restamps(node, provisioner, inputs)
        marker = node.annotations.get(L.VOLUNTARY_DISRUPTION)
        if marker not in (None, DRIFTED):
            continue
        if not inputs.drift.enabled:
            if marker == DRIFTED:
                yield Annotate(node.name, L.VOLUNTARY_DISRUPTION, None)
            continue
        found = node_drift(node, inputs)
        if found is not None and marker is None:
            yield Annotate(node.name, L.VOLUNTARY_DISRUPTION, DRIFTED)
        elif found is None and marker == DRIFTED and node.name in inputs.drift.cloud:
            yield Annotate(node.name, L.VOLUNTARY_DISRUPTION, None)


def is_drifted(cand: Candidate, inputs: Inputs) -> bool:
    """The method's predicate: the switch is on, the node is annotated `drifted`, and it is not
    known to have come back in line (the marker removes the annotation of such a node this pass)."""
    if not inputs.drift.enabled or cand.node.annotations.get(L.VOLUNTARY_DISRUPTION) != DRIFTED:
        return False
    return cand.name not in inputs.drift.cloud or node_drift(cand.node, inputs) is not None


@dataclass(frozen=True)
class Drift:
    name: str = DRIFT
    method: str = DRIFT
    needs_validation: bool = False

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        if not inputs.drift.enabled:
            return Proposal()
        found = candidates(inputs, lambda c: is_drifted(c, inputs))
        kept, events = filter_candidates(found, inputs)
        empty = tuple(c for c in kept if not c.pods)
        if empty:
            return Proposal(Command(DRIFT, empty), tuple(events), len(kept))
        for cand in kept:
            sim = simulate(inputs, [cand], scheduler)
            if sim is None:
                continue
            if not sim.all_scheduled:
                events.append(blocked(cand.name, SIMULATION_FAILED))
                continue
            return Proposal(Command(DRIFT, (cand,), sim.new_nodes), tuple(events), len(kept))
        return Proposal(events=tuple(events), eligible=len(kept))
