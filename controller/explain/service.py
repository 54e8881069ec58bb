"""The controller's explain answers, from its cluster state, catalogue and decision log.

`Explainer` is what the HTTP server (`httpserver.py`) serves read-only:

- `node(name)` → `GET /api/v1/explain/nodes/NAME`: what removing the node would do now
  (`node.py`, consolidation's own simulation);
- `pod(namespace, name)` → `GET /api/v1/explain/pods/NS/NAME`: the pod's last evaluation (when,
  outcome, reason — the provisioning controller's decision), where it would go now, what each
  provisioner would launch for it or why not, the instance types that fit and their prices
  (`pod.py`);
- `what_if(text)` → `POST /api/v1/what-if`: what karpy would launch for the pods of a Pod,
  Deployment, ReplicaSet, StatefulSet or Job manifest on the cluster as it is.

Every answer is `(HTTP status, JSON)`; bad input is a 400 naming the problem, an unknown object
a 404. Nothing is changed: the scheduler is pure and the state is read through a snapshot.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

from controller.cloudprovider.base import CloudProvider
from controller.core.quantity import QuantityError
from controller.core.timestamps import format_timestamp
from controller.decisions import LAUNCHED, DecisionLog
from controller.deprovisioning.types import Inputs, Scheduler
from controller.explain.node import (
    CONSOLIDATION_DISABLED,
    DO_NOT_CONSOLIDATE,
    DO_NOT_EVICT,
    NOT_CANDIDATE,
    PDB,
    Blocker,
    NodeExplanation,
    explain_node,
    liftable_blockers,
)
from controller.explain.pod import ProvisioningView, per_provisioner, place
from controller.provisioning.nodetemplates import ProvisionerTypes, instance_types_for
from controller.scheduling.pods import PodSpecError, pod_request
from controller.scheduling.types import PodRequest
from controller.scheduling.workloads import REPLICATED, expand, replica_count
from controller.simulate.inputs import InputError, parse_documents
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import scheduling_input
from controller.state.snapshot import Snapshot

Answer = tuple[int, Any]
OPPORTUNITY_NODES = 50  # blocked nodes simulated per opportunity answer, at most
OPPORTUNITY_CACHE_SECONDS = 30.0
OPPORTUNITY_KINDS = (PDB, DO_NOT_EVICT, DO_NOT_CONSOLIDATE, CONSOLIDATION_DISABLED)
"""Blockers a user can lift: the opportunity is what consolidation would save without them."""
WHAT_IF_KINDS = ("Pod", *REPLICATED, "Job")
MAX_WHAT_IF_PODS = 1000


class WhatIfError(ValueError):
    """A what-if manifest karpy cannot use (the message says where and why)."""


def _default_scheduler() -> Scheduler:
    from controller.scheduling.scheduler import schedule

    return schedule


def world_of(snap: Snapshot, types: ProvisionerTypes, leave_out: str = "") -> ProvisioningView:
    """The scheduler's view of `snap`, every node as it is (provisioning's view, through the one
    builder `state/schedulinginput.py`); `leave_out` is a pod key that must not take room where it
    is bound (the pod being asked about)."""
    nodes = []
    for node in snap.nodes.values():
        state = node.state_node()
        if leave_out and any(p.key == leave_out for p in state.pods):
            state = dataclasses.replace(state, pods=tuple(p for p in state.pods if p.key != leave_out))
        nodes.append(state)
    return ProvisioningView(scheduling_input(snap, [], nodes, types.types), dict(types.missing))


def what_if_pods(text: str) -> list[PodRequest]:
    """The pods of a what-if manifest, pending (raises WhatIfError)."""
    try:
        docs = parse_documents(text, "manifest")
    except InputError as err:
        raise WhatIfError(str(err)) from None
    raw: list[tuple[str, Mapping[str, Any]]] = []
    for where, doc in docs:
        kind = doc.get("kind")
        if kind not in WHAT_IF_KINDS:
            raise WhatIfError(f"{where}: kind {kind!r}: what-if takes {', '.join(WHAT_IF_KINDS)}")
        try:
            count = 1 if kind == "Pod" else replica_count(doc)
            if len(raw) + count > MAX_WHAT_IF_PODS:
                raise WhatIfError(f"{where}: what-if takes at most {MAX_WHAT_IF_PODS} pods in all")
            raw += [(where, doc)] if kind == "Pod" else [(f"{where} pod {i}", p) for i, p in enumerate(expand(doc))]
        except PodSpecError as err:
            raise WhatIfError(f"{where}: {err}") from None
    if not raw:
        raise WhatIfError("manifest: no Pod, Deployment, ReplicaSet, StatefulSet or Job in it")
    pods = []
    for where, doc in raw:
        try:
            pods.append(dataclasses.replace(pod_request(doc), node_name=""))
        except (PodSpecError, QuantityError, ValueError) as err:
            raise WhatIfError(f"{where}: {err}") from None
    keys = [p.key for p in pods]
    if len(set(keys)) != len(keys):
        raise WhatIfError(f"manifest: pod {next(k for k in keys if keys.count(k) > 1)} is defined more than once")
    return pods


class Explainer:
    def __init__(
        self, state: ClusterState, cloud: CloudProvider, decisions: DecisionLog, scheduler: Scheduler | None = None
    ) -> None:
        self._state, self._cloud, self._decisions = state, cloud, decisions
        self._scheduler = scheduler or _default_scheduler()
        self._lock = threading.Lock()
        self._opportunity: tuple[float, dict[str, Any]] | None = None

    def _snapshot(self) -> tuple[Snapshot, ProvisionerTypes] | None:
        snap = self._state.snapshot()
        if not snap.synced:
            return None
        return snap, instance_types_for(snap, self._cloud)

    def node(self, name: str) -> Answer:
        found = self._snapshot()
        if found is None:
            return 503, {"error": "cluster state is not synced yet"}
        snap, types = found
        view = snap.nodes.get(name)
        if view is None:
            return 404, {"error": f"node {name} not found"}
        header = {"time": format_timestamp(snap.now), "pods": sorted(p.key for p in view.movable_pods())}
        if not view.owned:
            blocker = Blocker(NOT_CANDIDATE, "not managed by karpy (no karpenter.sh/provisioner-name label)")
            return 200, {**NodeExplanation(name, True, blockers=(blocker,)).to_json(), **header}
        inputs = Inputs.of(snap, types.types)
        return 200, {**explain_node(inputs, name, self._scheduler).to_json(), **header}

    def pod(self, namespace: str, name: str) -> Answer:
        found = self._snapshot()
        if found is None:
            return 503, {"error": "cluster state is not synced yet"}
        snap, types = found
        key = f"{namespace}/{name}"
        view = snap.pods.get(key)
        if view is None:
            return 404, {"error": f"pod {key} not found"}
        out: dict[str, Any] = {"pod": key, "time": format_timestamp(snap.now), "node": view.node_name}
        out["status"] = "bound" if view.node_name else "pending" if view.provisionable else "waiting for kube-scheduler"
        out["lastEvaluation"] = self._last_evaluation(key)
        request = view.request
        if request is None:
            return 200, {**out, "ignored": "the pod spec cannot be read"}
        if request.ignore_reason:
            out["ignored"] = request.ignore_reason
        world = world_of(snap, types, leave_out=key if view.node_name else "")
        pending = dataclasses.replace(request, node_name="")
        out["now"] = place(world, [pending], self._scheduler)
        out["provisioners"] = per_provisioner(world, pending, self._scheduler)
        return 200, out

    def opportunity(self) -> dict[str, Any]:
        """What consolidation would save now on the nodes it may not touch, and what blocks each
        (`OPPORTUNITY_KINDS`), cached `OPPORTUNITY_CACHE_SECONDS`."""
        now = self._clock_now()
        with self._lock:
            if self._opportunity is not None and now - self._opportunity[0] < OPPORTUNITY_CACHE_SECONDS:
                return self._opportunity[1]
        found = self._snapshot()
        if found is None:
            return {"synced": False, "savingPerHour": 0.0, "nodes": []}
        snap, types = found
        inputs = Inputs.of(snap, types.types)
        nodes: list[dict[str, Any]] = []
        total = 0.0
        blocked = [n for n in inputs.nodes if liftable_blockers(n, inputs)]
        for node in blocked[:OPPORTUNITY_NODES]:
            x = explain_node(inputs, node.name, self._scheduler)
            kinds = {b.kind for b in x.blockers}
            if x.unblocked_saving and x.unblocked_saving > 0 and kinds and kinds <= set(OPPORTUNITY_KINDS):
                total += x.unblocked_saving
                nodes.append(
                    {
                        "node": x.node,
                        "instanceType": x.instance_type,
                        "pricePerHour": x.price,
                        "savingPerHour": x.unblocked_saving,
                        "blockers": [b.to_json() for b in x.blockers],
                    }
                )
        answer = {
            "synced": True, "time": format_timestamp(snap.now), "savingPerHour": round(total, 6), "nodes": nodes,
            "nodesConsidered": min(len(blocked), OPPORTUNITY_NODES), "nodesBlocked": len(blocked),
            "nodesOwned": len(inputs.nodes),
        }  # fmt: skip
        with self._lock:
            self._opportunity = (now, answer)
        return answer

    def _clock_now(self) -> float:
        return self._state.snapshot().now

    def _last_evaluation(self, key: str) -> dict[str, Any] | None:
        """The pod's last evaluation by provisioning (`DecisionLog.evaluated`, every pass)."""
        found = self._decisions.evaluation(f"pod/{key}")
        if found is None:
            return None
        latest = found.decision
        out: dict[str, Any] = {
            "time": format_timestamp(latest.time),
            "outcome": latest.action,
            "reason": latest.reason,
            "since": format_timestamp(found.since),
        }
        if latest.extra.get("node"):
            out["node"] = latest.extra["node"]
        if latest.action == LAUNCHED:
            out.update(provisioner=latest.provisioner, instanceType=latest.instance_type, pricePerHour=latest.price)
        return out

    def what_if(self, text: str) -> Answer:
        try:
            pods = what_if_pods(text)
        except WhatIfError as err:
            return 400, {"error": str(err)}
        found = self._snapshot()
        if found is None:
            return 503, {"error": "cluster state is not synced yet"}
        snap, types = found
        world = world_of(snap, types)
        out = {"time": format_timestamp(snap.now), "pods": [p.key for p in pods], **place(world, pods, self._scheduler)}
        out["provisioners"] = per_provisioner(world, pods[0], self._scheduler)
        return 200, out


def pod_path(rest: str) -> tuple[str, str] | None:
    """`NS/NAME` → (namespace, name); None when it is not exactly that."""
    parts = rest.split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


def prefix_routes(explainer: Explainer) -> dict[str, Callable[[str], Answer]]:
    """The GET routes under a path prefix, for `ControllerHTTPServer(prefixes=...)`."""

    def pod(rest: str) -> Answer:
        found = pod_path(rest)
        if found is None:
            return 400, {"error": f"expected /api/v1/explain/pods/NAMESPACE/NAME, got {rest!r} after pods/"}
        return explainer.pod(*found)

    def node(rest: str) -> Answer:
        if "/" in rest:
            return 400, {"error": f"expected /api/v1/explain/nodes/NAME, got {rest!r} after nodes/"}
        return explainer.node(rest)

    return {"/api/v1/explain/nodes/": node, "/api/v1/explain/pods/": pod}


def post_routes(explainer: Explainer) -> dict[str, Callable[[str], Answer]]:
    """The POST routes (computation only), for `ControllerHTTPServer(posts=...)`."""
    return {"/api/v1/what-if": explainer.what_if}
