"""The nodes pages' data (pure): the table with sorting and filtering, and one node's detail.

Every column of the table can sort (`sort=<column>&order=desc`) and filter (`<column>=<value>`,
exact); `q=` matches text in any column; `label=key` or `label=key=value` filters by label.
Nodes karpy does not manage are listed apart. A node's detail adds its pods with their
requests, taints, conditions, and what the controller would do with it now.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.state.snapshot import NodeView
from webapp.dashboard.common import iso, node_row, pod_cpu_memory
from webapp.dashboard.source import DashboardInputs

COLUMNS: dict[str, str] = {
    "name": "Name",
    "provisioner": "Provisioner",
    "instanceType": "Instance type",
    "capacityType": "Capacity",
    "zone": "Zone",
    "ageSeconds": "Age",
    "pricePerHour": "$/hour",
    "cpu": "CPU",
    "memory": "Memory",
    "pods": "Pods",
    "status": "Status",
    "outlook": "Would happen now",
}
TEXT_COLUMNS = ("name", "provisioner", "instanceType", "capacityType", "zone", "status")


class QueryError(ValueError):
    """A bad sort, order or filter parameter (the message names it)."""


def _sort_key(column: str) -> Any:
    def key(row: Mapping[str, Any]) -> Any:
        value = row[column]
        if column in ("cpu", "memory", "pods"):
            return (0, value["fraction"])
        if column == "outlook":
            return (0, (value or {}).get("verdict", ""))
        if value is None:
            return (1, 0)
        return (0, value)

    return key


def _matches(row: Mapping[str, Any], args: Mapping[str, str]) -> bool:
    for column in TEXT_COLUMNS:
        if column in args and str(row[column]) != args[column]:
            return False
    text = args.get("q", "").lower()
    haystack = [str(row[c]).lower() for c in TEXT_COLUMNS] + [str((row["outlook"] or {}).get("reason", "")).lower()]
    if text and not any(text in value for value in haystack):
        return False
    label = args.get("label", "")
    if label:
        key, _, value = label.partition("=")
        if key not in row["labels"] or ("=" in label and row["labels"][key] != value):
            return False
    return True


def nodes_page(inputs: DashboardInputs, args: Mapping[str, str]) -> dict[str, Any]:
    sort, order = args.get("sort", "name"), args.get("order", "asc")
    if sort not in COLUMNS:
        raise QueryError(f"sort: unknown column {sort!r}; use one of {', '.join(COLUMNS)}")
    if order not in ("asc", "desc"):
        raise QueryError("order: use asc or desc")
    snap = inputs.snapshot
    rows = [node_row(n, inputs.controller, snap.now) for n in snap.nodes.values()]
    for name, entry in inputs.controller.nodes.items():
        if name not in snap.nodes and entry.get("inFlight"):
            rows.append(_launching_row(name, entry))
    shown = sorted((r for r in rows if _matches(r, args)), key=lambda r: r["name"])
    shown.sort(key=_sort_key(sort), reverse=order == "desc")
    return {
        "managed": [r for r in shown if r["managed"]],
        "unmanaged": [r for r in shown if not r["managed"]],
        "total": len(rows),
        "sort": sort,
        "order": order,
        "filters": {k: v for k, v in args.items() if k in (*TEXT_COLUMNS, "q", "label") and v},
    }


def _launching_row(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """An instance the controller launched whose Node the API has not shown yet."""
    empty = {"requested": 0.0, "allocatable": 0.0, "fraction": 0.0}
    price = entry.get("pricePerHour")
    return {
        "name": name, "managed": True, "provisioner": "", "instanceType": "", "capacityType": "", "zone": "",
        "arch": "", "created": "", "ageSeconds": 0, "pricePerHour": price if isinstance(price, int | float) else None,
        "cpu": empty, "memory": empty, "pods": empty, "status": "Launching", "statusSince": "", "statusSeconds": 0,
        "cordoned": False, "deleting": False, "outlook": None, "labels": {},
    }  # fmt: skip


def _pod(pod: Any) -> dict[str, Any]:
    cpu, memory = pod_cpu_memory(pod)
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "phase": pod.phase,
        "owner": pod.owner_kind,
        "cpu": cpu,
        "memory": memory,
        "daemonset": pod.is_daemonset,
        "doNotEvict": pod.do_not_evict,
    }


def _conditions(node: NodeView) -> list[dict[str, str]]:
    out = []
    for c in (node.obj.get("status") or {}).get("conditions") or []:
        out.append({k: str(c.get(k) or "") for k in ("type", "status", "reason", "message", "lastTransitionTime")})
    return out


def node_page(inputs: DashboardInputs, name: str) -> dict[str, Any] | None:
    node = inputs.snapshot.nodes.get(name)
    if node is None:
        return None
    row = node_row(node, inputs.controller, inputs.snapshot.now)
    row.update(
        podList=[_pod(p) for p in node.pods],
        taints=[str(t) for t in node.taints],
        conditions=_conditions(node),
        providerID=node.provider_id,
        markedForDeletion=node.marked_for_deletion,
        deletionTimestamp=iso(node.deletion_timestamp),
    )
    return row
