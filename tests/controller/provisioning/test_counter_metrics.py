"""The provisioner limit and usage gauges use Karpenter's units (CPU in cores) and resource names."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.kube.resources import NODES, PROVISIONERS
from controller.provisioning.counter import CounterController
from controller.provisioning.metrics import PROVISIONER_LIMIT, PROVISIONER_USAGE, PROVISIONER_USAGE_PCT
from controller.state.cluster import ClusterState
from tests.builders.wire import make_node, make_provisioner
from tests.fakes.kube import FakeKube
from tests.fakes.world import sync_from


def test_cpu_limit_and_usage_are_exported_in_cores() -> None:
    clock = FakeClock()
    kube = FakeKube(clock)
    kube.put(PROVISIONERS, make_provisioner("metrics-p", limits={"resources": {"cpu": "10", "memory": "1Gi"}}))
    kube.put(NODES, make_node("n1", provisioner="metrics-p", cpu="4", memory="8Gi"))
    state = sync_from(ClusterState(clock), kube)
    CounterController(state, kube).reconcile()
    assert PROVISIONER_LIMIT.labels(resource_type="cpu", provisioner="metrics-p")._value.get() == 10.0
    assert PROVISIONER_USAGE.labels(resource_type="cpu", provisioner="metrics-p")._value.get() == 4.0
    assert PROVISIONER_LIMIT.labels(resource_type="memory", provisioner="metrics-p")._value.get() == 2**30


def test_resource_types_snake_cased_and_a_zero_limit_is_full() -> None:
    clock = FakeClock()
    kube = FakeKube(clock)
    limits = {"cpu": "8", "ephemeral-storage": "100Gi", "nvidia.com/gpu": "0"}
    kube.put(PROVISIONERS, make_provisioner("metrics-q", limits={"resources": limits}))
    kube.put(NODES, make_node("n2", provisioner="metrics-q", cpu="2", memory="8Gi"))
    state = sync_from(ClusterState(clock), kube)
    CounterController(state, kube).reconcile()
    assert (
        PROVISIONER_LIMIT.labels(resource_type="ephemeral_storage", provisioner="metrics-q")._value.get() == 100 * 2**30
    )
    assert PROVISIONER_USAGE_PCT.labels(resource_type="cpu", provisioner="metrics-q")._value.get() == 25.0
    assert PROVISIONER_USAGE_PCT.labels(resource_type="nvidia.com/gpu", provisioner="metrics-q")._value.get() == 100.0
