"""`MeteredCloud`: every cloud-provider call timed in `karpenter_cloudprovider_duration_seconds`.

Karpenter decorates its cloud provider so that each method call is observed with the calling
controller, the method (`Create`, `Delete`, `Get`, `List`, `GetInstanceTypes`, `IsDrifted`) and
the provider. karpy wraps the provider once in `controller.main.build`; the controller is the
job that runs the call (`controller.metrics.CALLER`, set by `main.job_body`; "" outside a job).
Errors pass through unchanged and are timed too. Provider extras (`refresh`, `unavailable`, …)
are reached through the wrapper.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.base import CloudProvider, Instance, NodeRequest
from controller.cloudprovider.drift import Drift
from controller.metrics import CALLER, CLOUDPROVIDER_DURATION
from controller.scheduling.types import InstanceType, ProvisionerSpec

T = TypeVar("T")


class MeteredCloud:
    def __init__(self, cloud: CloudProvider) -> None:
        self._cloud = cloud
        self.name = cloud.name
        self.default_node_template = cloud.default_node_template

    def _timed(self, method: str, call: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return call()
        finally:
            CLOUDPROVIDER_DURATION.labels(controller=CALLER.get(), method=method, provider=self.name).observe(
                time.monotonic() - started
            )

    def create(self, request: NodeRequest) -> Instance:
        return self._timed("Create", lambda: self._cloud.create(request))

    def delete(self, provider_id: str) -> None:
        self._timed("Delete", lambda: self._cloud.delete(provider_id))

    def get(self, provider_id: str) -> Instance:
        return self._timed("Get", lambda: self._cloud.get(provider_id))

    def list(self) -> list[Instance]:
        return self._timed("List", self._cloud.list)

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]:
        return self._timed("GetInstanceTypes", lambda: self._cloud.get_instance_types(provisioner, node_template))

    def is_drifted(self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate) -> Drift | None:
        return self._timed("IsDrifted", lambda: self._cloud.is_drifted(provider_id, instance_type, node_template))

    def __getattr__(self, name: str) -> Any:  # provider extras (e.g. refresh, unavailable offerings)
        return getattr(self._cloud, name)
