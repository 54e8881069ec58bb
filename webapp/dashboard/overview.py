"""The overview and decisions pages' data (pure).

Overview: cost per hour and per month (× 730), nodes by provisioner, capacity type, zone and
instance type, packing of karpy's nodes (requests over allocatable), pending pods, the last
decisions, and the last hour of nodes and cost as two polylines for an inline SVG chart. Decisions: the
controller's log, newest first, filtered by controller or action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from webapp.dashboard.common import HOURS_PER_MONTH, cluster_cost, node_row, totals
from webapp.dashboard.source import HISTORY_SECONDS, DashboardInputs, Sample

CHART_WIDTH, CHART_HEIGHT = 600, 120
LAST_DECISIONS = 10
MIN_SPAN_SECONDS = 300.0


def _group(rows: Iterable[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], str]) -> list[dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(key(row) or "(none)", []).append(row)
    return [
        {"key": k, "nodes": len(v), "costPerHour": round(sum(r["pricePerHour"] or 0.0 for r in v), 6)}
        for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def _points(samples: Iterable[Sample], span: tuple[float, float], value: Callable[[Sample], float], top: float) -> str:
    start, end = span
    out = []
    for s in samples:
        x = (s.time - start) / (end - start) * CHART_WIDTH
        y = CHART_HEIGHT - (value(s) / top * (CHART_HEIGHT - 10) if top > 0 else 0)
        out.append(f"{x:.1f},{y:.1f}")
    return " ".join(out)


def chart(history: tuple[Sample, ...], now: float) -> dict[str, Any]:
    """The last hour (or, while the webapp is younger than that, since its first sample, at least
    `MIN_SPAN_SECONDS`) scaled to the chart; y from 0 to each series' maximum."""
    recent = [s for s in history if now - HISTORY_SECONDS <= s.time <= now]
    start = min((s.time for s in recent), default=now)
    span = (min(start, now - MIN_SPAN_SECONDS), now)
    max_nodes = max((s.nodes for s in recent), default=0)
    max_cost = max((s.cost for s in recent), default=0.0)
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "samples": [{"time": s.time, "nodes": s.nodes, "costPerHour": s.cost} for s in recent],
        "maxNodes": max_nodes,
        "maxCostPerHour": max_cost,
        "spanSeconds": int(span[1] - span[0]),
        "nodesPoints": _points(recent, span, lambda s: float(s.nodes), float(max_nodes)),
        "costPoints": _points(recent, span, lambda s: s.cost, max_cost),
    }


def overview_page(inputs: DashboardInputs) -> dict[str, Any]:
    snap = inputs.snapshot
    rows = [node_row(n, inputs.controller, snap.now) for n in snap.nodes.values()]
    cost = cluster_cost(snap, inputs.controller)
    return {
        "costPerHour": cost,
        "costPerMonth": round(cost * HOURS_PER_MONTH, 2),
        "nodes": len(rows),
        "managedNodes": sum(1 for r in rows if r["managed"]),
        "unpricedNodes": sum(1 for r in rows if r["managed"] and r["pricePerHour"] is None),
        "byProvisioner": _group(rows, lambda r: r["provisioner"]),
        "byCapacityType": _group(rows, lambda r: r["capacityType"]),
        "byZone": _group(rows, lambda r: r["zone"]),
        "byInstanceType": _group(rows, lambda r: r["instanceType"]),
        "packing": totals(r for r in rows if r["managed"]),
        "pendingPods": len(snap.pending_pods()),
        "decisions": [dict(d) for d in inputs.controller.decisions[:LAST_DECISIONS]],
        "chart": chart(inputs.history, snap.now),
        "consolidation": consolidation_pass(inputs.controller.consolidation),
    }


def consolidation_pass(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The controller's last consolidation pass, as the overview shows it (empty when none yet):
    its time and duration, the candidates eligible and covered per method, and whether it went
    through or stopped on its budget (then the next pass continues where it stopped), or did not
    run because a scale-up is under way (`waiting`: pods kube-scheduler or karpy has not placed
    yet, or nodes not yet initialized — how many, one named)."""
    if not answer.get("time"):
        return {}
    covered = answer.get("covered")
    methods = {str(k): int(v) for k, v in covered.items() if isinstance(v, int)} if isinstance(covered, dict) else {}
    seconds = answer.get("seconds")
    return {
        "time": str(answer["time"]),
        "seconds": float(seconds) if isinstance(seconds, int | float) else None,
        "complete": bool(answer.get("complete")),
        "stoppedIn": str(answer.get("stoppedIn") or ""),
        "waiting": str(answer.get("waiting") or ""),
        "eligible": int(answer.get("eligible") or 0),
        "covered": methods,
    }


def decisions_page(inputs: DashboardInputs, args: Mapping[str, str]) -> dict[str, Any]:
    wanted = {k: args[k] for k in ("controller", "action") if args.get(k)}
    rows = [dict(d) for d in inputs.controller.decisions if all(d.get(k) == v for k, v in wanted.items())]
    return {
        "decisions": rows,
        "filters": wanted,
        "controllers": sorted({str(d.get("controller", "")) for d in inputs.controller.decisions}),
        "actions": sorted({str(d.get("action", "")) for d in inputs.controller.decisions}),
    }
