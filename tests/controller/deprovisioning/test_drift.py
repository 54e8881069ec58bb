"""Drift: which nodes are drifted, the marker's annotations, and the method's commands (spec §6.5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.apis.drifthash import node_template_hash_annotations, provisioner_hash_annotations
from controller.apis.provisioner import NodeSelectorRequirement
from controller.cloudprovider.drift import Drift as CloudDrift
from controller.cloudprovider.drift import DriftReason
from controller.core import labels as L
from controller.deprovisioning.decide import decide
from controller.deprovisioning.drift import Drift, drift_annotations, node_drift
from controller.deprovisioning.types import Annotate, DeprovisioningSettings, DriftInputs, Inputs
from controller.scheduling.scheduler import schedule
from controller.state.snapshot import NodeView
from tests.builders.deprovisioning import (
    LARGE,
    SMALL,
    ProvisionerWithTypes,
    at,
    make_inputs,
    make_node,
    make_pdb,
    make_pod,
    make_provisioner,
)

TEMPLATE = AWSNodeTemplate.from_wire({"metadata": {"name": "nodes"}, "spec": {"subnetSelector": {"a": "b"}}})
AMI = CloudDrift(DriftReason.AMI, "AMI ami-1 is no longer selected by AWSNodeTemplate nodes (now ami-2)")


def provisioner(**fields: object) -> ProvisionerWithTypes:
    """The default test provisioner with some of its API fields changed."""
    prov = make_provisioner()
    changed = dataclasses.replace(prov.provisioner, **fields)  # type: ignore[arg-type]
    return ProvisionerWithTypes(dataclasses.replace(prov.view, provisioner=changed), prov.instance_types)


LAUNCHED = provisioner(labels={"team": "a"})
STAMP = {**provisioner_hash_annotations(LAUNCHED.provisioner), **node_template_hash_annotations(TEMPLATE)}


def stamped(name: str, *, marker: str | None = None, stamp: Mapping[str, str] = STAMP, **kw: object) -> NodeView:
    annotations = dict(stamp)
    if marker is not None:
        annotations[L.VOLUNTARY_DISRUPTION] = marker
    return make_node(name, annotations=annotations, **kw)  # type: ignore[arg-type]


def inputs(
    nodes: Sequence[NodeView],
    prov: ProvisionerWithTypes = LAUNCHED,
    *,
    enabled: bool = True,
    template: AWSNodeTemplate | None = TEMPLATE,
    cloud: Mapping[str, CloudDrift | None] | None = None,
    **kw: object,
) -> Inputs:
    """Drift on; the cloud's answers `cloud` (default: none known)."""
    base = make_inputs(nodes, [prov], **kw)  # type: ignore[arg-type]
    return dataclasses.replace(base, drift=DriftInputs(enabled, {prov.name: template}, cloud or {}))


def reasons(found: Inputs) -> dict[str, str | None]:
    drifts = {n.name: node_drift(n, found) for n in found.nodes}
    return {name: (str(d.reason) if d else None) for name, d in drifts.items()}


# Which nodes are drifted ------------------------------------------------------------------------


def test_a_node_launched_from_the_current_specs_is_not_drifted() -> None:
    assert reasons(inputs([stamped("n1")])) == {"n1": None}


def test_a_changed_provisioner_label_drifts_its_nodes() -> None:
    found = inputs([stamped("n1")], provisioner(labels={"team": "b"}))
    drift = node_drift(found.nodes[0], found)
    assert drift is not None and drift.reason is DriftReason.PROVISIONER
    assert drift.message == "Provisioner default changed since the node was launched"


def test_fields_that_shape_no_node_drift_nothing() -> None:
    changed = provisioner(labels={"team": "a"}, weight=50, limits={"cpu": "4"}, consolidation_enabled=True)
    assert reasons(inputs([stamped("n1")], changed)) == {"n1": None}


def test_nodes_without_a_stamp_are_not_drifted_by_hashes() -> None:
    assert reasons(inputs([stamped("n1", stamp={})], provisioner(labels={"team": "b"}))) == {"n1": None}


