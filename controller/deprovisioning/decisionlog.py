"""What deprovisioning writes to the shared `DecisionLog` (`controller/decisions.py`). Pure.

One `Decision` per command carried out — action `<method>/<delete|replace>`, subject the first
candidate, the command's text as reason, every candidate and replacement (`replacements`: their
instance types; `replacementNodes`: the Nodes launched for them, so the savings ledger can tell
when the command took effect), and the hourly prices before and after — recorded once the command
acts (its candidates deleted, or cordoned and their replacements launched), and one per command
that failed, with why. A drift command's decision
carries why each node drifted (`drift` in `extra`: reason and message per node, the messages in
its reason); `drifted()` records a node the drift marker annotated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.cloudprovider.drift import Drift
from controller.decisions import DEPROVISIONING_FAILED, DRIFTED, Decision
from controller.deprovisioning.types import Command

CONTROLLER = "deprovisioning"


def _extra(cmd: Command) -> dict[str, object]:
    return {
        "method": cmd.deprovisioner,
        "nodes": list(cmd.node_names),
        "replacements": [r.launch.instance_type.name if r.launch is not None else r.name for r in cmd.replacements],
    }


def carried_out(cmd: Command, drifts: Mapping[str, Drift] | None = None, launched: Sequence[str] = ()) -> Decision:
    """`drifts`: why each candidate drifted (a drift command's); `launched`: its replacement Nodes."""
    first = cmd.candidates[0] if cmd.candidates else None
    extra = _extra(cmd)
    extra["replacementNodes"] = list(launched)
    reason = f"{cmd.deprovisioner}: {cmd}"
    found = {n: drifts[n] for n in cmd.node_names if n in (drifts or {})} if drifts else {}
    if found:
        extra["drift"] = {n: d.to_json() for n, d in found.items()}
        reason += " (" + "; ".join(f"{n}: {d.message}" for n, d in found.items()) + ")"
    return Decision(
        CONTROLLER,
        cmd.reason,
        f"node/{first.name}" if first is not None else "node/",
        reason,
        provisioner=first.provisioner.name if first is not None else "",
        instance_type=first.instance_type.name if first is not None else "",
        zone=first.zone if first is not None else "",
        capacity_type=first.capacity_type if first is not None else "",
        price=cmd.price_before,
        price_before=cmd.price_before,
        price_after=cmd.price_after,
        extra=extra,
    )


def drifted(node: str, provisioner: str, drift: Drift) -> Decision:
    return Decision(
        CONTROLLER, DRIFTED, f"node/{node}", f"drifted: {drift.message}", provisioner=provisioner, extra=drift.to_json()
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
