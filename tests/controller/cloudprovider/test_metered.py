"""Every cloud-provider call timed by method, provider and the controller that made it."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from controller.cloudprovider.base import NodeRequest
from controller.cloudprovider.errors import InsufficientCapacityError
from controller.cloudprovider.metered import MeteredCloud
from controller.core.requirements import Requirements
from controller.metrics import CALLER
from tests.fakes.cloudprovider import FakeCloudProvider

DURATION = "karpenter_cloudprovider_duration_seconds_count"


def calls(controller: str, method: str) -> float:
    labels = {"controller": controller, "method": method, "provider": "fake"}
    return REGISTRY.get_sample_value(DURATION, labels) or 0.0


def test_calls_timed_by_method_and_calling_controller_errors_too() -> None:
    fake = FakeCloudProvider()
    cloud = MeteredCloud(fake)
    before = {m: calls("metered-test", m) for m in ("Create", "List", "GetInstanceTypes")}
    token = CALLER.set("metered-test")
    try:
        fake.next_create_error = InsufficientCapacityError("no capacity")
        with pytest.raises(InsufficientCapacityError, match="no capacity"):
            cloud.create(NodeRequest("default", Requirements(), ()))  # the error passes through, timed
        cloud.list()
        cloud.get_instance_types()
    finally:
        CALLER.reset(token)
    assert calls("metered-test", "Create") == before["Create"] + 1
    assert calls("metered-test", "List") == before["List"] + 1
    assert calls("metered-test", "GetInstanceTypes") == before["GetInstanceTypes"] + 1
    assert len(fake.create_calls) == 1 and cloud.create_calls is fake.create_calls  # extras reach the provider
