"""End to end: the cloud's API throttles or loses answers, and nothing is lost (issue 19, part 7).

A controller on the simulated cloud (its EC2 rate limits on, the default) meets throttled
CreateFleet calls: the pods wait and run once the cloud answers, with one instance per node and
the refusals on /metrics. A CreateFleet whose answer is lost after it launched leaves an instance
karpy never heard of: garbage collection terminates it. Throttled TerminateInstances calls make
the deleted nodes wait, then every instance goes and every node is released.
"""

from __future__ import annotations

import pytest

from controller.cloudprovider.simulated.store import FAULT_ANSWER_LOST, FAULT_THROTTLE
from controller.kube.resources import NODES
from tests.e2e.env import Controller, KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e

GC = ("--gc-leak-seconds", "5", "--gc-interval-seconds", "2")


def api_count(ctrl: Controller, family: str, operation: str) -> float:
    wanted = (f"karpy_cloudprovider_api_{family}_total{{", f'operation="{operation}"', 'provider="simulated"')
    for line in str(ctrl.get("/metrics")).splitlines():
        if line.startswith(wanted[0]) and wanted[1] in line and wanted[2] in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_throttled_launches_wait_and_every_pod_runs_on_one_instance_per_node(karpy: KarpyEnv) -> None:
    karpy.provisioner()
    ctrl = karpy.start("replica-a", *GC)
    karpy.cloud.store.fail_next_calls("create_fleet", 3, FAULT_THROTTLE)
    karpy.deployment("web", 6, cpu="3", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 6, 90, "6 pods Running after 3 throttled CreateFleet calls")
    assert api_count(ctrl, "throttled", "create_fleet") == 3  # the faults; the buckets were never empty
    answered = api_count(ctrl, "calls", "create_fleet") - 3  # identical launches of a pass share one call
    assert 1 <= answered <= len(karpy.nodes())
    until(lambda: karpy.consistent() == "", 30, "one instance per node")
    # a throttled launch is no failed launch: no FailedScheduling event names it
    assert not [e for e in karpy.events("FailedScheduling") if "RequestLimitExceeded" in e.get("message", "")]


def test_a_launch_whose_answer_is_lost_is_collected_and_its_pods_still_run(karpy: KarpyEnv) -> None:
    karpy.provisioner()
    karpy.start("replica-a", *GC)
    karpy.cloud.store.fail_next_calls("create_fleet", 1, FAULT_ANSWER_LOST, 1.0)
    karpy.deployment("web", 2, cpu="3", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 2, 90, "2 pods Running after a lost CreateFleet answer")
    assert karpy.cloud.store.take_call_fault("create_fleet") is None  # the lost answer was met
    until(lambda: karpy.consistent() == "", 60, "the instance launched without an answer terminated")
    runs = karpy.cloud.store.running(karpy.namespace)
    assert len(runs) == len(karpy.nodes())


def test_throttled_terminations_wait_and_every_instance_goes(karpy: KarpyEnv) -> None:
    karpy.provisioner()
    ctrl = karpy.start("replica-a", *GC)
    karpy.deployment("web", 3, cpu="3", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 3, 90, "3 pods Running, a node each")
    names = [n["metadata"]["name"] for n in karpy.nodes()]
    karpy.scale("web", 0)
    karpy.cloud.store.fail_next_calls("terminate_instances", 2, FAULT_THROTTLE)
    for name in names:
        karpy.kube.delete(NODES, name)
    until(lambda: all(karpy.node_gone(n) for n in names), 90, "every deleted node released after 2 throttled calls")
    assert api_count(ctrl, "throttled", "terminate_instances") == 2  # the faults, each waited out once
    until(lambda: karpy.cloud.list() == [] and karpy.consistent() == "", 30, "every instance terminated")
