"""EC2 calls batched (`aws/batching.py`) through the AWS provider: against moto_server, and at the
adapter seam for what moto cannot do (partial fulfilment, a surplus instance). Every test also
checks that no instance is left without a caller: each one EC2 launched is handed to exactly one
caller or terminated."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest

from controller.clock import FakeClock
from controller.cloudprovider.aws.api import ApiError, AWSApi, AWSError
from controller.cloudprovider.aws.batching import EC2Batchers
from controller.cloudprovider.aws.pricing import Prices
from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings, instance_id_of
from controller.cloudprovider.base import Instance, NodeRequest
from controller.cloudprovider.batcher import (
    CREATE_FLEET_WINDOW,
    DESCRIBE_INSTANCES_WINDOW,
    TERMINATE_INSTANCES_WINDOW,
    Window,
)
from controller.cloudprovider.errors import InsufficientCapacityError, NodeNotFoundError
from tests.controller.cloudprovider.aws.builders import Env, make_provider, make_request, make_template
from tests.controller.cloudprovider.aws.test_provider_fake import PRICES, TEMPLATE
from tests.fakes.aws import FakeTransport
from tests.support.moto import MotoServer

T = TypeVar("T")


def closing_at(items: int) -> Window:
    """A window only the item count closes: the batch is whatever the test sends, on any machine."""
    return Window(idle=30.0, max_wait=60.0, max_items=items)


def batched(
    provider: AWSCloudProvider, fleet: int | None = None, describe: int | None = None, terminate: int | None = None
) -> None:
    """Batchers whose windows close at the given counts (Karpenter's windows for the others)."""
    provider.batchers = EC2Batchers(
        provider.api,
        fleet=closing_at(fleet) if fleet else CREATE_FLEET_WINDOW,
        describe=closing_at(describe) if describe else DESCRIBE_INSTANCES_WINDOW,
        terminate=closing_at(terminate) if terminate else TERMINATE_INSTANCES_WINDOW,
    )


def together(calls: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Run the calls at once, each in its own thread; their results or errors, in order."""

    def run(call: Callable[[], T]) -> T | Exception:
        try:
            return call()
        except Exception as err:
            return err

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def launch_all(provider: AWSCloudProvider, requests: Sequence[NodeRequest]) -> list[Instance | Exception]:
    return together([lambda r=r: provider.create(r) for r in requests])  # type: ignore[misc]


def moto_running(env: Env) -> set[str]:
    reservations = env.moto.client("ec2").describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )["Reservations"]
    return {i["InstanceId"] for r in reservations for i in r["Instances"]}


def test_identical_launches_share_one_create_fleet_and_each_caller_gets_its_own_instance(
    moto_server: MotoServer,
) -> None:
    env = make_provider(moto_server)
    batched(env.provider, fleet=6, describe=6)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    request = make_request(types, ["m5.large", "c5.large"], template, capacity_types=["on-demand"])
    launched = launch_all(env.provider, [request] * 6)
    assert all(isinstance(i, Instance) for i in launched), launched
    (fleet,) = env.transport.named("create_fleet")  # six launches, one call
    assert fleet["TargetCapacitySpecification"]["TotalTargetCapacity"] == 6
    ids = [instance_id_of(i.provider_id) for i in launched if isinstance(i, Instance)]
    assert len(set(ids)) == 6 and set(ids) == moto_running(env)  # one each, none without a caller
    assert len(env.transport.named("describe_instances")) == 1  # their six descriptions, one call too
    assert sorted(env.transport.named("describe_instances")[0]["InstanceIds"]) == sorted(ids)


def test_different_launches_are_separate_calls(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    batched(env.provider, fleet=2)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    small = make_request(types, ["m5.large"], template, capacity_types=["on-demand"])
    large = make_request(types, ["m5.xlarge"], template, capacity_types=["on-demand"])
    other = make_request(types, ["m5.large"], template, capacity_types=["on-demand"], provisioner="other")
    launched = launch_all(env.provider, [small, large, other, small, large, other])
    assert all(isinstance(i, Instance) for i in launched), launched
    fleets = env.transport.named("create_fleet")
    assert len(fleets) == 3 and all(f["TargetCapacitySpecification"]["TotalTargetCapacity"] == 2 for f in fleets)
    got = [(i.instance_type, i.provisioner) for i in launched if isinstance(i, Instance)]
    assert got == [("m5.large", "default"), ("m5.xlarge", "default"), ("m5.large", "other")] * 2
    assert len(moto_running(env)) == 6


def test_terminating_ten_instances_is_one_call_each_caller_told_its_own_outcome(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    batched(env.provider, fleet=10, describe=10, terminate=10)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    request = make_request(types, ["m5.large"], template, capacity_types=["on-demand"])
    launched = [i for i in launch_all(env.provider, [request] * 10) if isinstance(i, Instance)]
    assert len(launched) == 10
    env.transport.calls.clear()
    outcomes = together([lambda i=i: env.provider.delete(i.provider_id) for i in launched])  # type: ignore[misc]
    assert outcomes == [None] * 10
    (terminate,) = env.transport.named("terminate_instances")
    assert sorted(terminate["InstanceIds"]) == sorted(instance_id_of(i.provider_id) for i in launched)
    assert len(env.transport.named("describe_instances")) == 1  # delete looks first: those merged too
    assert moto_running(env) == set()


def test_an_instance_unknown_to_ec2_fails_only_its_own_caller(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    batched(env.provider, fleet=3, terminate=4)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    request = make_request(types, ["m5.large"], template, capacity_types=["on-demand"])
    launched = [i for i in launch_all(env.provider, [request] * 3) if isinstance(i, Instance)]
    ids = [instance_id_of(i.provider_id) for i in launched]
    unknown = "i-0123456789abcdef0"
    # DescribeInstances: EC2 fails the whole call for the unknown ID; each is asked alone then
    got = together([lambda p=p: env.provider.get(p) for p in [*(i.provider_id for i in launched), f"aws:///us-east-1a/{unknown}"]])  # type: ignore[misc]  # fmt: skip
    assert [g.provider_id for g in got[:3] if isinstance(g, Instance)] == [i.provider_id for i in launched]
    assert isinstance(got[3], NodeNotFoundError)
    # TerminateInstances: the same; the three known ones are terminated, the unknown one's caller hears why
    env.transport.calls.clear()
    done = together([lambda i=i: env.provider.batchers.terminate(i) for i in [*ids, unknown]])  # type: ignore[misc]
    assert all(isinstance(d, dict) for d in done[:3])
    assert isinstance(done[3], AWSError) and done[3].code.startswith("InvalidInstanceID")
    assert moto_running(env) == set()
    calls = env.transport.named("terminate_instances")
    assert len(calls[0]["InstanceIds"]) == 4 and all(len(c["InstanceIds"]) == 1 for c in calls[1:])


def fake_provider() -> tuple[FakeTransport, AWSCloudProvider]:
    transport = FakeTransport()
    provider = AWSCloudProvider(
        AWSApi(transport, sleep=lambda _: None),
        AWSSettings(region="us-east-1", cluster_name="c"),
        FakeClock(),
        Prices("us-east-1", PRICES),
        sleep=lambda _: None,
    )
    return transport, provider


def test_partial_fulfilment_the_callers_left_without_an_instance_get_insufficient_capacity() -> None:
    transport, provider = fake_provider()
    batched(provider, fleet=4, describe=3)
    transport.fleet_capacity = 3  # EC2 launches 3 of the 4 asked for, and says nothing about the 4th
    types = provider.get_instance_types(None, TEMPLATE)
    request = make_request(types, ["m5.large"], TEMPLATE, capacity_types=["on-demand"])
    launched = launch_all(provider, [request] * 4)
    instances = [i for i in launched if isinstance(i, Instance)]
    (failed,) = [e for e in launched if isinstance(e, Exception)]
    assert isinstance(failed, InsufficientCapacityError)
    assert "UnfulfillableCapacity: CreateFleet launched 3 of the 4 instances asked for" in str(failed)
    # one call for the four; the unlucky caller did not ask again for an offering nothing marked out
    assert [f["TargetCapacitySpecification"]["TotalTargetCapacity"] for f in transport.named("create_fleet")] == [4]
    assert sorted(instance_id_of(i.provider_id) for i in instances) == transport.live()  # nothing leaked


def test_partial_fulfilment_with_capacity_errors_marks_the_offering_and_the_rest_fall_back() -> None:
    transport, provider = fake_provider()
    quick = Window(idle=0.2, max_wait=2.0, max_items=3)  # the fallback's retries may come one by one
    provider.batchers = EC2Batchers(provider.api, fleet=quick, describe=quick)
    transport.fleet_capacity = 1
    types = provider.get_instance_types(None, TEMPLATE)
    request = make_request(types, ["c5.large", "m5.large"], TEMPLATE, capacity_types=["on-demand"])
    transport.out_of_capacity |= {("c5.large", "us-east-1a", "on-demand")}
    launched = launch_all(provider, [request] * 3)
    instances = [i for i in launched if isinstance(i, Instance)]
    errors = [e for e in launched if isinstance(e, Exception)]
    assert all(isinstance(e, InsufficientCapacityError) for e in errors), errors
    assert len(instances) + len(errors) == 3 and instances
    assert not any(
        o.available for it in provider.get_instance_types(None, TEMPLATE) if it.name == "c5.large"
        for o in it.offerings if o.zone == "us-east-1a" and o.capacity_type == "on-demand"
    )  # fmt: skip
    assert sorted(instance_id_of(i.provider_id) for i in instances) == transport.live()


def test_more_instances_than_asked_for_are_terminated_at_once() -> None:
    transport, provider = fake_provider()
    batched(provider, fleet=2, describe=2)
    transport.fleet_surplus = 1
    types = provider.get_instance_types(None, TEMPLATE)
    request = make_request(types, ["m5.large"], TEMPLATE, capacity_types=["on-demand"])
    launched = launch_all(provider, [request] * 2)
    assert all(isinstance(i, Instance) for i in launched)
    assert len(transport.instances) == 3  # EC2 launched one too many...
    assert sorted(instance_id_of(i.provider_id) for i in launched if isinstance(i, Instance)) == transport.live()


def test_a_launched_instance_that_cannot_be_described_is_terminated_not_leaked() -> None:
    transport, provider = fake_provider()
    batched(provider, fleet=1, describe=1)
    types = provider.get_instance_types(None, TEMPLATE)
    request = make_request(types, ["m5.large"], TEMPLATE, capacity_types=["on-demand"])
    transport.errors["describe_instances"] = [ApiError("InternalError", "try later")]
    with pytest.raises(AWSError, match="InternalError"):
        provider.create(request)
    assert len(transport.instances) == 1 and transport.live() == []
