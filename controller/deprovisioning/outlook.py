"""What would happen to each node now: the dashboard's "why (not) this node" answer.

Pure. `node_outlooks()` reads one pass's `Inputs`, the last pass's `PassResult`, the
command in progress and the last consolidation pass's per-node reasons, and gives every owned
node one `Outlook`: a `verdict` and a sentence (and, for a drifted node, the `Drift` as fields).
It reuses the strategies' own predicates (`new_candidate`, `blocked_reason`, `is_expired`,
`node_drift`/`is_drifted`, `empty_past_ttl`, `consolidation_blocker`), so
the page says what the controller would do, not a second opinion. Neighbours: `decide.py` (the
decision it explains), `controller/insight.py` (serves it over HTTP).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.cloudprovider.drift import Drift
from controller.core import labels as L
from controller.core.timestamps import format_timestamp
from controller.deprovisioning.candidates import blocked_reason, expiration_time, new_candidate
from controller.deprovisioning.consolidation import consolidation_blocker
from controller.deprovisioning.decide import PassResult
from controller.deprovisioning.drift import is_drifted, node_drift
from controller.deprovisioning.emptiness import empty_past_ttl, empty_since
from controller.deprovisioning.events import UNCONSOLIDATABLE
from controller.deprovisioning.expiration import is_expired
from controller.deprovisioning.types import Candidate, Command, Inputs
from controller.state.snapshot import NodeView

DELETING = "deleting"  # being deleted or replaced now
EXPIRE = "expire"  # expired: will be replaced
DRIFTED = "drifted"  # drifted from its Provisioner or AWSNodeTemplate: will be replaced
EMPTY = "empty"  # empty: will be deleted when the emptiness TTL passes
CONSOLIDATE = "consolidate"  # chosen by consolidation, waiting for validation
BLOCKED = "blocked"  # would be disrupted, but a pod or PDB blocks it
KEPT = "kept"  # stays: the reason says why
NOT_CANDIDATE = "not-candidate"  # not eligible for any disruption yet


@dataclass(frozen=True, slots=True)
class Outlook:
    verdict: str
    reason: str
    expires: str = ""  # RFC 3339, when the provisioner has ttlSecondsUntilExpired
    drift: Drift | None = None  # why the node drifted, when it did

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "reason": self.reason}
        if self.expires:
            out["expires"] = self.expires
        if self.drift is not None:
            out["drift"] = self.drift.to_json()
        return out


@dataclass(frozen=True, slots=True)
class Underway:
    """The commands under way between passes: the one pending validation and the one executing."""

    pending: Command | None = None
    pending_until: float | None = None
    executing: Command | None = None


def not_candidate_reason(node: NodeView, inputs: Inputs) -> str:
    """Why `node` is not a disruption candidate at all (`candidates.new_candidate` said None);
    also `karpy explain node`'s `not-candidate` blocker."""
    labels = node.labels
    prov_name = labels.get(L.PROVISIONER_NAME, "")
    if prov_name not in inputs.provisioners:
        return f"provisioner {prov_name} is missing or invalid"
    if not labels.get(L.CAPACITY_TYPE) or not labels.get(L.ZONE):
        return "the node lacks its capacity-type or zone label"
    types = inputs.instance_types.get(prov_name, ())
    if not any(it.name == labels.get(L.INSTANCE_TYPE) for it in types):
        return f"instance type {labels.get(L.INSTANCE_TYPE)} is no longer offered to provisioner {prov_name}"
    if node.nominated:
        return "nominated for pending pods"
    if not node.initialized:
        return "not initialized yet (waiting for Ready)"
    return "not eligible for disruption"


def _in(cmd: Command | None, name: str) -> bool:
    return cmd is not None and name in cmd.node_names


