"""Which new pods karpy's pod webhook gates, and the JSONPatch that gates them. Pure.

kube-scheduler counts a topology spread only over the domains where nodes exist at the instant
it binds, so pods of a zonal spread bound while a zone the provisioners allow has no node yet
pile up in the zones that have one (issue 17: 3 / 2 / 1). A pod created with karpy's scheduling
gate (`TOPOLOGY_GATE`) is not scheduled by anyone until provisioning removes the gate, which it
does only together with a node selector pinning the pod to the domain it chose, counting every
zone the provisioners allow (see `controller/provisioning/spreadpin.py`).

Gated: a pod being created without `spec.nodeName`, for the default scheduler, not owned by a
DaemonSet, with a `DoNotSchedule` topology spread constraint on a key other than
`kubernetes.io/hostname` (hostname domains are nodes, which karpy's held nodes already show) and
no such constraint with `minDomains` above 1 (`_sets_min_domains`). Everything else is left
unchanged. The webhook registration (`localcluster/manifests.py`, the chart's `webhook.yaml`)
sends only pods `spread_keys` finds a key for, by a CEL `matchConditions` entry written to the
same rule (checked against it on the real apiserver by `tests/e2e/test_podgate_apiserver.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core.labels import HOSTNAME, TOPOLOGY_GATE

DEFAULT_SCHEDULER = "default-scheduler"


def spread_keys(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys of the pod's DoNotSchedule spread constraints other than the hostname."""
    out: list[str] = []
    for c in spec.get("topologySpreadConstraints") or []:
        if not isinstance(c, Mapping):
            continue
        key = c.get("topologyKey")
        dns = c.get("whenUnsatisfiable") == "DoNotSchedule"
        if dns and isinstance(key, str) and key and key != HOSTNAME and key not in out:
            out.append(key)
    return tuple(out)


def needs_gate(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("nodeName"):
        return False
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
        return False
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    if any(isinstance(r, Mapping) and r.get("kind") == "DaemonSet" for r in meta.get("ownerReferences") or []):
        return False
    if _sets_min_domains(spec):
        return False
    gates = spec.get("schedulingGates") or []
    if any(isinstance(g, Mapping) and g.get("name") == TOPOLOGY_GATE for g in gates):
        return False
    return bool(spread_keys(spec))


def _sets_min_domains(spec: Mapping[str, Any]) -> bool:
    """A zonal spread with `minDomains` above 1 already counts missing zones as empty in
    kube-scheduler, and a pin would break it (the pinned pod sees one domain, fewer than
    `minDomains`, so kube-scheduler takes the minimum as 0): such pods are left ungated."""
    for c in spec.get("topologySpreadConstraints") or []:
        if isinstance(c, Mapping) and c.get("topologyKey") in spread_keys({"topologySpreadConstraints": [c]}):
            min_domains = c.get("minDomains")
            if isinstance(min_domains, int) and min_domains > 1:
                return True
    return False


def gate_patch(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSONPatch operations that add karpy's gate to a new pod ([] when it needs none)."""
    if not needs_gate(pod):
        return []
    gate = {"name": TOPOLOGY_GATE}
    if pod["spec"].get("schedulingGates") is None:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]
