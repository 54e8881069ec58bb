"""bench/halving.py's parts: the Deployments' pods in creation order, a ReplicaSet's choice on a
scale-down, provisioning in batches, and the deprovisioning loop applying each command."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bench.halving import (
    Cluster,
    fresh_price,
    kwok_types,
    max_skew,
    pods_of,
    provision,
    replicaset_victims,
    settle,
)
from bench.karpenter_e2e import SHAPES
from controller.clock import FakeClock
from controller.core import labels as L
from controller.scheduling.types import InstanceType
from controller.state.cluster import ClusterState

ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")


def kwok_type(cpu: int) -> dict[str, Any]:
    """One of kwok's `c` types (2 GiB a CPU, 16 pods a CPU) in three zones, on-demand."""
    offerings = [
        {"Price": 0.03 * cpu, "Available": True,
         "Requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                          {"key": L.ZONE, "operator": "In", "values": [zone]}]}
        for zone in ZONES
    ]  # fmt: skip
    return {
        "name": f"c-{cpu}x-amd64-linux", "offerings": offerings, "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": str(cpu), "memory": f"{2 * cpu}Gi", "pods": str(16 * cpu)},
    }  # fmt: skip


@pytest.fixture
def types(tmp_path: Path) -> tuple[InstanceType, ...]:
    path = tmp_path / "instance_types.json"
    path.write_text(json.dumps([kwok_type(cpu) for cpu in (1, 2, 4, 8, 16)]))
    return kwok_types(path)


def owner(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["ownerReferences"][0]["name"])


def test_the_deployments_pods_are_interleaved_as_their_replicasets_create_them() -> None:
    pods = pods_of(100)
    assert len(pods) == 100
    assert {owner(p) for p in pods[:10]} == {name for name, *_ in SHAPES}
    web = [p for p in pods if owner(p) == "bench-web"]
    assert len(web) == 30 and web[0]["spec"]["topologySpreadConstraints"][0]["topologyKey"] == L.ZONE


def placed(pods: dict[str, str]) -> Cluster:
    """A cluster whose pods (name → node) all belong to one Deployment."""
    objs = {}
    for name, node in pods.items():
        objs[f"bench/{name}"] = {
            "metadata": {"name": name, "namespace": "bench", "ownerReferences": [{"name": "app"}]},
            "spec": {"nodeName": node},
        }
    return Cluster(ClusterState(FakeClock(0.0)), objs, ())


def test_a_replicaset_removes_first_the_pods_whose_node_holds_more_of_them() -> None:
    cluster = placed({"a": "n1", "b": "n1", "c": "n1", "d": "n2", "e": "n3", "f": "n3"})
    victims = replicaset_victims(cluster, random.Random(1))
    assert len(victims) == 3 and set(victims) == {"bench/a", "bench/b", "bench/c"}


def test_ties_are_broken_by_the_seed() -> None:
    cluster = placed({f"p{i}": f"n{i % 4}" for i in range(8)})
    first = replicaset_victims(cluster, random.Random(7))
    assert first == replicaset_victims(cluster, random.Random(7)) and len(first) == 4


def test_provisioning_in_batches_binds_every_pod_to_a_node_of_the_plan(types: tuple[InstanceType, ...]) -> None:
    cluster, price = provision(pods_of(200), types, batches=4)
    nodes = cluster.state.snapshot().nodes
    assert all(p["spec"].get("nodeName") in nodes for p in cluster.pods.values())
    assert price == pytest.approx(cluster.price()[1]) and price > 0
    assert max_skew(cluster, "bench-web") <= 1


def test_the_loop_applies_each_command_until_a_pass_finds_nothing(types: tuple[InstanceType, ...]) -> None:
    cluster, before = provision(pods_of(200), types, batches=4)
    for key in replicaset_victims(cluster, random.Random(1)):
        cluster.delete_pod(key)
    fresh = fresh_price(list(cluster.pods.values()), types)
    outcome = settle(cluster, fresh, max_commands=40, budget=20.0, quiet=True)
    assert outcome.commands < 40 and outcome.price < before
    nodes = cluster.state.snapshot().nodes
    assert all(p["spec"].get("nodeName") in nodes for p in cluster.pods.values())
    assert outcome.ratio == pytest.approx(outcome.price / fresh)
