"""The deprovisioning cordon: marked on the node, so that a cordon no command holds is lifted.

A replace command cordons its candidates before it launches their replacements (spec §6.7). The
command itself lives only in the controller's memory, so a controller killed between the cordon
and the delete would leave the nodes cordoned for good. karpy decision: the cordon is written
with the `karpy.sh/deprovisioning-cordon` annotation in one patch (`cordon_patch`); every pass,
the deprovisioning controller lifts the cordon of each marked node that `stale_cordons` names —
not being deleted (termination owns that cordon), not in flight, not a candidate of the command
in progress. Lifting (`uncordon_patch`) is conditional on the resourceVersion the decision saw:
a node changed since (deleted meanwhile, say) is a conflict, and the next pass decides again.
Pure. Neighbours: `controller.py` (acts), `provisioning/nodes.py` (the binding hold, the other
cordon karpy sets: a held node stays cordoned until provisioning releases it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from controller.core.labels import DEPROVISIONING_CORDON
from controller.state.snapshot import NodeView


def cordon_patch() -> dict[str, Any]:
    """Cordon and mark, in one merge patch."""
    return {"spec": {"unschedulable": True}, "metadata": {"annotations": {DEPROVISIONING_CORDON: "true"}}}


def uncordon_patch(resource_version: str = "", keep_cordoned: bool = False) -> dict[str, Any]:
    """Remove the mark and (unless `keep_cordoned`, for a node another cordon holds) the cordon;
    with a `resource_version`, only if the node is still at that version."""
    meta: dict[str, Any] = {"annotations": {DEPROVISIONING_CORDON: None}}
    if resource_version:
        meta["resourceVersion"] = resource_version
    patch: dict[str, Any] = {"metadata": meta}
    if not keep_cordoned:
        patch["spec"] = {"unschedulable": None}
    return patch


def stale_cordons(nodes: Iterable[NodeView], in_progress: Collection[str]) -> list[NodeView]:
    """Marked nodes whose cordon no command holds any more, by name."""
    return sorted(
        (
            n for n in nodes
            if DEPROVISIONING_CORDON in n.annotations and not n.deleting and not n.in_flight
            and n.name not in in_progress
        ),
        key=lambda n: n.name,
    )  # fmt: skip
