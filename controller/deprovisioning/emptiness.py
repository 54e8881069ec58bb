"""Emptiness: the emptiness-timestamp marker and TTL-based deletion of empty nodes (spec §6.1, §6.3).

Pure. `emptiness_annotations()` is the node marker: for every initialized, owned node whose
provisioner has `ttlSecondsAfterEmpty`, set `karpenter.sh/emptiness-timestamp` (RFC 3339) when
it becomes empty, remove it when pods come back; a nominated node is left alone. `Emptiness`
deletes, all at once and without validation wait, every candidate that has been empty for longer
than the TTL (an unparsable timestamp counts as expired).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from controller.core import labels as L
from controller.core.timestamps import format_timestamp, parse_datetime
from controller.deprovisioning.candidates import candidates
from controller.deprovisioning.commands import EMPTINESS, Annotate, Command
from controller.deprovisioning.strategy import Outcome
from controller.deprovisioning.types import Candidate, NodeInfo, Scheduler, Snapshot


def is_empty(node: NodeInfo) -> bool:
    """Every bound pod is terminal, DaemonSet-owned or Node-owned (terminating pods still count)."""
    return all(p.request.terminal or p.request.owner_kind in ("DaemonSet", "Node") for p in node.pods)


def emptiness_annotations(snapshot: Snapshot) -> list[Annotate]:
    out = []
    for node in snapshot.nodes:
        prov = snapshot.provisioners.get(node.provisioner_name or "")
        if prov is None or prov.provisioner.ttl_seconds_after_empty is None:
            continue
        if node.deleting or not node.state.initialized or node.nominated:
            continue
        marked = L.EMPTINESS_TIMESTAMP in node.annotations
        empty = is_empty(node)
        if empty and not marked:
            out.append(Annotate(node.name, L.EMPTINESS_TIMESTAMP, format_timestamp(snapshot.now.timestamp())))
        elif marked and not empty:
            out.append(Annotate(node.name, L.EMPTINESS_TIMESTAMP, None))
    return out


def empty_past_ttl(cand: Candidate, now: datetime) -> bool:
    ttl = cand.provisioner.provisioner.ttl_seconds_after_empty
    stamp = cand.node.annotations.get(L.EMPTINESS_TIMESTAMP)
    if ttl is None or cand.pods or stamp is None:
        return False
    since = parse_datetime(stamp)
    return since is None or now > since + timedelta(seconds=ttl)


@dataclass(frozen=True)
class Emptiness:
    name: str = EMPTINESS
    method: str = EMPTINESS
    needs_validation: bool = False

    def compute(self, snapshot: Snapshot, scheduler: Scheduler) -> Outcome:
        found = candidates(snapshot, lambda c: empty_past_ttl(c, snapshot.now))
        if not found:
            return Outcome()
        return Outcome(Command(EMPTINESS, tuple(found)), eligible=len(found))
