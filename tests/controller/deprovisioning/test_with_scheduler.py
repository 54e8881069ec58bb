"""Consolidation decisions driven by the real scheduler over the simulated catalog."""

from __future__ import annotations

import dataclasses

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.deprovisioning.decide import decide
from controller.deprovisioning.outlook import unconsolidatable_reasons
from controller.deprovisioning.types import DeprovisioningSettings
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import ClaimRef
from controller.state.snapshot import PodView
from tests.builders.deprovisioning import ProvisionerWithTypes, make_inputs, make_node, make_pod, make_provisioner
from tests.builders.volumes import claim, objects, volume, zone_affinity

CATALOG = {it.name: it for it in simulated_catalog()}
NOW = DeprovisioningSettings(validation_wait_seconds=0)


def _provisioner() -> ProvisionerWithTypes:
    return make_provisioner(consolidation=True, capacity_types=["on-demand"], instance_types=tuple(CATALOG.values()))


def test_half_empty_nodes_become_fewer_and_cheaper() -> None:
    nodes = [
        make_node(f"n{i}", CATALOG["m5.xlarge"], zone="us-west-2a", pods=[make_pod(f"p{i}", cpu=0.5)]) for i in range(3)
    ]
    decision = decide(make_inputs(nodes, [_provisioner()]), None, schedule, NOW)
    cmd = decision.execute
    assert cmd is not None and decision.method == "multinodeconsolidation"
    assert len(cmd.replacements) < len(cmd.candidates) == 3
    before = sum(c.price or 0 for c in cmd.candidates)
    after = sum(r.launch.price for r in cmd.replacements if r.launch is not None)
    assert after < before


def test_an_oversized_node_is_replaced_by_a_cheaper_one() -> None:
    nodes = [make_node("big", CATALOG["m5.4xlarge"], zone="us-west-2a", pods=[make_pod("p", cpu=0.5)])]
    decision = decide(make_inputs(nodes, [_provisioner()]), None, schedule, NOW)
    assert decision.execute is not None and decision.execute.reason == "consolidation/replace"
    (new,) = decision.execute.replacements
    assert new.launch is not None and new.launch.price < CATALOG["m5.4xlarge"].offerings[0].price * 2
    assert all(o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND for o in [new.launch])


def _mounting(name: str, claim_name: str, cpu: float) -> PodView:
    pod = make_pod(name, cpu=cpu)
    assert pod.request is not None
    return dataclasses.replace(pod, request=dataclasses.replace(pod.request, claims=(ClaimRef(claim_name),)))


def test_a_pod_pinned_by_its_volume_only_moves_within_that_zone() -> None:
    """Without its volume db-0 would join the half-empty node in us-west-2b and n-a would go; its
    volume is in us-west-2a, so n-a is replaced there or kept. A local volume keeps its node, and
    the outlook's reason says so."""
    host_n_a = {"key": L.HOSTNAME, "operator": "In", "values": ["n-a"]}
    vols = objects(
        [claim("data", volume="pv")], [volume("pv", terms=zone_affinity("us-west-2a"), claim_ref=("default", "data"))]
    )
    db = _mounting("db-0", "data", cpu=0.5)
    n_a = make_node("n-a", CATALOG["m5.xlarge"], zone="us-west-2a", pods=[db])
    n_b = make_node("n-b", CATALOG["m5.xlarge"], zone="us-west-2b", pods=[make_pod("web", cpu=0.5)])
    free = decide(make_inputs([n_a, n_b], [_provisioner()]), None, schedule, NOW).execute
    assert free is not None and not free.replacements  # the check that volumes change the answer
    cmd = decide(make_inputs([n_a, n_b], [_provisioner()], volumes=vols), None, schedule, NOW).execute
    assert cmd is not None
    moved = {p.key: r for r in cmd.replacements for p in r.pods}
    if "n-a" in cmd.node_names:
        launch = moved["default/db-0"].launch
        assert launch is not None and launch.zone == "us-west-2a"
    local = objects([claim("data", volume="pv")], [volume("pv", terms=[[host_n_a]], claim_ref=("default", "data"))])
    decision = decide(make_inputs([n_a, n_b], [_provisioner()], volumes=local), None, schedule, NOW)
    assert decision.execute is None or "n-a" not in decision.execute.node_names
    reasons = unconsolidatable_reasons(decision)
    assert "its volumes allow only kubernetes.io/hostname in [n-a]" in reasons.get("n-a", ""), reasons
