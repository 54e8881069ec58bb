"""Lifting karpy's topology gate: the pod is pinned to the domain provisioning chose (issue 17).

Why. kube-scheduler counts a `DoNotSchedule` topology spread only over the domains where a node
(matching the pod's node affinity; taints ignored) exists at the instant it binds. When a zone
the provisioners allow has no node yet, it fills the zones that have one: each binding valid at
its instant, the end state skewed over the zones the user spread over (3 / 2 / 1). No retry can
fix that afterwards without evicting pods; so the choice of domain is taken away from the
instant and given to the one component that counts every domain the provisioners allow.

How. karpy's pod webhook creates such pods with the scheduling gate `karpy.sh/topology-spread`
(`controller/apis/podgate.py`): nobody schedules them, and the apiserver refuses to bind them.
Provisioning treats a pod gated by that gate alone as pending from its creation and plans it as
any other (`controller/scheduling/`: the group's counts hold the pods already bound, the pods
whose domain karpy chose earlier and kube-scheduler has not bound yet — `PodView.spread_pinned`,
in every batch and placed first, see `solver.py` — and every zone the provisioners allow, empty
ones included). Once the pod's node exists (an existing node, or a new
node created held), karpy removes the gate and, in the same write (guarded by the pod's
resourceVersion), adds a `nodeSelector` fixing each of the gated keys to that node's value.
karpy then binds the pod to that node when it holds it (`bindcheck.single_domain`), else
kube-scheduler binds it anywhere in that domain; kube-scheduler's spread check for the pod counts
only that domain (`nodeAffinityPolicy: Honor`), so it cannot move the pod to another zone, and
the domains it sees never decide the group's spread. A pod karpy ignores (spec §3.4)
is released without a pin, as is a pod whose node has no value for a gated key.

What this changes for users: such a pod carries the extra node selector for its life (a
replacement pod of its Deployment is created gated again and placed afresh), and while no
karpy controller runs, gated pods wait.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller.core.labels import HOSTNAME, TOPOLOGY_GATE
from controller.kube.client import Kube
from controller.kube.errors import ConflictError, KubeError, NotFoundError
from controller.kube.resources import PODS
from controller.state.cluster import ClusterState
from controller.state.snapshot import PodView

log = logging.getLogger(__name__)

DO_NOT_SCHEDULE = "DoNotSchedule"


def gated_keys(pod: PodView) -> tuple[str, ...]:
    """The keys whose domain karpy chooses for this pod (its DoNotSchedule spreads off hostname)."""
    if pod.request is None:
        return ()
    keys = [
        c.topology_key for c in pod.request.topology_spread
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME
    ]  # fmt: skip
    return tuple(dict.fromkeys(keys))


def ungate_patch(pod: PodView, pin: Mapping[str, str]) -> dict[str, Any]:
    """A merge patch removing karpy's gate (keeping any other) and adding `pin` to the node
    selector, valid only against the pod's current resourceVersion."""
    others = [{"name": g} for g in pod.scheduling_gates if g != TOPOLOGY_GATE]
    spec: dict[str, Any] = {"schedulingGates": others or None}
    if pin:
        spec["nodeSelector"] = dict(pin)
    rv = (pod.obj.get("metadata") or {}).get("resourceVersion")
    return {"metadata": {"resourceVersion": rv}, "spec": spec} if rv else {"spec": spec}


def pin_for(pod: PodView, node_labels: Mapping[str, str]) -> dict[str, str] | None:
    """The node selector pinning the pod to the node's domains (None: the node lacks a key)."""
    pin = {}
    for key in gated_keys(pod):
        value = node_labels.get(key)
        if value is None:
            return None
        pin[key] = value
    return pin


class Pinner:
    """Writes the pins and releases of one pass, recording each result in cluster state."""

    def __init__(self, kube: Kube, state: ClusterState) -> None:
        self.kube, self.state = kube, state

    def pin(self, pod: PodView, node_labels: Mapping[str, str]) -> bool:
        """Lift the gate with the node's domains pinned; False when not done (retried later)."""
        if not pod.topology_gated:
            return False
        pin = pin_for(pod, node_labels)
        return self._write(pod, pin or {}, "pinning" if pin else "releasing")

    def release(self, pod: PodView) -> bool:
        """Lift the gate without a pin (a pod provisioning does not place)."""
        return pod.topology_gated and self._write(pod, {}, "releasing")

    def _write(self, pod: PodView, pin: Mapping[str, str], what: str) -> bool:
        try:
            updated = self.kube.patch(PODS, pod.name, ungate_patch(pod, pin), namespace=pod.namespace)
        except (ConflictError, NotFoundError):
            return False  # changed or gone meanwhile: the next pass sees it as it is
        except (KubeError, OSError) as err:
            log.warning("%s pod %s from its topology gate: %s", what, pod.key, err)
            return False
        self.state.apply(PODS.name, "MODIFIED", updated)
        log.info("%s pod %s from its topology gate%s", what, pod.key, f" to {dict(pin)}" if pin else "")
        return True