def node_outlook(node: NodeView, inputs: Inputs, underway: Underway, unconsolidatable: Mapping[str, str]) -> Outlook:
    """One node's outlook (see the module docstring); the checks follow the strategies' order."""
    if node.deleting:
        return Outlook(DELETING, "being deleted: its pods are drained, then the instance is terminated")
    if _in(underway.executing, node.name):
        assert underway.executing is not None
        return Outlook(DELETING, f"being removed by {underway.executing.reason}: {underway.executing}")
    if node.marked_for_deletion:
        return Outlook(DELETING, "marked for deletion")
    cand = new_candidate(node, inputs)
    if cand is None:
        return Outlook(NOT_CANDIDATE, not_candidate_reason(node, inputs))
    expires = expiration_time(cand)
    found = _disruption(cand, inputs, underway, unconsolidatable)
    return Outlook(found.verdict, found.reason, format_timestamp(expires) if expires is not None else "", found.drift)


def _disruption(cand: Candidate, inputs: Inputs, underway: Underway, unconsolidatable: Mapping[str, str]) -> Outlook:
    now, blocked = inputs.now, blocked_reason(cand, inputs)
    if is_expired(cand, now):
        if blocked:
            return Outlook(BLOCKED, f"expired, but it cannot be disrupted: {blocked}")
        return Outlook(EXPIRE, "expired (ttlSecondsUntilExpired): it will be replaced")
    drift = node_drift(cand.node, inputs) if inputs.drift.enabled else None
    if drift is not None or is_drifted(cand, inputs):
        why = f"drifted: {drift.message}" if drift is not None else f"drifted ({L.VOLUNTARY_DISRUPTION}=drifted)"
        if blocked:
            return Outlook(BLOCKED, f"{why}, but it cannot be disrupted: {blocked}", drift=drift)
        return Outlook(DRIFTED, f"{why}: it will be replaced", drift=drift)
    ttl = cand.provisioner.ttl_seconds_after_empty
    stamp = cand.node.annotations.get(L.EMPTINESS_TIMESTAMP)
    if ttl is not None and not cand.pods and stamp is not None:
        if empty_past_ttl(cand, now):
            return Outlook(EMPTY, "empty for longer than ttlSecondsAfterEmpty: it will be deleted")
        since = empty_since(cand)
        if since is not None:
            when = f"empty since {format_timestamp(since)}: deleted at {format_timestamp(since + ttl)}"
            return Outlook(EMPTY, when)
    if _in(underway.pending, cand.name):
        assert underway.pending is not None
        until = f" at {format_timestamp(underway.pending_until)}" if underway.pending_until is not None else ""
        action = underway.pending.action.value
        return Outlook(CONSOLIDATE, f"consolidation ({action}) chosen; validation wait ends{until}, then re-checked")
    why_not = consolidation_blocker(cand.node, inputs)
    if why_not is not None:
        return Outlook(KEPT, f"not consolidated: {why_not}")
    if blocked:
        return Outlook(BLOCKED, f"cannot be disrupted: {blocked}")
    if cand.name in unconsolidatable:
        return Outlook(KEPT, f"not consolidated: {unconsolidatable[cand.name]}")
    if inputs.consolidated:
        return Outlook(KEPT, "not consolidated: the last consolidation pass found no cheaper placement")
    return Outlook(KEPT, "not consolidated: no cheaper placement found yet")


def node_outlooks(inputs: Inputs, underway: Underway, unconsolidatable: Mapping[str, str]) -> dict[str, Outlook]:
    """Every owned node's outlook, by node name."""
    return {n.name: node_outlook(n, inputs, underway, unconsolidatable) for n in inputs.nodes}


def underway_of(decision: PassResult | None, executing: Command | None, wait_seconds: float) -> Underway:
    """The commands under way (`Underway`) from the controller's last decision and the command it is executing."""
    if decision is None or decision.pending is None:
        return Underway(executing=executing)
    pending = decision.pending
    return Underway(pending.command, pending.since + wait_seconds, executing)


def unconsolidatable_reasons(decision: PassResult) -> dict[str, str]:
    """Per-node reasons a consolidation pass gave for leaving nodes alone."""
    return {e.node: e.message for e in decision.events if e.reason == UNCONSOLIDATABLE}
