"""Render a `SchedulingResult` as design.md's `karpy simulate` JSON or as a readable table.

Pure: result in, text or plain dicts out. A new node's `allocatable` is its launched instance
type's allocatable under the provisioner's kubeletConfiguration (the scheduler's types already
have it applied); `labels` are what the node would carry once launched.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from controller.core.resources import CPU, MEMORY, format_resource, format_resources
from controller.core.taints import taint_to_wire
from controller.scheduling.scheduler import planned_labels
from controller.scheduling.types import NewNode, SchedulingResult


def node_json(node: NewNode) -> dict[str, Any]:
    launch = node.launch
    return {
        "name": node.name,
        "provisioner": node.provisioner,
        "instanceType": launch.instance_type.name if launch else None,
        "capacityType": launch.capacity_type if launch else None,
        "zone": launch.zone if launch else None,
        "pricePerHour": launch.price if launch else None,
        "labels": planned_labels(node),
        "taints": [taint_to_wire(t) for t in (*node.taints, *node.startup_taints)],
        "allocatable": format_resources(launch.instance_type.allocatable) if launch else {},
        "pods": [p.key for p in node.pods],
    }


def total_price(result: SchedulingResult) -> float:
    return round(sum(n.launch.price for n in result.new_nodes if n.launch is not None), 4)


def to_json(result: SchedulingResult) -> dict[str, Any]:
    return {
        "nodes": [node_json(n) for n in result.new_nodes],
        "existingNodes": [{"name": name, "pods": list(pods)} for name, pods in result.existing_assignments.items()],
        "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in sorted(result.unschedulable.items())],
        "totalPricePerHour": total_price(result),
    }


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def _human(resource: str, value: int) -> str:
    if resource == CPU:
        return f"{value / 1000:g}"
    if resource == MEMORY:
        return f"{value / 2**30:.1f}Gi"
    return format_resource(resource, value)


def _usage(node: NewNode, resource: str) -> str:
    if node.launch is None:
        return "-"
    have = node.launch.instance_type.allocatable.get(resource, 0)
    used = node.requests.get(resource, 0)
    pct = f" ({100 * used / have:.0f}%)" if have else ""
    return f"{_human(resource, used)}/{_human(resource, have)}{pct}"


def to_table(result: SchedulingResult) -> str:
    out = [f"New nodes: {len(result.new_nodes)}, ${total_price(result):.4f}/hour"]
    rows = []
    for n in result.new_nodes:
        launch = n.launch
        rows.append(
            [
                n.name,
                n.provisioner,
                launch.instance_type.name if launch else "-",
                launch.capacity_type if launch else "-",
                launch.zone if launch else "-",
                f"{launch.price:.4f}" if launch else "-",
                _usage(n, CPU),
                _usage(n, MEMORY),
                str(len(n.pods)),
            ]
        )
    out += _table(["NAME", "PROVISIONER", "TYPE", "CAPACITY", "ZONE", "$/HOUR", "CPU", "MEMORY", "PODS"], rows)
    by_type = Counter(
        (n.launch.instance_type.name, n.launch.capacity_type) for n in result.new_nodes if n.launch is not None
    )
    if by_type:
        out.append("")
        out.append("By instance type: " + ", ".join(f"{t} {c} x{k}" for (t, c), k in sorted(by_type.items())))
    if result.existing_assignments:
        out.append("")
        out.append("Existing nodes:")
        out += _table(
            ["NAME", "NEW PODS"],
            [[name, ", ".join(pods)] for name, pods in result.existing_assignments.items()],
        )
    out.append("")
    if result.unschedulable:
        out.append(f"Unschedulable pods: {len(result.unschedulable)}")
        out += _table(["POD", "REASON"], [[pod, reason] for pod, reason in sorted(result.unschedulable.items())])
    else:
        out.append("Unschedulable pods: none")
    return "\n".join(out) + "\n"
