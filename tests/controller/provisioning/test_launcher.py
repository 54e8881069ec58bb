"""`Launcher` (`controller/provisioning/launcher.py`): one NewNode → an instance and its Node.

Direct tests of the launch path provisioning and deprovisioning share: limits before and after
`create`, the Node object, in-flight and nominated in cluster state, the usage it adds, and that
a failed launch leaves no instance behind.
"""

from __future__ import annotations

import pytest

from controller.cloudprovider.errors import CloudProviderError, InsufficientCapacityError, ThrottledError
from controller.core import labels as L
from controller.kube.errors import AlreadyExistsError, KubeError
from controller.kube.resources import NODES
from controller.provisioning.launcher import Launcher, LaunchError
from controller.scheduling.types import NewNode, ProvisionerSpec
from tests.builders.scheduling import make_instance_type, make_pod, make_provisioner, run
from tests.controller.provisioning.test_controller import Env, make_env

LARGE = make_instance_type("m5.large", cpu=2, memory_gib=8, price=0.10)
XLARGE = make_instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.20)


def launcher(env: Env) -> Launcher:
    """A launcher on provisioning's test world (FakeKube, the fake cloud, cluster state)."""
    return Launcher(env.kube, env.cloud, env.state, env.clock, nomination_seconds=20)


def planned(provisioner: ProvisionerSpec, cpu: str = "1") -> NewNode:
    (node,) = run([make_pod("web", cpu=cpu)], [provisioner], [LARGE, XLARGE]).new_nodes
    return node


def test_a_launch_creates_the_instance_and_its_node_in_flight_and_nominated() -> None:
    env = make_env()
    provisioner = make_provisioner(labels={"team": "a"})
    usage: dict[str, int] = {}
    result = launcher(env).launch(planned(provisioner), provisioner, usage, hold_for_binding=True)
    (request,) = env.cloud.create_calls
    assert [it.name for it in request.instance_type_options] == ["m5.large", "m5.xlarge"]
    node = env.kube.find(NODES, result.node_name)
    assert node is not None
    assert node["spec"]["providerID"] == result.instance.provider_id
    assert node["spec"]["unschedulable"] is True and L.BINDING_HOLD in node["metadata"]["annotations"]
    assert node["metadata"]["labels"]["team"] == "a"
    assert L.TERMINATION_FINALIZER in node["metadata"]["finalizers"]
    view = env.state.snapshot().nodes[result.node_name]
    assert view.in_flight and view.nominated
    assert usage == dict(result.instance.capacity)


def test_a_limit_already_reached_launches_nothing() -> None:
    env = make_env()
    provisioner = make_provisioner(limits={"cpu": "4"})
    usage = {"cpu": 3000}
    with pytest.raises(LaunchError, match="cpu"):
        launcher(env).launch(planned(provisioner), provisioner, usage)
    assert env.cloud.create_calls == [] and env.kube.items(NODES) == []
    assert usage == {"cpu": 3000}


def test_an_instance_bigger_than_the_limit_allows_is_terminated_again() -> None:
    env = make_env()
    provisioner = make_provisioner(limits={"cpu": "5"})
    cheap_spot = make_instance_type("m5.xlarge", cpu=4, memory_gib=16, price=0.20, spot_price=0.05)
    (node,) = run([make_pod("web", cpu="1")], [provisioner], [LARGE, cheap_spot]).new_nodes
    # the smallest option (2 cpu) fits under the limit; the launch takes the 4-cpu spot offering
    with pytest.raises(LaunchError, match="cpu"):
        launcher(env).launch(node, provisioner, {"cpu": 2000})
    assert len(env.cloud.delete_calls) == 1 and env.cloud.instances == {}
    assert env.kube.items(NODES) == []


def test_a_node_that_cannot_be_created_takes_its_instance_with_it() -> None:
    env = make_env()
    provisioner = make_provisioner()
    env.kube.fail_next["create"] = KubeError("apiserver unavailable", 503)
    with pytest.raises(LaunchError, match="creating node: apiserver unavailable"):
        launcher(env).launch(planned(provisioner), provisioner, {})
    assert env.cloud.instances == {} and env.kube.items(NODES) == []
    assert env.state.snapshot().nodes == {}


def test_a_node_that_already_exists_is_a_success() -> None:
    env = make_env()
    provisioner = make_provisioner()
    env.kube.fail_next["create"] = AlreadyExistsError("already exists", 409)
    result = launcher(env).launch(planned(provisioner), provisioner, {})
    assert result.instance.provider_id in env.cloud.instances
    assert env.state.snapshot().nodes[result.node_name].in_flight


@pytest.mark.parametrize("error", [InsufficientCapacityError("none left"), CloudProviderError("throttled")])
def test_a_cloud_error_is_a_launch_error_naming_the_cause(error: CloudProviderError) -> None:
    env = make_env()
    provisioner = make_provisioner()
    env.cloud.next_create_error = error
    with pytest.raises(LaunchError, match=f"launching node: {error}") as raised:
        launcher(env).launch(planned(provisioner), provisioner, {})
    assert env.kube.items(NODES) == []
    assert raised.value.retry_after is None  # a failure, not a "retry later"


def test_a_throttled_create_is_a_launch_error_to_retry_later_with_nothing_made() -> None:
    env = make_env()
    provisioner = make_provisioner()
    env.cloud.next_create_error = ThrottledError("ec2 CreateFleet: RequestLimitExceeded: slow down", 0.4)
    usage: dict[str, int] = {}
    with pytest.raises(LaunchError, match=r"throttled, retrying in 0\.4s: ec2 CreateFleet") as raised:
        launcher(env).launch(planned(provisioner), provisioner, usage)
    assert raised.value.retry_after == pytest.approx(0.4)
    assert env.kube.items(NODES) == [] and env.cloud.instances == {} and usage == {}


def test_the_cloud_half_counts_the_instance_and_a_failed_kubernetes_half_gives_it_back() -> None:
    env = make_env()
    provisioner = make_provisioner(limits={"cpu": "100"})
    node, usage = planned(provisioner), {"cpu": 0}
    instance = launcher(env).create_instance(node, provisioner, usage)
    assert instance.provider_id in env.cloud.instances and env.kube.items(NODES) == []  # no Node yet
    assert usage["cpu"] == instance.capacity["cpu"] > 0
    env.kube.fail_next["create"] = KubeError("apiserver unavailable", 503)
    with pytest.raises(LaunchError, match="creating node: apiserver unavailable"):
        launcher(env).register(node, instance, provisioner, usage)
    assert usage["cpu"] == 0 and env.cloud.instances == {} and env.kube.items(NODES) == []
    again = launcher(env).create_instance(node, provisioner, usage)
    result = launcher(env).register(node, again, provisioner, usage)
    assert result.instance == again and env.state.snapshot().nodes[result.node_name].in_flight
