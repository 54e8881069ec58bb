"""The simulated cloud provider: launches, persistence in SQLite, faults and fallbacks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import FakeClock
from controller.cloudprovider.aws.ratelimit import Buckets
from controller.cloudprovider.base import NodeRequest
from controller.cloudprovider.batcher import Window
from controller.cloudprovider.drift import DriftReason
from controller.cloudprovider.errors import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeNotFoundError,
    ThrottledError,
)
from controller.cloudprovider.simulated.catalog import catalog_from_json, simulated_catalog
from controller.cloudprovider.simulated.images import default_image_id
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.cloudprovider.simulated.store import FAULT_ANSWER_LOST, FAULT_THROTTLE, FAULT_TIMEOUT, Image
from controller.core import labels as L
from controller.core.requirements import Requirements


def types(*wanted: str) -> tuple:  # type: ignore[type-arg]
    by_name = {it.name: it for it in simulated_catalog()}
    return tuple(by_name[n] for n in wanted)


@pytest.fixture
def provider(tmp_path: Path) -> SimulatedCloudProvider:
    return SimulatedCloudProvider(tmp_path / "cloud.db", FakeClock(), cluster="test")


def test_create_launches_cheapest_spot_and_reports_node_labels(provider: SimulatedCloudProvider) -> None:
    inst = provider.create(NodeRequest("default", Requirements(), types("m5.large", "m5.xlarge")))
    assert inst.instance_type == "m5.large"
    assert inst.capacity_type == L.CAPACITY_TYPE_SPOT
    assert inst.provider_id == f"simulated:///{inst.zone}/{inst.name}"
    assert inst.labels[L.PROVISIONER_NAME] == "default"
    assert inst.labels["kwok.x-k8s.io/node"] == "fake"
    assert inst.capacity["cpu"] == 2000 and inst.allocatable["cpu"] < 2000


def test_instances_outlive_the_provider_object(tmp_path: Path) -> None:
    first = SimulatedCloudProvider(tmp_path / "cloud.db", FakeClock(), cluster="test")
    inst = first.create(NodeRequest("default", Requirements(), types("m5.large")))
    second = SimulatedCloudProvider(tmp_path / "cloud.db", FakeClock(), cluster="test")
    assert [i.provider_id for i in second.list()] == [inst.provider_id]
    assert second.get(inst.provider_id).instance_type == "m5.large"
    other_cluster = SimulatedCloudProvider(tmp_path / "cloud.db", FakeClock(), cluster="other")
    assert other_cluster.list() == []


def test_delete_then_get_and_delete_report_not_found(provider: SimulatedCloudProvider) -> None:
    inst = provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    provider.delete(inst.provider_id)
    assert provider.list() == []
    with pytest.raises(NodeNotFoundError):
        provider.get(inst.provider_id)
    with pytest.raises(NodeNotFoundError):
        provider.delete(inst.provider_id)


def test_outage_falls_back_and_caches_the_offering(provider: SimulatedCloudProvider) -> None:
    cheapest = provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    provider.store.set_outage("m5.large", cheapest.zone, "spot")
    inst = provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    assert (inst.zone, inst.capacity_type) != (cheapest.zone, "spot")
    (m5,) = [it for it in provider.get_instance_types() if it.name == "m5.large"]
    assert [o.available for o in m5.offerings if (o.zone, o.capacity_type) == (cheapest.zone, "spot")] == [False]


def test_injected_faults(provider: SimulatedCloudProvider) -> None:
    provider.store.fail_next_creates(1, "error")
    with pytest.raises(CloudProviderError):
        provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    assert provider.list() == []
    provider.store.fail_next_creates(6)  # every offering of m5.large: 3 zones x 2 capacity types
    with pytest.raises(InsufficientCapacityError):
        provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    assert provider.list() == []


def template(**spec: object) -> AWSNodeTemplate:
    return AWSNodeTemplate.from_wire({"metadata": {"name": "nodes"}, "spec": {"subnetSelector": {"a": "b"}, **spec}})


def test_an_instance_boots_the_selected_ami_and_drifts_when_the_selection_moves(
    provider: SimulatedCloudProvider,
) -> None:
    first = template(amiSelector={"aws-ids": "ami-0aaa"})
    m5 = types("m5.large")[0]
    inst = provider.create(NodeRequest("default", Requirements(), (m5,), node_template=first))
    assert inst.labels[L.INSTANCE_AMI_ID] == "ami-0aaa"
    assert provider.is_drifted(inst.provider_id, m5, first) is None
    drift = provider.is_drifted(inst.provider_id, m5, template(amiSelector={"aws-ids": "ami-0bbb"}))
    assert drift is not None and drift.reason is DriftReason.AMI
    assert drift.message == "AMI ami-0aaa is no longer selected by AWSNodeTemplate nodes (now ami-0bbb)"
    assert provider.is_drifted(inst.provider_id, m5, template(launchTemplate="lt")) is None  # no AMI drift then
    provider.delete(inst.provider_id)
    with pytest.raises(NodeNotFoundError):
        provider.is_drifted(inst.provider_id, m5, first)


def test_a_new_family_release_drifts_instances_of_the_old_one(provider: SimulatedCloudProvider) -> None:
    m5 = types("m5.large")[0]
    inst = provider.create(NodeRequest("default", Requirements(), (m5,), node_template=template()))
    assert inst.labels[L.INSTANCE_AMI_ID] == default_image_id("AL2", "amd64")
    assert provider.is_drifted(inst.provider_id, m5, template()) is None
    provider.store.publish_release("AL2", "amd64", "ami-0new")
    drift = provider.is_drifted(inst.provider_id, m5, template())
    assert drift is not None and "now ami-0new" in drift.message
    assert provider.create(NodeRequest("default", Requirements(), (m5,))).labels[L.INSTANCE_AMI_ID] == "ami-0new"


def test_types_no_selected_image_fits_are_not_launched(provider: SimulatedCloudProvider) -> None:
    provider.store.register_image(Image("ami-arm", "arm", "arm64", {"team": "a"}))
    arm_only = template(amiSelector={"team": "a"})
    with pytest.raises(CloudProviderError, match="no instance types satisfy requirements of amis"):
        provider.create(NodeRequest("default", Requirements(), types("m5.large"), node_template=arm_only))
    inst = provider.create(
        NodeRequest("default", Requirements(), types("m5.large", "m6g.large"), node_template=arm_only)
    )
    assert inst.instance_type == "m6g.large" and inst.labels[L.INSTANCE_AMI_ID] == "ami-arm"
    with pytest.raises(CloudProviderError, match="no amis exist"):
        provider.create(
            NodeRequest("default", Requirements(), types("m5.large"), node_template=template(amiSelector={"x": "y"}))
        )


def test_calls_are_counted_as_the_ec2_calls_aws_would_answer(provider: SimulatedCloudProvider) -> None:
    inst = provider.create(NodeRequest("default", Requirements(), types("m5.large")))
    provider.get(inst.provider_id)
    provider.list()
    provider.delete(inst.provider_id)
    assert provider.calls == {"create_fleet": 1, "describe_instances": 3, "terminate_instances": 1}
    assert provider.throttled == {}  # no limits given: nothing refused


def test_api_limits_refuse_a_call_once_its_bucket_is_empty_until_it_refills(tmp_path: Path) -> None:
    clock = FakeClock()
    limits = Buckets({"create_fleet": (5.0, 50.0), "terminate_instances": (5.0, 100.0)})
    cloud = SimulatedCloudProvider(tmp_path / "cloud.db", clock, cluster="test", node_label="", api_limits=limits)
    request = NodeRequest("default", Requirements(), types("m5.large"))
    labels = {"provider": "simulated", "operation": "create_fleet"}
    before = [sample(f"karpy_cloudprovider_api_{n}_total", labels) for n in ("calls", "throttled", "throttle_seconds")]
    launched = [cloud.create(request) for _ in range(50)]  # CreateFleet's burst
    with pytest.raises(ThrottledError, match="CreateFleet: RequestLimitExceeded") as refused:
        cloud.create(request)
    assert refused.value.retry_after == pytest.approx(0.2)
    after = [sample(f"karpy_cloudprovider_api_{n}_total", labels) for n in ("calls", "throttled", "throttle_seconds")]
    assert [a - b for a, b in zip(after, before, strict=True)] == pytest.approx([51, 1, 0.2])  # on /metrics
    assert len(cloud.list()) == 50  # the refused call launched nothing
    assert cloud.calls["create_fleet"] == 51 and cloud.throttled == {"create_fleet": 1}
    assert cloud.throttle_seconds == {"create_fleet": pytest.approx(0.2)}  # the retry-after it asked for
    clock.step(0.2)
    launched.append(cloud.create(request))
    for inst in launched[:2]:
        cloud.delete(inst.provider_id)  # another bucket, full
    assert len(cloud.list()) == 49


def test_throttled_describes_raise_and_leave_the_instance_alone(tmp_path: Path) -> None:
    clock = FakeClock()
    limits = Buckets({}, describe=(1.0, 1.0))
    cloud = SimulatedCloudProvider(tmp_path / "cloud.db", clock, cluster="test", node_label="", api_limits=limits)
    inst = cloud.create(NodeRequest("default", Requirements(), types("m5.large")))
    assert cloud.get(inst.provider_id).name == inst.name
    with pytest.raises(ThrottledError):
        cloud.delete(inst.provider_id)
    clock.step(1.0)
    assert [i.name for i in cloud.list()] == [inst.name]  # still running
    with pytest.raises(ThrottledError):
        cloud.has_seen(inst.provider_id)


def test_a_given_catalog_is_used_as_written_unless_reshaped(tmp_path: Path) -> None:
    catalog = catalog_from_json(
        {"instanceTypes": [{
            "name": "c-2x-amd64-linux", "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "overhead": {"cpu": "100m", "memory": "10Mi"}, "labels": {L.ARCH: "amd64"},
            "offerings": [{"zone": "test-zone-a", "capacityType": "on-demand", "price": 0.05}],
        }]}
    )  # fmt: skip
    template = AWSNodeTemplate.from_wire({"metadata": {"name": "t"}, "spec": {}})
    as_written = SimulatedCloudProvider(tmp_path / "a.db", FakeClock(), catalog=catalog, reshape=False)
    assert as_written.get_instance_types(None, template) == catalog
    shaped = SimulatedCloudProvider(tmp_path / "b.db", FakeClock(), catalog=catalog)
    assert [it.overhead for it in shaped.get_instance_types(None, template)] != [it.overhead for it in catalog]


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def faulty(tmp_path: Path) -> tuple[SimulatedCloudProvider, list[float]]:
    waits: list[float] = []
    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", FakeClock(), cluster="test", node_label="", sleep=waits.append
    )
    return cloud, waits


def test_a_throttle_fault_refuses_the_call_and_does_nothing(tmp_path: Path) -> None:
    cloud, waits = faulty(tmp_path)
    request = NodeRequest("default", Requirements(), types("m5.large"))
    cloud.store.fail_next_calls("create_fleet", 1, FAULT_THROTTLE)
    with pytest.raises(ThrottledError, match="CreateFleet: RequestLimitExceeded"):
        cloud.create(request)
    assert cloud.list() == [] and cloud.throttled == {"create_fleet": 1} and waits == []
    cloud.create(request)  # the fault is spent
    assert len(cloud.list()) == 1


def test_a_timeout_fails_after_its_wait_with_nothing_done(tmp_path: Path) -> None:
    cloud, waits = faulty(tmp_path)
    inst = cloud.create(NodeRequest("default", Requirements(), types("m5.large")))
    cloud.store.fail_next_calls("terminate_instances", 1, FAULT_TIMEOUT, 3.0)
    with pytest.raises(CloudProviderError, match="TerminateInstances: RequestTimeout") as err:
        cloud.delete(inst.provider_id)
    assert not isinstance(err.value, (ThrottledError, NodeNotFoundError)) and waits == [3.0]
    assert [i.name for i in cloud.list()] == [inst.name]  # still running
    cloud.store.fail_next_calls("describe_instances", 1, FAULT_ANSWER_LOST, 1.0)
    with pytest.raises(CloudProviderError, match="DescribeInstances: RequestTimeout"):
        cloud.get(inst.provider_id)


def test_a_lost_answer_launches_an_instance_the_caller_never_hears_of(tmp_path: Path) -> None:
    cloud, waits = faulty(tmp_path)
    cloud.store.fail_next_calls("create_fleet", 1, FAULT_ANSWER_LOST, 2.0)
    with pytest.raises(CloudProviderError, match="CreateFleet: RequestTimeout: no answer within 2s"):
        cloud.create(NodeRequest("default", Requirements(), types("m5.large")))
    assert len(cloud.list()) == 1 and waits == [2.0]  # a leak for garbage collection
    (leaked,) = cloud.list()
    cloud.store.fail_next_calls("terminate_instances", 1, FAULT_ANSWER_LOST)
    with pytest.raises(CloudProviderError, match="RequestTimeout"):
        cloud.delete(leaked.provider_id)
    assert cloud.list() == []  # terminated all the same
    with pytest.raises(NodeNotFoundError):
        cloud.delete(leaked.provider_id)


def test_a_bad_call_fault_is_refused_and_queues_nothing(tmp_path: Path) -> None:
    cloud, _ = faulty(tmp_path)
    with pytest.raises(ValueError, match="call fault kind 'slow'"):
        cloud.store.fail_next_calls("create_fleet", 1, "slow")
    with pytest.raises(ValueError, match="must not be negative"):
        cloud.store.fail_next_calls("create_fleet", 1, FAULT_TIMEOUT, -1.0)
    assert cloud.store.take_call_fault("create_fleet") is None


def test_concurrent_launches_and_terminations_are_merged_as_on_ec2(tmp_path: Path) -> None:
    def closing_at(n: int) -> Window:
        return Window(idle=30.0, max_wait=60.0, max_items=n)  # the batch is what the test sends

    cloud = SimulatedCloudProvider(
        tmp_path / "cloud.db", FakeClock(), cluster="test",
        fleet_window=closing_at(5), describe_window=closing_at(6), terminate_window=closing_at(5),
    )  # fmt: skip
    request = NodeRequest("default", Requirements(), types("m5.large", "m5.xlarge"))
    with ThreadPoolExecutor(6) as pool:
        launched = list(pool.map(lambda _: cloud.create(request), range(5)))
        assert len({i.provider_id for i in launched}) == 5 and cloud.calls == {"create_fleet": 1}
        gone = "simulated:///us-west-2a/i-0000000000000000"  # unknown: fails its own caller only

        def delete(provider_id: str) -> str:
            try:
                cloud.delete(provider_id)
            except NodeNotFoundError as err:
                return str(err)
            return "deleted"

        outcomes = list(pool.map(delete, [*(i.provider_id for i in launched), gone]))
    assert outcomes == ["deleted"] * 5 + ["instance i-0000000000000000 not found"]
    assert cloud.calls == {"create_fleet": 1, "describe_instances": 1, "terminate_instances": 1}
    assert cloud.list() == []