def test_requirements_the_node_no_longer_meets() -> None:
    spot_only = provisioner(
        labels={"team": "a"}, requirements=(NodeSelectorRequirement(L.CAPACITY_TYPE, "In", ("spot",)),)
    )
    found = inputs([stamped("od"), stamped("spot", capacity_type=L.CAPACITY_TYPE_SPOT)], spot_only)
    assert reasons(found) == {"od": "RequirementsDrifted", "spot": None}


def test_a_changed_template_drifts_its_nodes_but_an_inline_one_never() -> None:
    changed = dataclasses.replace(TEMPLATE, user_data="echo new")
    assert reasons(inputs([stamped("n1")], template=changed)) == {"n1": "NodeTemplateDrift"}
    assert reasons(inputs([stamped("n1")], template=None)) == {"n1": None}


def test_the_cloud_answer_comes_last() -> None:
    assert reasons(inputs([stamped("n1"), stamped("n2")], cloud={"n1": AMI, "n2": None})) == {
        "n1": "AMIDrift",
        "n2": None,
    }
    both = inputs([stamped("n1")], provisioner(labels={"team": "b"}), cloud={"n1": AMI})
    assert reasons(both) == {"n1": "ProvisionerDrifted"}  # Karpenter's order: static fields first


# The marker -----------------------------------------------------------------------------------------


def marks(found: Inputs) -> list[tuple[str, str, str | None]]:
    return [(a.node, a.key, a.value) for a in drift_annotations(found)]


def test_the_marker_annotates_drifted_nodes_and_clears_recovered_ones() -> None:
    nodes = [stamped("new"), stamped("back", marker="drifted"), stamped("still", marker="drifted")]
    found = inputs(nodes, cloud={"new": AMI, "back": None, "still": AMI})
    assert marks(found) == [
        ("back", L.VOLUNTARY_DISRUPTION, None),
        ("new", L.VOLUNTARY_DISRUPTION, "drifted"),
    ]


def test_the_marker_keeps_a_mark_when_the_cloud_could_not_answer() -> None:
    assert marks(inputs([stamped("n1", marker="drifted")], cloud={})) == []


def test_the_marker_leaves_other_disruptions_alone() -> None:
    assert marks(inputs([stamped("n1", marker="expired")], cloud={"n1": AMI})) == []


def test_with_drift_off_the_marker_only_removes_its_marks() -> None:
    nodes = [stamped("n1", marker="drifted"), stamped("n2"), stamped("n3", marker="expired")]
    assert marks(inputs(nodes, enabled=False, cloud={"n2": AMI})) == [("n1", L.VOLUNTARY_DISRUPTION, None)]


def test_a_stamp_of_another_version_is_restamped_not_drifted() -> None:
    old = {**STAMP, L.PROVISIONER_HASH: "123", L.PROVISIONER_HASH_VERSION: "v0"}
    found = inputs([stamped("n1", stamp=old)])
    assert reasons(found) == {"n1": None}
    assert set(marks(found)) == {
        ("n1", L.PROVISIONER_HASH, STAMP[L.PROVISIONER_HASH]),
        ("n1", L.PROVISIONER_HASH_VERSION, STAMP[L.PROVISIONER_HASH_VERSION]),
    }


# The method -------------------------------------------------------------------------------------------


def test_a_drifted_node_is_replaced_one_per_pass() -> None:
    nodes = [
        stamped("a", marker="drifted", pods=[make_pod("p1", cpu=3)], created=at(1)),
        stamped("b", marker="drifted", pods=[make_pod("p2", cpu=3)], created=at(2)),
    ]
    out = Drift().compute(inputs(nodes), schedule)
    assert out.command is not None and out.command.reason == "drift/replace"
    assert out.command.node_names == ("a",) and out.eligible == 2
    (new,) = out.command.replacements
    assert [p.key for p in new.pods] == ["default/p1"]


