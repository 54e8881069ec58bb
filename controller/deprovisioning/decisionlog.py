"""What deprovisioning writes to the shared `DecisionLog` (`controller/decisions.py`). Pure.

One `Decision` per command carried out — action `<method>/<delete|replace>`, subject the first
candidate, the command's text as reason, every candidate and replacement, and the hourly prices
before and after — and one per command that failed, with why.
"""

from __future__ import annotations

from controller.decisions import DEPROVISIONING_FAILED, Decision
from controller.deprovisioning.types import Command

CONTROLLER = "deprovisioning"


def _extra(cmd: Command) -> dict[str, object]:
    return {
        "method": cmd.deprovisioner,
        "nodes": list(cmd.node_names),
        "replacements": [r.launch.instance_type.name if r.launch is not None else r.name for r in cmd.replacements],
    }


def carried_out(cmd: Command) -> Decision:
    first = cmd.candidates[0] if cmd.candidates else None
    return Decision(
        CONTROLLER,
        cmd.reason,
        f"node/{first.name}" if first is not None else "node/",
        f"{cmd.deprovisioner}: {cmd}",
        provisioner=first.provisioner.name if first is not None else "",
        instance_type=first.instance_type.name if first is not None else "",
        zone=first.zone if first is not None else "",
        capacity_type=first.capacity_type if first is not None else "",
        price=cmd.price_before,
        price_before=cmd.price_before,
        price_after=cmd.price_after,
        extra=_extra(cmd),
    )


def failed(cmd: Command, why: str) -> Decision:
    first = cmd.node_names[0] if cmd.node_names else ""
    return Decision(
        CONTROLLER,
        DEPROVISIONING_FAILED,
        f"node/{first}",
        f"{cmd.reason}: {why}",
        price_before=cmd.price_before,
        price_after=cmd.price_after,
        extra=_extra(cmd),
    )
