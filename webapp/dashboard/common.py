"""Pure helpers every page shares: units, a node's row, usage fractions, cost.

Numbers in the JSON are plain units (CPU in cores, memory in bytes, prices in $ per hour);
`fmt_*` make the text the templates show. Nothing here reads a clock or does I/O: `now`
comes from the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from controller.core import labels as L
from controller.core.resources import CPU, MEMORY
from controller.core.timestamps import parse_timestamp
from controller.state.snapshot import NodeView, PodView, Snapshot
from webapp.dashboard.source import ControllerAnswers

HOURS_PER_MONTH = 730
LAUNCHING_SECONDS = 300.0  # a node that has never been Ready, younger than this, is still launching
UNMANAGED = "(not karpy)"


def iso(seconds: float | None) -> str:
    if not seconds:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def usage(requested: float, allocatable: float) -> dict[str, float]:
    fraction = round(requested / allocatable, 4) if allocatable > 0 else 0.0
    return {"requested": requested, "allocatable": allocatable, "fraction": fraction, "bar": min(fraction, 1.0)}


def pod_cpu_memory(pod: PodView) -> tuple[float, float]:
    req = pod.request.requests if pod.request is not None else {}
    return req.get(CPU, 0) / 1000.0, float(req.get(MEMORY, 0))


def node_requests(node: NodeView) -> tuple[float, float, int]:
    """CPU (cores), memory (bytes) and count of the pods occupying `node`."""
    cpu = memory = 0.0
    active = [p for p in node.pods if not p.terminal]  # daemonset and mirror pods included
    for pod in active:
        c, m = pod_cpu_memory(pod)
        cpu, memory = cpu + c, memory + m
    return cpu, memory, len(active)


def _ready_since(node: NodeView) -> float | None:
    for cond in (node.obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return parse_timestamp(cond.get("lastTransitionTime"))
    return None


def node_status(node: NodeView, now: float) -> tuple[str, float]:
    """("Ready" | "NotReady" | "Launching", since when)."""
    since = _ready_since(node)
    if node.ready:
        return "Ready", since or node.created
    if node.in_flight or (since is None and now - node.created < LAUNCHING_SECONDS):
        return "Launching", node.created
    return "NotReady", since or node.created


def node_price(node: NodeView, answers: ControllerAnswers) -> float | None:
    price = (answers.nodes.get(node.name) or {}).get("pricePerHour")
    return float(price) if isinstance(price, int | float) else None


def node_row(node: NodeView, answers: ControllerAnswers, now: float) -> dict[str, Any]:
    cpu, memory, pods = node_requests(node)
    status, since = node_status(node, now)
    outlook = (answers.nodes.get(node.name) or {}).get("outlook")
    return {
        "name": node.name,
        "managed": node.owned,
        "provisioner": node.provisioner or UNMANAGED,
        "instanceType": node.labels.get(L.INSTANCE_TYPE, ""),
        "capacityType": node.labels.get(L.CAPACITY_TYPE, ""),
        "zone": node.labels.get(L.ZONE, ""),
        "arch": node.labels.get(L.ARCH, ""),
        "created": iso(node.created),
        "ageSeconds": max(0, int(now - node.created)) if node.created else 0,
        "pricePerHour": node_price(node, answers),
        "cpu": usage(cpu, node.allocatable.get(CPU, 0) / 1000.0),
        "memory": usage(memory, float(node.allocatable.get(MEMORY, 0))),
        "pods": usage(float(pods), float(node.allocatable.get("pods", 0))),
        "status": status,
        "statusSince": iso(since),
        "statusSeconds": max(0, int(now - since)) if since else 0,
        "cordoned": node.unschedulable,
        "deleting": node.deleting,
        "outlook": dict(outlook) if isinstance(outlook, Mapping) else None,
        "labels": dict(node.labels),
    }


def cluster_cost(snapshot: Snapshot, answers: ControllerAnswers) -> float:
    """Σ hourly price of the nodes whose price the controller knows."""
    return round(sum(node_price(n, answers) or 0.0 for n in snapshot.nodes.values()), 6)


def totals(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    out = {"cpu": [0.0, 0.0], "memory": [0.0, 0.0], "pods": [0.0, 0.0]}
    for row in rows:
        for key, acc in out.items():
            acc[0] += row[key]["requested"]
            acc[1] += row[key]["allocatable"]
    return {key: usage(req, alloc) for key, (req, alloc) in out.items()}


def fmt_cpu(cores: float) -> str:
    return f"{cores:.2f}".rstrip("0").rstrip(".") if cores else "0"


def fmt_bytes(value: float) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}"
    return f"{int(value)}"


def fmt_duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    return f"{seconds // 86400}d{(seconds % 86400) // 3600}h"


def fmt_price(price: object) -> str:
    return f"${price:.4f}" if isinstance(price, int | float) else "—"
