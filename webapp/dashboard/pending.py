"""The pending pods page's data (pure): each unschedulable pod, why, grouped by owner.

Each pod shows its last evaluation by the controller (every pending pod is evaluated in every
provisioning pass: when, the outcome, and since when the reason has stood). The reason is the
controller's scheduler's (`controller/scheduling/reasons.py`), which names
the provisioner(s) that came closest; each provisioner is listed with the clause that rejected
it (read from the reason's clauses, as values), or why it was not in the running (invalid,
being deleted, not the closest match).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.state.snapshot import PodView
from webapp.dashboard.common import pod_cpu_memory
from webapp.dashboard.provisioners import rejection
from webapp.dashboard.source import DashboardInputs


def owner_of(pod: PodView) -> str:
    for ref in (pod.obj.get("metadata") or {}).get("ownerReferences") or []:
        return f"{ref.get('kind')}/{ref.get('name')}"
    return "(no owner)"


def _considered(inputs: DashboardInputs, entry: Mapping[str, Any]) -> list[dict[str, str]]:
    out = []
    for name, view in sorted(inputs.snapshot.provisioners.items()):
        if view.error:
            why = f"invalid: {view.error}"
        elif view.deleting:
            why = "being deleted"
        else:
            why = rejection(entry, name) or "not the closest match (see the reason)"
        out.append({"provisioner": name, "rejected": why})
    return out


def pending_page(inputs: DashboardInputs) -> dict[str, Any]:
    snap = inputs.snapshot
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in snap.pending_pods():
        entry = inputs.controller.pending.get(pod.key) or {}
        reason = str(entry.get("reason") or "")
        cpu, memory = pod_cpu_memory(pod)
        groups.setdefault((pod.namespace, owner_of(pod)), []).append({
            "namespace": pod.namespace,
            "name": pod.name,
            "ageSeconds": max(0, int(snap.now - pod.created)) if pod.created else 0,
            "cpu": cpu,
            "memory": memory,
            "reason": reason or ("" if inputs.controller.error else "not evaluated by the controller yet"),
            "reasonTime": str(entry.get("since") or entry.get("time") or ""),
            "evaluated": str(entry.get("time") or ""),
            "action": str(entry.get("action") or ""),
            "provisioners": _considered(inputs, entry) if reason else [],
        })  # fmt: skip
    out = [{"namespace": ns, "owner": owner, "pods": pods} for (ns, owner), pods in sorted(groups.items())]
    return {"groups": out, "count": sum(len(g["pods"]) for g in out)}
