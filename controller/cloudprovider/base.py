"""The `CloudProvider` protocol: what every cloud (simulated, AWS, the test fake) offers.

Contract, per method (errors are those of `errors.py`):

- `create(request: NodeRequest) -> Instance` — launch ONE instance for a node the scheduler
  wants. The provider picks among `request.instance_type_options` with
  `scheduling.instancetypes.launch_order()` — the same decision `karpy simulate` shows: exotic
  types only when nothing else fits, spot before on-demand (when the requirements allow spot),
  cheapest first — skipping offerings in its insufficient-capacity cache (`UnavailableOfferings`,
  45 s per (type, zone, capacity type)), and falls back through the options when one is out of
  capacity. Raises `InsufficientCapacityError` when none could be bought, `CloudProviderError`
  otherwise. A failed create leaves no instance behind. The returned instance is tagged as
  karpy's (cluster, provisioner).
- `delete(provider_id)` — terminate the instance; `NodeNotFoundError` if it is already gone.
  Controllers call it through `terminate_instance()`, where already gone counts as done.
- `get(provider_id) -> Instance` — `NodeNotFoundError` if it does not exist (or is terminated).
- `list() -> list[Instance]` — every running instance tagged as this cluster's karpy instance.
- `get_instance_types(provisioner, node_template) -> tuple[InstanceType, ...]` — what can be
  launched, with offerings in the insufficient-capacity cache marked `available=False`, and
  capacity and overhead as a node of this provisioner (kubelet settings) made from this
  AWSNodeTemplate (AMI family, block devices) would have: the cloud's math lives with the cloud,
  the scheduler computes none. Both may be None (the catalog with default settings).
- `is_drifted(provider_id, instance_type, node_template) -> Drift | None` — whether the instance
  no longer matches what `node_template` selects now (Karpenter's `CloudProvider.IsDrifted`): its
  AMI is not the one the template picks for `instance_type` (a `launchTemplate` makes no AMI or
  security-group drift), its subnet or security groups are not those the selectors match
  (`drift.py`). `NodeNotFoundError` when the instance is gone, `CloudProviderError` when the
  template selects nothing (no drift is concluded from an error).
- `default_node_template` — the AWSNodeTemplate name used when a Provisioner names none
  (`default` for AWS; None when the provider needs no template).

`Instance` carries what the Node object needs: the node name, provider ID, labels (instance
type labels, zone, capacity type, provisioner name, plus whatever the provider's "kubelet" needs,
e.g. the kwok label for the simulated cloud), annotations, capacity and allocatable.
Neighbours: `simulated/provider.py`, `tests/fakes/cloudprovider.py`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.drift import Drift
from controller.cloudprovider.errors import CloudProviderError, NodeNotFoundError
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.core.resources import Resources
from controller.scheduling.instancetypes import OfferingKey, new_instance_type
from controller.scheduling.types import InstanceType, NewNode, Offering, ProvisionerSpec

ICE_TTL_SECONDS = 45.0

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class NodeRequest:
    """One node to launch: the provisioner, the merged requirements and the instance-type
    options (cheapest first), plus the requests it was computed for (pods + daemonsets), the
    provisioner's spec (labels, taints, kubelet for the node's bootstrap) and its resolved
    AWSNodeTemplate (None when the provider needs none)."""

    provisioner: str
    requirements: Requirements
    instance_type_options: tuple[InstanceType, ...]
    requests: Resources = field(default_factory=dict)
    spec: ProvisionerSpec | None = None
    node_template: AWSNodeTemplate | None = None

    @staticmethod
    def from_new_node(
        node: NewNode, spec: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> NodeRequest:
        return NodeRequest(
            node.provisioner, node.requirements, node.instance_type_options, node.requests, spec, node_template
        )


@dataclass(frozen=True)
class Instance:
    """A launched machine as the cloud reports it."""

    provider_id: str
    name: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    provisioner: str
    created_at: float
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    capacity: Resources = field(default_factory=dict)
    allocatable: Resources = field(default_factory=dict)


class CloudProvider(Protocol):
    name: str
    default_node_template: str | None

    def create(self, request: NodeRequest) -> Instance: ...

    def delete(self, provider_id: str) -> None: ...

    def get(self, provider_id: str) -> Instance: ...

    def list(self) -> list[Instance]: ...

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]: ...

    def is_drifted(
        self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate
    ) -> Drift | None: ...


class UnavailableOfferings:
    """The insufficient-capacity cache: offerings that failed recently, for `ttl` seconds each.

    Re-marking extends the TTL; `version` changes whenever the set changes, so providers can
    cache the catalog they derive from it (thread-safe).
    """

    def __init__(self, clock: Clock, ttl: float = ICE_TTL_SECONDS) -> None:
        self._clock = clock
        self._ttl = ttl
        self._until: dict[OfferingKey, float] = {}
        self._lock = threading.Lock()
        self._version = 0

    def mark(self, instance_type: str, zone: str, capacity_type: str) -> None:
        with self._lock:
            self._until[(instance_type, zone, capacity_type)] = self._clock.now() + self._ttl
            self._version += 1

    def _expire(self) -> None:
        now = self._clock.now()
        gone = [k for k, until in self._until.items() if until <= now]
        for key in gone:
            del self._until[key]
        if gone:
            self._version += 1

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        with self._lock:
            self._expire()
            return (instance_type, zone, capacity_type) in self._until

    def snapshot(self) -> tuple[int, frozenset[OfferingKey]]:
        with self._lock:
            self._expire()
            return self._version, frozenset(self._until)


def with_unavailable(types: Iterable[InstanceType], unavailable: frozenset[OfferingKey]) -> tuple[InstanceType, ...]:
    """The catalog with cached-unavailable offerings marked `available=False` (pure)."""
    gone = unavailable
    if not gone:
        return tuple(types)
    out = []
    for it in types:
        if not any((it.name, o.zone, o.capacity_type) in unavailable for o in it.offerings):
            out.append(it)
            continue
        offerings = [
            Offering(o.zone, o.capacity_type, o.price, o.available and (it.name, o.zone, o.capacity_type) not in gone)
            for o in it.offerings
        ]
        out.append(new_instance_type(it.name, it.labels, it.capacity, it.overhead, offerings))
    return tuple(out)


def instance_labels(it: InstanceType, offering: Offering, provisioner: str) -> dict[str, str]:
    """The labels a launched instance reports: the type's single-valued labels, the actual zone
    and capacity type, and the provisioner name (spec §5.9 step 10)."""
    out = dict(it.labels)
    out[L.ZONE] = offering.zone
    out[L.CAPACITY_TYPE] = offering.capacity_type
    out[L.PROVISIONER_NAME] = provisioner
    out[L.INSTANCE_TYPE] = it.name
    return out


def terminate_instance(cloud: CloudProvider, provider_id: str, what: str) -> bool:
    """Terminate one instance; True once it is gone (`NodeNotFoundError` counts as success).

    Another cloud error is logged as "`what`: cause" and gives False: the caller retries on its
    next pass, and garbage collection finds an instance nobody retries for.
    """
    try:
        cloud.delete(provider_id)
    except NodeNotFoundError:
        return True
    except CloudProviderError as err:
        log.warning("%s: %s", what, err)
        return False
    return True
