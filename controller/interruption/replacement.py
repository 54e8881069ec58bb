"""Has an interrupted spot node's replacement capacity arrived? Pure.

On a spot interruption warning (two minutes before EC2 reclaims the instance) karpy marks the
node for deletion, so provisioning launches capacity for its pods at once, and drains it only
once that capacity is there (issue 10: "launching the replacement first"). The capacity is there
when every pod that would have to move fits, by karpy's own scheduler with no new node allowed,
on the other nodes that are initialized, schedulable and not themselves going away.
"""

from __future__ import annotations

from controller.scheduling.scheduler import schedule
from controller.state.schedulinginput import scheduling_input
from controller.state.snapshot import Snapshot


def replacement_missing(snap: Snapshot, node_name: str) -> str:
    """ "" when the pods of `node_name` have room elsewhere now; else which pods do not (yet)."""
    node = snap.nodes.get(node_name)
    if node is None:
        return ""
    pods = [p.request for p in node.movable_pods() if p.request is not None]
    if not pods:
        return ""
    others = [
        n.state_node() for n in snap.nodes.values()
        if n.name != node_name and n.initialized and not n.unschedulable and not n.marked_for_deletion
    ]  # fmt: skip
    result = schedule(scheduling_input(snap, pods, others))
    if not result.unschedulable:
        return ""
    keys = sorted(result.unschedulable)
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return f"no room yet for {', '.join(keys[:3])}{more}"
