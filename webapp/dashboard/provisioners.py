"""The provisioners pages' data (pure): spec, limits against usage, nodes and cost.

Usage is the capacity of the provisioner's nodes not marked for deletion (what the limit
counter counts). A limit is `warn` at 80 % and `full` at 100 %; the provisioner is flagged
`limitBlocking` when a clause of the controller's reason for a pending pod names this
provisioner at the `limits` stage (the reason's fields are read, never its text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.quantity import QuantityError
from controller.core.resources import format_resource, parse_resources
from controller.state.snapshot import ProvisionerView
from webapp.dashboard.common import node_row
from webapp.dashboard.source import DashboardInputs

WARN_FRACTION = 0.8
LIMITS = "limits"  # the stage a clause names when a provisioner's limits stopped the pod


def clauses(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The clauses of the controller's reason for a pending pod (`scheduling.types.Clause` as JSON)."""
    found = entry.get("clauses")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _clause_for(entry: Mapping[str, Any], provisioner: str) -> Mapping[str, Any] | None:
    for clause in clauses(entry):
        names = clause.get("provisioners")
        if isinstance(names, list) and provisioner in names:
            return clause
    return None


def rejection(entry: Mapping[str, Any], provisioner: str) -> str:
    """The clause of the controller's reason that names `provisioner` ("" when none does)."""
    clause = _clause_for(entry, provisioner)
    return str(clause.get("text") or "") if clause is not None else ""


def limit_blocked_pods(inputs: DashboardInputs, provisioner: str) -> list[str]:
    """The pending pods the controller says `provisioner`'s limits keep from a node."""
    out = []
    for key, entry in sorted(inputs.controller.pending.items()):
        clause = _clause_for(entry, provisioner)
        stages = clause.get("stages") if clause is not None else None
        if isinstance(stages, list) and LIMITS in stages:
            out.append(key)
    return out


def _limits(view: ProvisionerView, used: Mapping[str, int]) -> list[dict[str, Any]]:
    if view.provisioner is None:
        return []
    try:
        limits = parse_resources(view.provisioner.limits)
    except QuantityError:
        return []
    out = []
    for resource, limit in sorted(limits.items()):
        amount = used.get(resource, 0)
        fraction = amount / limit if limit > 0 else 1.0
        out.append({
            "resource": resource,
            "limit": format_resource(resource, limit),
            "used": format_resource(resource, amount),
            "fraction": round(fraction, 4),
            "bar": min(fraction, 1.0),
            "warn": fraction >= WARN_FRACTION,
            "full": fraction >= 1.0,
        })  # fmt: skip
    return out


def _requirement(req: Mapping[str, Any]) -> str:
    return f"{req['key']} {req['operator']} {', '.join(req.get('values') or [])}".rstrip()


def provisioner_row(inputs: DashboardInputs, view: ProvisionerView) -> dict[str, Any]:
    snap = inputs.snapshot
    nodes = [n for n in snap.nodes.values() if n.provisioner == view.name]
    rows = [node_row(n, inputs.controller, snap.now) for n in nodes]
    p = view.provisioner
    limits = _limits(view, snap.provisioner_usage(view.name))
    blocked = limit_blocked_pods(inputs, view.name)
    return {
        "name": view.name,
        "error": view.error,
        "deleting": view.deleting,
        "weight": p.weight if p else None,
        "requirements": [str(r) for r in (p.requirements if p else ())],
        "taints": [str(t) for t in p.taints] if p else [],
        "startupTaints": [str(t) for t in p.startup_taints] if p else [],
        "labels": dict(p.labels) if p else {},
        "ttlSecondsAfterEmpty": p.ttl_seconds_after_empty if p else None,
        "ttlSecondsUntilExpired": p.ttl_seconds_until_expired if p else None,
        "consolidation": bool(p and p.consolidation_enabled),
        "limits": limits,
        "atLimit": any(lim["full"] for lim in limits),
        "limitBlocking": blocked,
        "nodes": len(rows),
        "costPerHour": round(sum(r["pricePerHour"] or 0.0 for r in rows), 6),
        "nodeRows": sorted(rows, key=lambda r: r["name"]),
    }


def provisioners_page(inputs: DashboardInputs) -> dict[str, Any]:
    rows = [provisioner_row(inputs, v) for _, v in sorted(inputs.snapshot.provisioners.items())]
    for row in rows:
        del row["nodeRows"]
    return {"provisioners": rows}


def provisioner_page(inputs: DashboardInputs, name: str) -> dict[str, Any] | None:
    view = inputs.snapshot.provisioners.get(name)
    return provisioner_row(inputs, view) if view is not None else None
