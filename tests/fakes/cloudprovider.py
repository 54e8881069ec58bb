"""`FakeCloudProvider`: an in-memory `CloudProvider` with knobs.

Knobs: `next_create_error` (raised by the next `create`, then cleared), `create_errors` (a queue
used after it), `delete_error`, `instance_types_error` (raised by `get_instance_types`), `drifted`
(provider ID → the `Drift` `is_drifted` answers; `drift_error` raised instead when set). Records:
`create_calls` (the `NodeRequest`s), `delete_calls`, `instance_type_calls` ((provisioner, node
template) asked for), `drift_calls` (provider IDs asked about).
Launch choice is the real `launch_order()`, so tests see spot-first/cheapest-first behaviour.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock, FakeClock
from controller.cloudprovider.base import Instance, NodeRequest, instance_labels
from controller.cloudprovider.drift import Drift
from controller.cloudprovider.errors import InsufficientCapacityError, NodeNotFoundError
from controller.scheduling.instancetypes import launch_order
from controller.scheduling.types import InstanceType, ProvisionerSpec


class FakeCloudProvider:
    name = "fake"
    default_node_template: str | None = None

    def __init__(self, instance_types: Sequence[InstanceType] = (), clock: Clock | None = None) -> None:
        self.instance_types = tuple(instance_types)
        self.clock = clock or FakeClock()
        self.instances: dict[str, Instance] = {}
        self.next_create_error: Exception | None = None
        self.create_errors: list[Exception] = []
        self.delete_error: Exception | None = None
        self.create_calls: list[NodeRequest] = []
        self.delete_calls: list[str] = []
        self.instance_type_calls: list[tuple[str | None, AWSNodeTemplate | None]] = []
        self.instance_types_error: Exception | None = None
        self.terminated: set[str] = set()
        self.drifted: dict[str, Drift] = {}
        self.drift_error: Exception | None = None
        self.drift_calls: list[str] = []
        self._seq = 0
        self._lock = threading.Lock()

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]:
        self.instance_type_calls.append((provisioner.name if provisioner else None, node_template))
        if self.instance_types_error is not None:
            raise self.instance_types_error
        return self.instance_types

    def create(self, request: NodeRequest) -> Instance:
        with self._lock:  # provisioning launches a pass's nodes in parallel
            return self._create(request)

    def _create(self, request: NodeRequest) -> Instance:
        self.create_calls.append(request)
        if self.next_create_error is not None:
            err, self.next_create_error = self.next_create_error, None
            raise err
        if self.create_errors:
            raise self.create_errors.pop(0)
        options = launch_order(request.instance_type_options, request.requirements)
        if not options:
            raise InsufficientCapacityError("all requested instance types were unavailable during launch")
        option = options[0]
        self._seq += 1
        name = f"fake-{self._seq}"
        instance = Instance(
            provider_id=f"fake:///{option.offering.zone}/{name}",
            name=name,
            instance_type=option.instance_type.name,
            zone=option.offering.zone,
            capacity_type=option.offering.capacity_type,
            price=option.offering.price,
            provisioner=request.provisioner,
            created_at=self.clock.now(),
            labels=instance_labels(option.instance_type, option.offering, request.provisioner),
            capacity=dict(option.instance_type.capacity),
            allocatable=option.instance_type.allocatable,
        )
        self.instances[instance.provider_id] = instance
        return instance

    def is_drifted(self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate) -> Drift | None:
        self.drift_calls.append(provider_id)
        if self.drift_error is not None:
            raise self.drift_error
        if provider_id not in self.instances:
            raise NodeNotFoundError(f"instance {provider_id} not found")
        return self.drifted.get(provider_id)

    def add(self, instance: Instance) -> None:
        self.instances[instance.provider_id] = instance

    def delete(self, provider_id: str) -> None:
        self.delete_calls.append(provider_id)
        if self.delete_error is not None:
            raise self.delete_error
        if self.instances.pop(provider_id, None) is None:
            raise NodeNotFoundError(f"instance {provider_id} not found")
        self.terminated.add(provider_id)

    def has_seen(self, provider_id: str) -> bool:
        """Like the simulated store: it remembers instances it terminated."""
        return provider_id in self.instances or provider_id in self.terminated

    def get(self, provider_id: str) -> Instance:
        try:
            return self.instances[provider_id]
        except KeyError:
            raise NodeNotFoundError(f"instance {provider_id} not found") from None

    def list(self) -> list[Instance]:
        return list(self.instances.values())
