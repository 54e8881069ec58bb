"""Re-packing interchangeable pods after the solve (`controller/scheduling/repack.py`)."""

from __future__ import annotations

import random

import numpy as np

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core.requirements import Requirements
from controller.scheduling.packing import lp_cover
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import PodRequest, SchedulingInput
from controller.scheduling.typetable import TypeTable
from tests.builders.scheduling import make_pod, make_provisioner, node_of, req, run, spread

ON_DEMAND = [req("karpenter.sh/capacity-type", "In", "on-demand")]


def random_pods(n: int, **kwargs: object) -> list[PodRequest]:
    rng = random.Random(42)
    return [
        make_pod(f"p{i}", cpu=rng.choice(["100m", "250m", "500m", "1", "1500m"]),
                 memory=rng.choice(["100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"]), **kwargs)  # type: ignore[arg-type]
        for i in range(n)
    ]  # fmt: skip


def test_generic_pods_cost_close_to_the_lp_bound() -> None:
    pods = random_pods(600)
    provisioner = make_provisioner(requirements=ON_DEMAND)
    catalog = simulated_catalog()
    result = schedule(SchedulingInput(pods=pods, provisioners=[provisioner], instance_types=catalog))
    assert result.all_scheduled
    assert sorted(p.key for n in result.new_nodes for p in n.pods) == sorted(p.key for p in pods)
    for node in result.new_nodes:
        assert node.launch is not None
        assert all(node.requests[r] <= node.launch.instance_type.allocatable[r] for r in node.requests)
    price = sum(n.launch.price for n in result.new_nodes if n.launch)
    table = TypeTable(catalog, ["cpu", "memory", "pods"])
    reqs: Requirements = provisioner.requirements
    ok = table.compatible(reqs, frozenset(reqs.values())) & np.isfinite(table.prices(reqs))
    need = np.array([sum(p.requests["cpu"] for p in pods), sum(p.requests["memory"] for p in pods), 0])
    bound, _ = lp_cover(table.alloc[ok], table.prices(reqs)[ok], need)
    assert price <= 1.05 * bound


def test_pods_topology_involves_stay_where_the_solve_put_them() -> None:
    web = {"app": "web"}
    pods = [make_pod(f"w{i}", labels=web, spread=[spread("kubernetes.io/hostname", web)]) for i in range(3)]
    result = run(pods)
    assert [node_of(result, f"w{i}") for i in range(3)] == ["default-1", "default-2", "default-3"]


def test_provisioners_with_limits_are_left_alone() -> None:
    pods = random_pods(40)
    limited = make_provisioner(requirements=ON_DEMAND, limits={"cpu": "1000"})
    free = make_provisioner(requirements=ON_DEMAND)
    catalog = simulated_catalog()
    with_limits = schedule(SchedulingInput(pods=pods, provisioners=[limited], instance_types=catalog))
    without = schedule(SchedulingInput(pods=pods, provisioners=[free], instance_types=catalog))
    price = [sum(n.launch.price for n in r.new_nodes if n.launch) for r in (with_limits, without)]
    assert price[1] <= price[0]
