"""`SimulatedCloudProvider`: a runnable `CloudProvider` without a cloud account.

Instance types come from `catalog.simulated_catalog()`, shaped per provisioner through its
kubelet settings and node template with the AWS formulas, or from a catalog given to it, which
with `reshape=False` is used as written (capacity and overhead as given: e.g. Karpenter kwok's
types for the side-by-side bench, `bench/karpenter_e2e.py`); instances
are rows of a SQLite file (`store.py`) so they outlive the controller. Provider IDs look like
`simulated:///<zone>/<instance-id>`; the node name is the instance ID. Each launched instance
"boots" a kwok kubelet: its labels carry `node_label` (by default `kwok.x-k8s.io/node=fake`, the
selector the local cluster's kwok manages) so the Node turns Ready and its pods Running.

Launch (see `scheduling.instancetypes.launch_order`): spot before on-demand, cheapest first; an offering in an
outage (or hit by an injected insufficient-capacity fault) is put in the 45 s
insufficient-capacity cache and the next option is tried. Each instance boots the AMI its node
template selects for its type (`images.py`, picked by the AWS resolver's `ami_for`), recorded
on the instance and as the `karpenter.k8s.aws/instance-ami-id` label, as on EC2; `is_drifted`
compares it with what the template selects now.

API economy as on EC2: each method is counted (`calls`) as the EC2 calls the AWS provider makes
for it — `create` one CreateFleet, shared as the AWS provider shares it by concurrent identical
requests (`cloudprovider/batcher.py`, Karpenter's CreateFleet window: one call, one instance per
request, a throttled call refuses them all; DescribeInstances by ID and TerminateInstances are
merged the same way), `delete` a DescribeInstances and a TerminateInstances, `get`,
`list`, `is_drifted` and `has_seen` one DescribeInstances — and, given `api_limits`
(`aws.ratelimit.Buckets`, EC2's per-action buckets as Karpenter's kwok EC2 sets them: the
controller passes them unless `--simulated-api-limits=false`), a call whose bucket is empty is
refused with `ThrottledError` before it does anything (`throttled` counts them, `throttle_seconds`
sums the retry-after they asked for; all are on /metrics too, `karpy_cloudprovider_api_calls_total`
/ `_api_throttled_total` / `_api_throttle_seconds_total`). Buckets are per
provider (one controller's account view), timed by the injected clock. Faults a test queues
in the store per call (`store.fail_next_calls`) come after the buckets: a throttle is the same
`ThrottledError`, a timeout waits (the injected `sleep`) and fails with nothing done, a lost answer
does the call, waits and fails the same way. Knobs for tests:
`store.fail_next_calls(operation, n, kind, seconds)`, `store.fail_next_creates(n, kind)`,
`store.set_outage(type, zone, capacity_type)`,
`store.register_image(image)`, `store.publish_release(family, arch, image_id)`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.aws.amifamily import node_shape
from controller.cloudprovider.aws.overhead import NodeShape
from controller.cloudprovider.aws.ratelimit import Buckets
from controller.cloudprovider.aws.resolver import Ami, ami_for
from controller.cloudprovider.aws.shaping import for_provisioner
from controller.cloudprovider.base import Instance, NodeRequest, UnavailableOfferings, instance_labels, with_unavailable
from controller.cloudprovider.batcher import (
    CREATE_FLEET_WINDOW,
    DESCRIBE_INSTANCES_WINDOW,
    TERMINATE_INSTANCES_WINDOW,
    Batcher,
    Window,
)
from controller.cloudprovider.drift import Drift, ami_drift
from controller.cloudprovider.errors import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeNotFoundError,
    ThrottledError,
)
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.cloudprovider.simulated.images import resolve_amis
from controller.cloudprovider.simulated.store import (
    FAULT_ANSWER_LOST,
    FAULT_INSUFFICIENT_CAPACITY,
    FAULT_THROTTLE,
    FAULT_TIMEOUT,
    InstanceRow,
    Store,
)
from controller.core import labels as L
from controller.metrics import CLOUD_API_CALLS, CLOUD_API_THROTTLE_SECONDS, CLOUD_API_THROTTLED
from controller.scheduling.instancetypes import LaunchOption, launch_order
from controller.scheduling.types import InstanceType, KubeletSpec, ProvisionerSpec

log = logging.getLogger(__name__)

SCHEME = "simulated://"
KWOK_NODE_LABEL = "kwok.x-k8s.io/node=fake"


def provider_id(zone: str, instance_id: str) -> str:
    return f"{SCHEME}/{zone}/{instance_id}"


def instance_id_of(pid: str) -> str:
    """The instance ID of a `simulated:///<zone>/<id>` provider ID (NodeNotFoundError otherwise)."""
    if not pid.startswith(SCHEME + "/"):
        raise NodeNotFoundError(f"not a simulated provider id: {pid!r}")
    return pid.rsplit("/", 1)[-1]


class SimulatedCloudProvider:
    name = "simulated"
    default_node_template: str | None = None  # needs none; a referenced one still shapes the nodes

    def __init__(
        self,
        db_path: str | Path,
        clock: Clock,
        cluster: str = "karpy",
        catalog: Sequence[InstanceType] | None = None,
        node_label: str = KWOK_NODE_LABEL,
        ice_ttl: float = 45.0,
        api_limits: Buckets | None = None,
        reshape: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        fleet_window: Window = CREATE_FLEET_WINDOW,
        describe_window: Window = DESCRIBE_INSTANCES_WINDOW,
        terminate_window: Window = TERMINATE_INSTANCES_WINDOW,
    ) -> None:
        self.store = Store(db_path)
        self._clock = clock
        self._cluster = cluster
        self._catalog = tuple(catalog) if catalog is not None else simulated_catalog()
        self._node_label = node_label
        self._reshape = reshape
        self.unavailable = UnavailableOfferings(clock, ice_ttl)
        self._types_cache: tuple[int, tuple[InstanceType, ...]] | None = None
        self._shaped: list[tuple[KubeletSpec | None, NodeShape, tuple[InstanceType, ...]]] = []
        self._lock = threading.Lock()
        self._limits = api_limits
        self._sleep = sleep
        self._fleets: Batcher[NodeRequest, Instance] = Batcher(
            "create_fleet", fleet_window, self._create_fleet, key=self._fleet_key
        )
        self._describes: Batcher[tuple[str, str], None] = Batcher(
            "describe_instances", describe_window, self._describe_batch, key=lambda _: ""
        )
        self._terminations: Batcher[tuple[str, str], None] = Batcher(
            "terminate_instances", terminate_window, self._terminate_batch, key=lambda _: ""
        )
        self.calls: dict[str, int] = {}  # EC2 operation → calls answered or refused
        self.throttled: dict[str, int] = {}  # EC2 operation → calls refused (RequestLimitExceeded)
        self.throttle_seconds: dict[str, float] = {}  # EC2 operation → retry-after the refusals asked for

    def _call(self, operation: str, what: str) -> float | None:
        """Count one EC2-like call; refuse it with `ThrottledError` when its bucket is empty (or a
        throttle fault is queued), fail it after a queued timeout. A lost answer's wait in seconds
        is returned: the caller does the call, then `_lose_answer`."""
        with self._lock:
            self.calls[operation] = self.calls.get(operation, 0) + 1
        CLOUD_API_CALLS.labels(provider=self.name, operation=operation).inc()
        wait = self._limits.take(operation, self._clock.now()) if self._limits is not None else 0.0
        fault = self.store.take_call_fault(operation) if wait <= 0 else None
        if fault is not None and fault[0] == FAULT_THROTTLE:
            wait = 1.0
        if wait > 0:
            with self._lock:
                self.throttled[operation] = self.throttled.get(operation, 0) + 1
                self.throttle_seconds[operation] = self.throttle_seconds.get(operation, 0.0) + wait
            CLOUD_API_THROTTLED.labels(provider=self.name, operation=operation).inc()
            CLOUD_API_THROTTLE_SECONDS.labels(provider=self.name, operation=operation).inc(wait)
            raise ThrottledError(f"{what}: ec2 {_name(operation)}: RequestLimitExceeded: Request limit exceeded.", wait)
        if fault is not None and fault[0] == FAULT_TIMEOUT:
            self._lose_answer(operation, what, fault[1])
        return fault[1] if fault is not None and fault[0] == FAULT_ANSWER_LOST else None

    def _describe(self, what: str) -> None:
        """A DescribeInstances: reading, so a lost answer is a timeout like any other."""
        lost = self._call("describe_instances", what)
        if lost is not None:
            self._lose_answer("describe_instances", what, lost)

    def _lose_answer(self, operation: str, what: str, seconds: float) -> None:
        self._sleep(seconds)
        raise CloudProviderError(f"{what}: ec2 {_name(operation)}: RequestTimeout: no answer within {seconds:g}s")

    # Catalog ----------------------------------------------------------------------------------

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]:
        version, unavailable = self.unavailable.snapshot()
        with self._lock:
            if self._types_cache is None or self._types_cache[0] != version:
                self._types_cache = (version, with_unavailable(self._catalog, unavailable))
                self._shaped.clear()
            types = self._types_cache[1]
            if not self._reshape:
                return types
            kubelet = provisioner.kubelet if provisioner is not None else None
            shape = node_shape(node_template)
            # KubeletSpec holds dicts (unhashable): a short list of the shapes asked for
            shaped = next((t for k, s, t in self._shaped if k == kubelet and s == shape), None)
            if shaped is None:
                shaped = for_provisioner(types, kubelet, node_template)
                self._shaped.append((kubelet, shape, shaped))
            return shaped

    # Instances --------------------------------------------------------------------------------

    def create(self, request: NodeRequest) -> Instance:
        return self._fleets.submit(request)

    def _fleet_key(self, request: NodeRequest) -> Hashable:
        """What the AWS provider's CreateFleet parameters would hold: provisioner, node template and
        the offerings in launch order (identical requests share one call)."""
        _, unavailable = self.unavailable.snapshot()
        options = launch_order(request.instance_type_options, request.requirements, unavailable)
        template = request.node_template.name if request.node_template is not None else None
        offerings = tuple((o.instance_type.name, o.offering.zone, o.offering.capacity_type) for o in options)
        return request.provisioner, template, offerings

    def _create_fleet(self, requests: Sequence[NodeRequest]) -> list[Instance | Exception]:
        """One CreateFleet for the batch's identical requests, one instance (or error) each."""
        what = f"launching for provisioner {requests[0].provisioner}"
        lost = self._call("create_fleet", what)
        out: list[Instance | Exception] = []
        for request in requests:
            try:
                out.append(self._create(request))
            except CloudProviderError as err:
                out.append(err)
        if lost is not None:
            self._lose_answer("create_fleet", what, lost)
        return out

    def _create(self, request: NodeRequest) -> Instance:
        _, unavailable = self.unavailable.snapshot()
        options = launch_order(request.instance_type_options, request.requirements, unavailable)
        if not options:
            raise InsufficientCapacityError("all requested instance types were unavailable during launch")
        amis = self._amis(request.node_template)
        picked = [(o, ami_for(amis, o.instance_type.labels, False)) for o in options]
        booting = [(o, ami) for o, ami in picked if ami is not None]
        if not booting:
            raise CloudProviderError(
                f"launching for provisioner {request.provisioner}: no instance types satisfy requirements of amis"
            )
        for option, ami in booting:
            if not self._has_capacity(option):
                self.unavailable.mark(option.instance_type.name, option.offering.zone, option.offering.capacity_type)
                continue
            return self._launch(request, option, ami)
        raise InsufficientCapacityError(
            f"insufficient capacity for all {len(options)} offerings of "
            f"{len(request.instance_type_options)} instance type(s)"
        )

    def _has_capacity(self, option: LaunchOption) -> bool:
        it, offering = option.instance_type, option.offering
        if self.store.in_outage(it.name, offering.zone, offering.capacity_type):
            return False
        fault = self.store.take_create_fault()
        if fault == FAULT_INSUFFICIENT_CAPACITY:
            return False
        if fault is not None:
            raise CloudProviderError(f"creating instance: injected fault {fault!r}")
        return True

    def _amis(self, template: AWSNodeTemplate | None) -> list[Ami]:
        return resolve_amis(template, self.store.images(), self.store.releases())

    def _launch(self, request: NodeRequest, option: LaunchOption, ami: Ami) -> Instance:
        it, offering = option.instance_type, option.offering
        instance_id = "i-" + uuid.uuid4().hex[:17]
        labels = instance_labels(it, offering, request.provisioner)
        labels[L.INSTANCE_AMI_ID] = ami.id
        annotations = {}
        if self._node_label:
            key, _, value = self._node_label.partition("=")
            labels[key] = value
            annotations[key] = value
        row = InstanceRow(
            instance_id=instance_id,
            cluster=self._cluster,
            provisioner=request.provisioner,
            name=instance_id,
            instance_type=it.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price=offering.price,
            created_at=self._clock.now(),
            terminated_at=None,
            body={
                "image_id": ami.id,
                "labels": labels,
                "annotations": annotations,
                "capacity": {k: v for k, v in it.capacity.items() if v},
                "allocatable": {k: v for k, v in it.allocatable.items() if v > 0},
            },
        )
        self.store.insert(row)
        log.info("launched instance %s (%s, %s, %s)", instance_id, it.name, offering.zone, offering.capacity_type)
        return _instance(row)

    def delete(self, provider_id: str) -> None:
        instance_id = instance_id_of(provider_id)
        what = f"terminating instance {instance_id}"
        self._described(instance_id, what)
        row = self.store.get(instance_id)
        if row is None or row.cluster != self._cluster or row.terminated_at is not None:
            raise NodeNotFoundError(f"instance {instance_id} not found")
        self._terminations.submit((instance_id, what))

    def _described(self, instance_id: str, what: str) -> None:
        """A DescribeInstances of one instance, merged with concurrent callers' (one call a batch)."""
        self._describes.submit((instance_id, what))

    def _describe_batch(self, items: Sequence[tuple[str, str]]) -> list[None]:
        self._describe(items[0][1] if len(items) == 1 else f"{len(items)} instances")
        return [None] * len(items)

    def _terminate_batch(self, items: Sequence[tuple[str, str]]) -> list[Exception | None]:
        """One TerminateInstances for the batch; an instance already gone fails only its caller."""
        what = items[0][1] if len(items) == 1 else f"terminating {len(items)} instances"
        lost = self._call("terminate_instances", what)
        out: list[Exception | None] = []
        for instance_id, _ in items:
            if self.store.terminate(instance_id, self._clock.now()):
                log.info("terminated instance %s", instance_id)
                out.append(None)
            else:
                out.append(NodeNotFoundError(f"instance {instance_id} not found"))
        if lost is not None:
            self._lose_answer("terminate_instances", what, lost)
        return out

    def get(self, provider_id: str) -> Instance:
        instance_id = instance_id_of(provider_id)
        self._described(instance_id, f"instance {instance_id}")
        row = self.store.get(instance_id)
        if row is None or row.terminated_at is not None or row.cluster != self._cluster:
            raise NodeNotFoundError(f"instance {provider_id} not found")
        return _instance(row)

    def list(self) -> list[Instance]:
        self._describe(f"cluster {self._cluster}")
        return [_instance(r) for r in self.store.running(self._cluster)]

    def is_drifted(self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate) -> Drift | None:
        """AMI drift only: the simulated cloud has no subnets or security groups to drift from."""
        instance_id = instance_id_of(provider_id)
        self._described(instance_id, f"instance {instance_id}")
        row = self.store.get(instance_id)
        if row is None or row.terminated_at is not None or row.cluster != self._cluster:
            raise NodeNotFoundError(f"instance {provider_id} not found")
        if node_template.launch_template:
            return None
        selected = ami_for(self._amis(node_template), instance_type.labels, False)
        return ami_drift(str(row.body.get("image_id", "")), selected.id if selected else None, node_template.name)

    def has_seen(self, provider_id: str) -> bool:
        """The store has a record of this instance (running or terminated) in this cluster."""
        instance_id = instance_id_of(provider_id)
        self._described(instance_id, f"instance {instance_id}")
        row = self.store.get(instance_id)
        return row is not None and row.cluster == self._cluster


def _name(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def _instance(row: InstanceRow) -> Instance:
    body = row.body
    return Instance(
        provider_id=provider_id(row.zone, row.instance_id),
        name=row.name,
        instance_type=row.instance_type,
        zone=row.zone,
        capacity_type=row.capacity_type,
        price=row.price,
        provisioner=row.provisioner,
        created_at=row.created_at,
        labels=dict(body.get("labels", {})),
        annotations=dict(body.get("annotations", {})),
        capacity={str(k): int(v) for k, v in body.get("capacity", {}).items()},
        allocatable={str(k): int(v) for k, v in body.get("allocatable", {}).items()},
    )
