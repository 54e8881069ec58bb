"""`Launcher`: one `NewNode` → a cloud instance and its Node object (spec §5.9).

Used by provisioning (several launches at once: the limit check and the usage it updates are
one step under a lock) and, for replacement capacity, by deprovisioning:

    result = launcher.launch(new_node, reason="provisioning", usage=current_usage)

Steps: re-check the provisioner's limits (against `usage`, the capacity of its nodes not marked
for deletion, which `launch` updates), `cloudprovider.create`, check the limits again with the
instance's real capacity (these first steps are `create_instance`, the cloud half; the rest is
`register`, so a pass can make all its cloud calls before its Kubernetes writes), create the
Node (an "AlreadyExists" answer is fine; annotated with
the drift hashes of its Provisioner and AWSNodeTemplate, `apis/drifthash.py`), record it in
cluster state as in-flight and nominate it. If anything after `create` fails, the instance is
terminated again: a failed launch leaves nothing behind (a crash in between is what garbage
collection is for). With `hold_for_binding`, the Node is created cordoned (see `nodes.py`) so
kube-scheduler cannot put other pods on it while provisioning binds the pods it was made for.
Errors: `LaunchError` (with the cause), never a half-made node; when the cloud refused the call
for its request rate (`ThrottledError`) the error's `retry_after` says when to try again — the
launch was not attempted, no offering is to blame.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.drifthash import node_template_hash_annotations
from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider, Instance, NodeRequest, terminate_instance
from controller.cloudprovider.errors import CloudProviderError, ThrottledError
from controller.kube.client import Kube
from controller.kube.errors import AlreadyExistsError, KubeError
from controller.kube.resources import NODES
from controller.metrics import MACHINES_CREATED, MACHINES_LAUNCHED, NODES_CREATED
from controller.provisioning.nodes import node_object
from controller.scheduling.types import NewNode, ProvisionerSpec
from controller.state.cluster import ClusterState

log = logging.getLogger(__name__)


def limit_exceeded(limits: Mapping[str, int], usage: Mapping[str, int], adding: Mapping[str, int]) -> str:
    """Why launching `adding` would exceed the provisioner's limits ("" when it would not)."""
    for resource, limit in sorted(limits.items()):
        total = usage.get(resource, 0) + adding.get(resource, 0)
        if total > limit:
            return f"{resource} resource usage of {total} exceeds limit of {limit}"
    return ""


class LaunchError(Exception):
    """The node could not be launched; nothing was left behind. `retry_after` (seconds) is set
    when the cloud throttled the launch: try again then, it did not fail."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class LaunchResult:
    node_name: str
    instance: Instance
    node: dict[str, Any]


class Launcher:
    def __init__(
        self,
        kube: Kube,
        cloud: CloudProvider,
        state: ClusterState,
        clock: Clock,
        nomination_seconds: float = 20.0,
    ) -> None:
        self.kube, self.cloud, self.state, self.clock = kube, cloud, state, clock
        self.nomination_seconds = nomination_seconds
        self._usage_lock = threading.Lock()

    def launch(
        self,
        node: NewNode,
        provisioner: ProvisionerSpec,
        usage: MutableMapping[str, int],
        reason: str = "provisioning",
        owner: Mapping[str, Any] | None = None,
        controller: str = "provisioning",
        hold_for_binding: bool = False,
        node_template: AWSNodeTemplate | None = None,
    ) -> LaunchResult:
        instance = self.create_instance(node, provisioner, usage, controller, node_template)
        return self.register(
            node, instance, provisioner, usage, reason, owner, controller, hold_for_binding, node_template
        )

    def create_instance(
        self,
        node: NewNode,
        provisioner: ProvisionerSpec,
        usage: MutableMapping[str, int],
        controller: str = "provisioning",
        node_template: AWSNodeTemplate | None = None,
    ) -> Instance:
        """The cloud half of `launch`: the limits checked, the instance created and its capacity
        counted in `usage` (undone by `register` when the Node cannot be made)."""
        if provisioner.limits:
            smallest = _smallest_capacity(node, provisioner.limits)
            with self._usage_lock:
                why = limit_exceeded(provisioner.limits, usage, smallest)
            if why:
                raise LaunchError(f"launching node, {why}")
        instance = self._create(NodeRequest.from_new_node(node, provisioner, node_template), controller)
        with self._usage_lock:  # checked and counted at once: parallel launches share `usage`
            why = limit_exceeded(provisioner.limits, usage, instance.capacity) if provisioner.limits else ""
            if not why:
                _add(usage, instance.capacity, 1)
        if why:
            self._undo(instance, controller)
            raise LaunchError(f"launching node, {why}")
        return instance

    def register(
        self,
        node: NewNode,
        instance: Instance,
        provisioner: ProvisionerSpec,
        usage: MutableMapping[str, int],
        reason: str = "provisioning",
        owner: Mapping[str, Any] | None = None,
        controller: str = "provisioning",
        hold_for_binding: bool = False,
        node_template: AWSNodeTemplate | None = None,
    ) -> LaunchResult:
        """The Kubernetes half of `launch`, for an instance `create_instance` made: its Node
        created and recorded; on failure the instance is terminated and `usage` given back."""
        try:
            annotations = {**provisioner.annotations, **_template_annotations(node_template)}
            obj = node_object(node, instance, annotations, owner, hold_for_binding)
            try:
                created = self.kube.create(NODES, obj)
            except AlreadyExistsError:
                created = obj
        except (KubeError, OSError) as err:
            with self._usage_lock:
                _add(usage, instance.capacity, -1)
            self._undo(instance, controller)
            raise LaunchError(f"creating node: {err}") from err
        self.state.record_node(created)
        self.state.nominate([instance.name], self.clock.now() + self.nomination_seconds)
        NODES_CREATED.labels(reason=reason, provisioner=provisioner.name).inc()
        MACHINES_CREATED.labels(reason=reason, provisioner=provisioner.name).inc()
        MACHINES_LAUNCHED.labels(provisioner=provisioner.name).inc()
        log.info(
            "launched node %s (%s, %s, %s, $%.4f/h) for %d pod(s)",
            instance.name,
            instance.instance_type,
            instance.zone,
            instance.capacity_type,
            instance.price,
            len(node.pods),
        )
        return LaunchResult(instance.name, instance, created)

    def _create(self, request: NodeRequest, controller: str) -> Instance:
        try:  # timed by the metered cloud (`cloudprovider/metered.py`)
            return self.cloud.create(request)
        except ThrottledError as err:
            raise LaunchError(
                f"launching node throttled, retrying in {err.retry_after:.1f}s: {err}", err.retry_after
            ) from err
        except CloudProviderError as err:
            raise LaunchError(f"launching node: {err}") from err

    def _undo(self, instance: Instance, controller: str) -> None:
        # a failure is logged; garbage collection finds the instance
        what = f"terminating instance {instance.provider_id} after a failed launch"
        terminate_instance(self.cloud, instance.provider_id, what)


def _template_annotations(template: AWSNodeTemplate | None) -> dict[str, str]:
    return node_template_hash_annotations(template) if template is not None else {}


def _add(usage: MutableMapping[str, int], capacity: Mapping[str, int], sign: int) -> None:
    for resource, value in capacity.items():
        usage[resource] = usage.get(resource, 0) + sign * value


def _smallest_capacity(node: NewNode, limits: Mapping[str, int]) -> dict[str, int]:
    """Per limited resource, the least capacity any option would add."""
    out = {}
    for resource in limits:
        values = [it.capacity.get(resource, 0) for it in node.instance_type_options]
        out[resource] = min(values) if values else 0
    return out