def test_pods_that_fit_elsewhere_make_it_a_delete_and_empty_nodes_go_together() -> None:
    room = stamped("room", instance_type=LARGE, created=at(0))
    moving = stamped("moving", instance_type=SMALL, marker="drifted", pods=[make_pod("p", cpu=1)], created=at(1))
    out = Drift().compute(inputs([room, moving]), schedule)
    assert out.command is not None and out.command.reason == "drift/delete" and out.command.node_names == ("moving",)
    empties = [stamped(n, marker="drifted", created=at(i)) for i, n in enumerate(("e1", "e2"))]
    out = Drift().compute(inputs([*empties, moving]), schedule)
    assert out.command is not None and out.command.node_names == ("e1", "e2") and not out.command.replacements


def test_pdb_and_do_not_evict_make_a_node_wait_and_the_next_one_goes() -> None:
    nodes = [
        stamped("guarded", marker="drifted", pods=[make_pod("a", cpu=3)], created=at(1)),
        stamped(
            "pinned",
            marker="drifted",
            pods=[make_pod("b", cpu=3, labels={"app": "x"}, annotations={L.DO_NOT_EVICT: "true"})],
            created=at(2),
        ),
        stamped("free", marker="drifted", pods=[make_pod("c", cpu=3, labels={"app": "other"})], created=at(3)),
    ]
    out = Drift().compute(inputs(nodes, pdbs=[make_pdb(allowed=0)]), schedule)
    assert out.command is not None and out.command.node_names == ("free",)
    assert sorted(e.node for e in out.events if e.reason == "DeprovisioningBlocked") == ["guarded", "pinned"]


def test_a_node_whose_pods_would_not_all_find_a_place_waits() -> None:
    huge = stamped("huge", marker="drifted", pods=[make_pod("big", cpu=64)])
    out = Drift().compute(inputs([huge]), schedule)
    assert out.command is None
    assert [(e.reason, e.message) for e in out.events] == [
        ("DeprovisioningBlocked", "Cannot deprovision node due to Scheduling simulation failed to schedule all pods")
    ]


def test_only_annotated_nodes_and_only_when_drift_is_on() -> None:
    unmarked = stamped("n1", pods=[make_pod("p")])
    assert Drift().compute(inputs([unmarked], cloud={"n1": AMI}), schedule).command is None
    marked = stamped("n1", marker="drifted", pods=[make_pod("p")])
    assert Drift().compute(inputs([marked], enabled=False), schedule).command is None
    user_marked = stamped("n1", marker="drifted", stamp={}, pods=[make_pod("p")])
    assert Drift().compute(inputs([user_marked], cloud={}), schedule).command is not None
    assert Drift().compute(inputs([user_marked], cloud={"n1": None}), schedule).command is None  # back in line


def test_karpenter_order_expiration_then_drift_then_emptiness() -> None:
    settings = DeprovisioningSettings(validation_wait_seconds=0)
    ttls = provisioner(labels={"team": "a"}, ttl_seconds_until_expired=100, ttl_seconds_after_empty=10)
    expired = stamped("expired", pods=[make_pod("a")], created=at(0))
    drifted = stamped("drifted", marker="drifted", pods=[make_pod("b")], created=at(150))
    empty = stamped("empty", created=at(150))
    empty = dataclasses.replace(empty, annotations={**empty.annotations, L.EMPTINESS_TIMESTAMP: "2024-01-01T00:02:40Z"})
    first = decide(inputs([expired, drifted, empty], ttls, now=at(200)), None, schedule, settings)
    assert first.execute is not None and first.execute.deprovisioner == "expiration"
    second = decide(inputs([drifted, empty], ttls, now=at(200), cloud={"drifted": AMI}), None, schedule, settings)
    assert second.execute is not None and second.execute.deprovisioner == "drift"
    assert second.annotations == ()
    back = {"drifted": None, "empty": None}
    recovered = decide(inputs([drifted, empty], ttls, now=at(200), cloud=back), None, schedule, settings)
    assert recovered.execute is not None and recovered.execute.deprovisioner == "emptiness"
    assert recovered.annotations == (Annotate("drifted", L.VOLUNTARY_DISRUPTION, None),)
