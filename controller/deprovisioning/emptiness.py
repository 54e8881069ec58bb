"""Emptiness: the emptiness-timestamp marker and TTL-based deletion of empty nodes (spec §6.1, §6.3).

Pure. `emptiness_annotations()` is the node marker: for every initialized, owned node whose
provisioner has `ttlSecondsAfterEmpty`, set `karpenter.sh/emptiness-timestamp` (RFC 3339) when
it becomes empty, remove it when pods come back; a nominated node is left alone. `Emptiness`
deletes, all at once and without validation wait, every candidate that has been empty for longer
than the TTL (an unparsable timestamp counts as expired).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.core import labels as L
from controller.core.timestamps import format_timestamp, parse_timestamp
from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.types import EMPTINESS, Annotate, Candidate, Command, Inputs, Proposal, Scheduler
from controller.state.snapshot import NodeView


def is_empty(node: NodeView) -> bool:
    """Every readable bound pod is terminal, DaemonSet-owned or Node-owned (terminating pods
    still count)."""
    return all(
        p.request is None or p.request.terminal or p.request.owner_kind in ("DaemonSet", "Node") for p in node.pods
    )


def emptiness_annotations(inputs: Inputs) -> list[Annotate]:
    out = []
    for node in inputs.nodes:
        prov = inputs.provisioners.get(node.provisioner or "")
        if prov is None or prov.ttl_seconds_after_empty is None:
            continue
        if node.deleting or not node.initialized or node.nominated:
            continue
        marked = L.EMPTINESS_TIMESTAMP in node.annotations
        empty = is_empty(node)
        if empty and not marked:
            out.append(Annotate(node.name, L.EMPTINESS_TIMESTAMP, format_timestamp(inputs.now)))
        elif marked and not empty:
            out.append(Annotate(node.name, L.EMPTINESS_TIMESTAMP, None))
    return out


def empty_since(cand: Candidate) -> float | None:
    """When the emptiness marker says the node became empty (None: not marked, or unreadable)."""
    return parse_timestamp(cand.node.annotations.get(L.EMPTINESS_TIMESTAMP))


def empty_past_ttl(cand: Candidate, now: float) -> bool:
    ttl = cand.provisioner.ttl_seconds_after_empty
    stamp = cand.node.annotations.get(L.EMPTINESS_TIMESTAMP)
    if ttl is None or cand.pods or stamp is None:
        return False
    since = empty_since(cand)
    return since is None or now > since + ttl


@dataclass(frozen=True)
class Emptiness:
    name: str = EMPTINESS
    method: str = EMPTINESS
    needs_validation: bool = False

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        found = candidates(inputs, lambda c: empty_past_ttl(c, inputs.now))
        if not found:
            return Proposal()
        return Proposal(Command(EMPTINESS, tuple(found)), eligible=len(found))
