"""Only a leader writes: the Kubernetes and cloud adapters as the controllers see them.

Leadership can be lost in the middle of a reconcile (the lease could not be renewed before the
renew deadline, or another replica holds it). `job_body` in `main.py` starts no reconcile on a
standby; these wrappers stop one that is already running: every write — creating, changing or
deleting an object, binding or evicting a pod, launching or terminating an instance — first
asks `leading()` and raises `NotLeaderError` / `NotLeaderCloudError` instead of acting. Reads,
watches and Events pass through. Callers already treat both as a failed call of their kind
(a `KubeError`, a `CloudProviderError`) and retry on a later pass, as the leader (issue 14, 5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.base import CloudProvider, Instance, NodeRequest
from controller.cloudprovider.errors import CloudProviderError
from controller.kube.client import Kube, ListResult, WatchEvent
from controller.kube.errors import KubeError
from controller.kube.resources import Kind
from controller.scheduling.types import InstanceType, ProvisionerSpec

Obj = dict[str, Any]


class NotLeaderError(KubeError):
    """A write refused because this replica does not (or no longer) lead."""


class NotLeaderCloudError(CloudProviderError):
    """A launch or termination refused because this replica does not (or no longer) lead."""


class LeaderOnlyKube:
    def __init__(self, kube: Kube, leading: Callable[[], bool]) -> None:
        self._kube, self._leading = kube, leading

    def _check(self, what: str) -> None:
        if not self._leading():
            raise NotLeaderError(f"{what}: not the leader")

    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult:
        return self._kube.list(kind, limit, continue_token)

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 60) -> Iterator[WatchEvent]:
        return self._kube.watch(kind, resource_version, timeout_seconds)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj:
        return self._kube.get(kind, name, namespace)

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self._check(f"creating {kind.name}")
        return self._kube.create(kind, obj, namespace)

    def patch(
        self,
        kind: Kind,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        self._check(f"patching {kind.name} {name}")
        return self._kube.patch(kind, name, patch, namespace, subresource)

    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        self._check(f"replacing {kind.name} {name}")
        return self._kube.replace(kind, name, obj, namespace)

    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> None:
        self._check(f"deleting {kind.name} {name}")
        self._kube.delete(kind, name, namespace)

    def bind(self, namespace: str, pod: str, node: str) -> None:
        self._check(f"binding {namespace}/{pod}")
        self._kube.bind(namespace, pod, node)

    def evict(self, namespace: str, pod: str) -> None:
        self._check(f"evicting {namespace}/{pod}")
        self._kube.evict(namespace, pod)

    def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self._kube.create_event(namespace, event)


class LeaderOnlyCloud:
    def __init__(self, cloud: CloudProvider, leading: Callable[[], bool]) -> None:
        self._cloud, self._leading = cloud, leading
        self.name = cloud.name
        self.default_node_template = cloud.default_node_template

    def create(self, request: NodeRequest) -> Instance:
        if not self._leading():
            raise NotLeaderCloudError("launching an instance: not the leader")
        return self._cloud.create(request)

    def delete(self, provider_id: str) -> None:
        if not self._leading():
            raise NotLeaderCloudError(f"terminating {provider_id}: not the leader")
        self._cloud.delete(provider_id)

    def get(self, provider_id: str) -> Instance:
        return self._cloud.get(provider_id)

    def list(self) -> list[Instance]:
        return self._cloud.list()

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]:
        return self._cloud.get_instance_types(provisioner, node_template)

    def __getattr__(self, name: str) -> Any:  # provider extras (e.g. unavailable offerings)
        return getattr(self._cloud, name)
