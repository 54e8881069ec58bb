"""End to end: `karpy simulate --from-cluster` on a cluster of hand-made, badly packed nodes that
karpy does not manage (issue 22, "Done when").

Four m5.2xlarge nodes made by hand (kwok runs them; no Provisioner label, a foreign provider ID,
as a Cluster Autoscaler node group's), one 1-CPU pod on each. The simulation, reading the cluster
with get/list only, plans the consolidation and its $/h; then the nodes are handed to karpy (the
labels and finalizer Karpenter's nodes carry) and a controller started: the fleet's $/h comes
within 2 % of the plan's.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.kube.errors import KubeError
from controller.kube.resources import NODES
from localcluster import LocalCluster
from tests.e2e.env import FAST, REPO, KarpyEnv, karpy_env
from tests.support.poll import until

pytestmark = pytest.mark.e2e

TYPE, ZONE, NODES_MADE = "m5.2xlarge", "us-west-2a", 4


@functools.cache
def _prices() -> dict[tuple[str, str, str], float]:
    return {(it.name, o.zone, o.capacity_type): o.price for it in simulated_catalog() for o in it.offerings}


def _price(node: dict[str, Any]) -> float:
    labels = node["metadata"]["labels"]
    capacity = labels.get(L.CAPACITY_TYPE, L.CAPACITY_TYPE_ON_DEMAND)
    return _prices()[(labels[L.INSTANCE_TYPE], labels[L.ZONE], capacity)]


def _hand_made(karpy: KarpyEnv) -> list[str]:
    names = [f"ng-{karpy.namespace}-{i}" for i in range(NODES_MADE)]
    resources = {"cpu": "8", "memory": "32Gi", "pods": "58"}
    for name in names:
        karpy.kube.create(NODES, {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kwok.x-k8s.io/node": "fake", L.INSTANCE_TYPE: TYPE, L.ZONE: ZONE, L.HOSTNAME: name,
                "eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": "general"}},
            "spec": {"providerID": f"kwok://{name}"},
            "status": {"capacity": resources, "allocatable": resources},
        })  # fmt: skip
    return names


@pytest.fixture
def cluster(
    local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KarpyEnv, list[str]]]:
    with karpy_env(local_cluster, tmp_path_factory.mktemp("fromcluster")) as karpy:
        names = _hand_made(karpy)
        try:
            yield karpy, names
        finally:
            for name in names:
                with contextlib.suppress(KubeError):
                    karpy.kube.patch(NODES, name, {"metadata": {"finalizers": None}})
                    karpy.kube.delete(NODES, name)


def _simulate(karpy: KarpyEnv) -> Any:
    argv = [sys.executable, "-m", "karpy", "simulate", "--from-cluster", "--kubeconfig",
            str(karpy.cluster.kubeconfig), "--output", "json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_simulate_from_cluster_plans_the_consolidation_karpy_then_reaches(cluster: tuple[KarpyEnv, list[str]]) -> None:
    karpy, names = cluster
    karpy.provisioner("default", consolidation={"enabled": True})
    karpy.deployment("web", NODES_MADE, cpu="1", memory="1Gi")
    until(lambda: len(karpy.running("web")) == NODES_MADE, 60, "the pods Running on the hand-made nodes")
    assert {p["spec"]["nodeName"] for p in karpy.running("web")} <= set(names)

    plan = _simulate(karpy)
    made = {n["node"]: n for n in plan["nodes"] if n["node"] in names}
    assert set(made) == set(names) and {n["origin"] for n in made.values()} == {"adopted"}
    before = NODES_MADE * _prices()[(TYPE, ZONE, L.CAPACITY_TYPE_ON_DEMAND)]
    assert plan["before"]["pricePerHour"] == pytest.approx(before)
    assert plan["consolidation"] and plan["after"]["pricePerHour"] < before / 2
    assert plan["savingPerHour"] == pytest.approx(before - plan["after"]["pricePerHour"])
    assert karpy.nodes() == []  # read only: nothing was launched or labelled

    for name in names:  # hand the nodes to karpy, as Karpenter's nodes are labelled
        karpy.kube.patch(NODES, name, {"metadata": {
            "labels": {L.PROVISIONER_NAME: "default", L.CAPACITY_TYPE: L.CAPACITY_TYPE_ON_DEMAND,
                       L.INITIALIZED: "true"},
            "finalizers": [L.TERMINATION_FINALIZER]}})  # fmt: skip
    karpy.start("replica-a", *FAST)
    planned = plan["after"]["pricePerHour"]

    def settled_price() -> float | None:
        """The fleet's $/h once every pod runs, not terminating, on a node that stays (no command
        half done: nothing cordoned or deleting); None before."""
        nodes = karpy.kube.list(NODES).items
        staying = {n["metadata"]["name"] for n in nodes
                   if not n["metadata"].get("deletionTimestamp") and not n["spec"].get("unschedulable")}  # fmt: skip
        pods = [p for p in karpy.running("web") if not p["metadata"].get("deletionTimestamp")]
        if (
            len(pods) != NODES_MADE
            or len(staying) != len(nodes)
            or any(p["spec"].get("nodeName") not in staying for p in pods)
        ):
            return None
        return sum(_price(n) for n in nodes)

    def reached() -> float | None:
        price = settled_price()
        return price if price is not None and abs(price - planned) <= 0.02 * planned else None

    until(reached, 240, f"the fleet at {planned:.4f} $/h within 2 %", interval=1)
