"""End to end: killing the controller at random points never loses an instance or a pod (issue 5).

20+ runs in one test: each starts `karpy controller`, changes the workload (scale up, scale down,
or `kubectl delete node` to force a termination), and SIGKILLs the process after a random
0.5–4 s — during list/sync, launches, bindings, drains or finalizer removal. After a final
restart: every instance has a Node, every karpy Node an instance, every pod Running.
"""

from __future__ import annotations

import random
import time

import pytest

from controller.apis import labels as L
from tests.e2e.controller.conftest import KarpyEnv, wait_for

pytestmark = pytest.mark.e2e

RUNS = 20
FAST_GC = ("--gc-leak-seconds", "5", "--gc-interval-seconds", "1", "--batch-idle-seconds", "0.5")


def test_random_kills_during_scale_up_and_termination_leave_a_consistent_cluster(karpy: KarpyEnv) -> None:
    rng = random.Random(5)
    karpy.provisioner(requirements=[{"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.xlarge"]}])
    karpy.deployment("crash", 0, cpu="500m", memory="256Mi")
    replicas = 0
    for run in range(RUNS):
        ctrl = karpy.start("replica-a", *FAST_GC, wait_ready=False)
        action = rng.choice(["up", "up", "down", "delete-node"])
        nodes = karpy.nodes()
        if action == "delete-node" and nodes:
            victim = rng.choice(nodes)["metadata"]["name"]
            karpy.cluster.kubectl("delete", "node", victim, "--wait=false")
        elif action == "down":
            replicas = max(1, replicas - rng.randint(1, 10))
            karpy.scale("crash", replicas)
        else:
            replicas = min(40, replicas + rng.randint(5, 15))
            karpy.scale("crash", replicas)
        time.sleep(rng.uniform(0.5, 4.0))
        karpy.kill(ctrl)
        print(f"run {run}: {action}, replicas={replicas}, nodes={len(nodes)}, killed")
    karpy.start("replica-a", *FAST_GC)
    wait_for(lambda: len(karpy.running("crash")) == replicas, 60, f"all {replicas} pods Running after the crashes")
    wait_for(lambda: karpy.consistent() == "", 45, "every instance with a node and every node with an instance")
    deleting = [n["metadata"]["name"] for n in karpy.nodes() if n["metadata"].get("deletionTimestamp")]
    assert deleting == [], f"nodes stuck terminating: {deleting}"
