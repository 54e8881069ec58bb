"""Volumes decide where a pod may run (`controller/scheduling/volumes.py`), through `schedule()`."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.core.labels import HOSTNAME, ZONE
from controller.core.requirements import Requirement
from controller.core.resources import ATTACH_PREFIX
from controller.scheduling.types import PodRequest
from controller.scheduling.volumes import bind_refusal, pod_volumes
from tests.builders.scheduling import (
    make_instance_type,
    make_node,
    make_pod,
    node_of,
    placements,
    reason,
    req,
    run,
    zone_of,
)
from tests.builders.volumes import (
    DRIVER,
    claim,
    csinode,
    objects,
    storage_class,
    volume,
    with_claims,
    zone_affinity,
)

NO_PROVISIONER = "kubernetes.io/no-provisioner"


def db(name: str = "db-0", *claims: str, **kwargs: Any) -> PodRequest:
    return with_claims(make_pod(name, **kwargs), *(claims or ("data",)))


def test_a_bound_claim_pins_the_pod_to_its_volume_zone() -> None:
    vols = objects(
        [claim("data", volume="pv")], [volume("pv", terms=zone_affinity("test-zone-c"), claim_ref=("default", "data"))]
    )
    result = run([db()], volumes=vols)
    assert zone_of(result, "db-0") == "test-zone-c"
    node = result.new_nodes[0]
    assert not any(k.startswith(ATTACH_PREFIX) for k in node.requests)  # the attach resource is internal


def test_ored_volume_terms_and_pod_terms_multiply_out() -> None:
    two_terms = [
        [{"key": ZONE, "operator": "In", "values": ["test-zone-a"]}],
        [{"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["test-zone-b"]}],
    ]
    vols = objects([claim("data", volume="pv")], [volume("pv", terms=two_terms, claim_ref=("default", "data"))])
    pod = db(required=[[req(ZONE, "In", "test-zone-b", "test-zone-c")]])
    assert zone_of(run([pod], volumes=vols), "db-0") == "test-zone-b"


def test_volume_requirements_survive_preference_relaxation() -> None:
    vols = objects(
        [claim("data", volume="pv")], [volume("pv", terms=zone_affinity("test-zone-c"), claim_ref=("default", "data"))]
    )
    pod = db(
        preferred=[(10, [req(ZONE, "In", "test-zone-a")])],
        required=[[req(ZONE, "In", "test-zone-a")], [req("team", "DoesNotExist")]],
    )
    assert zone_of(run([pod], volumes=vols), "db-0") == "test-zone-c"


def test_an_existing_node_in_another_zone_is_not_used() -> None:
    vols = objects(
        [claim("data", volume="pv")], [volume("pv", terms=zone_affinity("test-zone-b"), claim_ref=("default", "data"))]
    )
    result = run([db()], nodes=[make_node("n-a", zone="test-zone-a")], volumes=vols)
    assert result.existing_assignments == {}
    assert zone_of(result, "db-0") == "test-zone-b"


def test_the_pod_cannot_go_where_its_volume_is_not() -> None:
    vols = objects(
        [claim("data", volume="pv")], [volume("pv", terms=zone_affinity("test-zone-c"), claim_ref=("default", "data"))]
    )
    pod = db(required=[[req(ZONE, "In", "test-zone-a")]])
    why = reason(run([pod], volumes=vols), "db-0")
    assert "its volumes allow only zone test-zone-c" in why


def test_a_static_wait_for_first_consumer_volume_decides_the_zone() -> None:
    """The issue's case: no provisioner, one available volume in zone c."""
    vols = objects(
        [claim("data", storage_class="local")],
        [volume("pv", storage_class="local", terms=zone_affinity("test-zone-c"))],
        [storage_class("local", provisioner=NO_PROVISIONER)],
    )
    found = pod_volumes(db(), vols)
    assert found.unbound == ("default/data",)
    assert zone_of(run([db()], volumes=vols), "db-0") == "test-zone-c"


@pytest.mark.parametrize(
    "unfit",
    [
        {"storage": "500Mi"},  # too small for the 1Gi claim
        {"access_modes": ("ReadOnlyMany",)},
        {"storage_class": "other"},
        {"claim_ref": ("default", "someone-else")},
        {"labels": {"tier": "cold"}},  # the claim selects tier=hot
    ],
    ids=["capacity", "access-modes", "class", "claimed", "selector"],
)
def test_only_volumes_that_satisfy_the_claim_count(unfit: dict[str, object]) -> None:
    fits = volume("fits", storage_class="local", terms=zone_affinity("test-zone-b"), labels={"tier": "hot"})
    args: dict[str, object] = {
        "storage_class": "local",
        "terms": zone_affinity("test-zone-a"),
        "labels": {"tier": "hot"},
    }
    args.update(unfit)
    other = volume("other", **args)  # type: ignore[arg-type]
    selector = {"matchLabels": {"tier": "hot"}}
    vols = objects(
        [claim("data", storage_class="local", selector=selector)],
        [fits, other],
        [storage_class("local", provisioner=NO_PROVISIONER)],
    )
    assert pod_volumes(db(), vols).terms == ((Requirement.new(ZONE, "In", ["test-zone-b"]),),)


def test_without_a_fitting_volume_and_no_provisioner_the_pod_waits() -> None:
    vols = objects([claim("data", storage_class="local")], [], [storage_class("local", provisioner=NO_PROVISIONER)])
    why = reason(run([db()], volumes=vols), "db-0")
    assert "no persistent volume available for persistentvolumeclaim default/data" in why


def test_a_provisioning_class_allows_its_topologies_or_anywhere() -> None:
    vols = objects([claim("data")], [], [storage_class(zones=["test-zone-b"])])
    assert zone_of(run([db()], volumes=vols), "db-0") == "test-zone-b"
    anywhere = objects([claim("data")], [], [storage_class()])
    assert pod_volumes(db(), anywhere).terms is None
    assert pod_volumes(db(), anywhere).unbound == ("default/data",)


def test_a_claim_without_a_class_uses_the_default_class() -> None:
    vols = objects([claim("data", storage_class=None)], [], [storage_class("gp3", zones=["test-zone-a"], default=True)])
    assert zone_of(run([db()], volumes=vols), "db-0") == "test-zone-a"
    newer = storage_class("a-newer", zones=["test-zone-b"], default=True, created="2025-01-01T00:00:00Z")
    two = objects([claim("data", storage_class=None)], [], [storage_class("gp3", default=True), newer])
    assert two.default_class() == "a-newer"  # Kubernetes takes the newest default


@pytest.mark.parametrize(
    ("claims", "classes", "expected"),
    [
        ([], [storage_class()], "persistentvolumeclaim default/data not found"),
        (
            [claim("data", storage_class="gone")],
            [],
            'storageclass "gone" of persistentvolumeclaim default/data not found',
        ),
        ([claim("data")], [storage_class(mode="Immediate")], "storage class standard binds immediately"),
        ([claim("data", storage_class="")], [], "it names no storage class"),
        ([claim("data", deleting=True)], [storage_class()], "is being deleted"),
        ([claim("data", volume="missing")], [storage_class()], 'persistentvolume "missing" of persistentvolumeclaim'),
    ],
    ids=["missing-claim", "missing-class", "immediate", "no-class", "deleting", "missing-volume"],
)
def test_pods_whose_claims_cannot_be_judged_wait_with_the_reason(
    claims: list[dict[str, object]], classes: list[dict[str, object]], expected: str
) -> None:
    result = run([db(), make_pod("plain")], volumes=objects(claims, [], classes))
    assert expected in reason(result, "db-0")
    assert node_of(result, "plain")  # the others are provisioned for


def test_generic_ephemeral_volumes_go_through_the_claim_they_create() -> None:
    pod = dataclasses.replace(make_pod("web-0"), uid="pod-uid")
    pod = with_claims(pod, "web-0-scratch", ephemeral=True)
    assert "waiting for the ephemeral volume controller" in reason(run([pod], volumes=objects()), "web-0")
    mine = objects([claim("web-0-scratch", owner_uid="pod-uid")], [], [storage_class(zones=["test-zone-c"])])
    assert zone_of(run([pod], volumes=mine), "web-0") == "test-zone-c"
    theirs = objects([claim("web-0-scratch", owner_uid="other")], [], [storage_class()])
    assert "was not created for this pod" in reason(run([pod], volumes=theirs), "web-0")


def test_csinode_attach_limits_hold_on_existing_nodes() -> None:
    claims = [claim("old", volume="pv-old"), claim("new", volume="pv-new")]
    vols_list = [volume(n, claim_ref=("default", c)) for n, c in (("pv-old", "old"), ("pv-new", "new"))]
    running = with_claims(make_pod("running", node_name="n1"), "old")
    node = make_node("n1", bound=[running])
    full = objects(claims, vols_list, [storage_class()], [csinode("n1", 1)])
    result = run([db("db-0", "new")], nodes=[node], volumes=full)
    assert node_of(result, "db-0") != "n1"
    roomy = objects(claims, vols_list, [storage_class()], [csinode("n1", 2)])
    assert node_of(run([db("db-0", "new")], nodes=[node], volumes=roomy), "db-0") == "n1"


def test_new_nodes_hold_their_instance_types_attach_limit() -> None:
    small = dataclasses.replace(make_instance_type("m.large", cpu=16, memory_gib=64), volume_limits={DRIVER: 2})
    names = [f"c{i}" for i in range(5)]
    vols = objects([claim(n) for n in names], [], [storage_class()])
    pods = [with_claims(make_pod(f"p{i}"), n) for i, n in enumerate(names)]
    result = run(pods, types=[small], volumes=vols)
    assert len(result.new_nodes) == 3  # 2 + 2 + 1 volumes
    assert all(n.launch is not None and n.launch.instance_type is small for n in result.new_nodes)
    assert all(it is small for n in result.new_nodes for it in n.instance_type_options)
    other_driver = objects([claim(n) for n in names], [], [storage_class(provisioner="other.csi.example.com")])
    assert len(run(pods, types=[small], volumes=other_driver).new_nodes) == 1  # no known limit


def test_shared_claims_count_once_on_a_node() -> None:
    vols = objects(
        [claim("shared", volume="pv")], [volume("pv", claim_ref=("default", "shared"))], [], [csinode("n1", 1)]
    )
    pods = [with_claims(make_pod("a", node_name="n1"), "shared"), with_claims(make_pod("b", node_name="n1"), "shared")]
    assert bind_refusal(pods[1], "n1", {}, pods[:1], vols) == ""


def test_bind_refusal() -> None:
    vols = objects(
        [claim("bound", volume="pv"), claim("later"), claim("x", volume="pv-x"), claim("y", volume="pv-y")],
        [volume("pv", terms=zone_affinity("test-zone-c"), claim_ref=("default", "bound")),
         volume("pv-x", claim_ref=("default", "x")), volume("pv-y", claim_ref=("default", "y"))],
        [storage_class()],
        [csinode("n1", 1)],
    )  # fmt: skip
    in_c, in_a = {ZONE: "test-zone-c", HOSTNAME: "n1"}, {ZONE: "test-zone-a", HOSTNAME: "n1"}
    assert bind_refusal(db("p", "bound"), "n1", in_c, [], vols) == ""
    assert "allow only zone test-zone-c" in bind_refusal(db("p", "bound"), "n1", in_a, [], vols)
    assert "kube-scheduler binds the pod" in bind_refusal(db("p", "later"), "n1", in_c, [], vols)
    on_node = [with_claims(make_pod("q"), "x")]
    assert "can attach 1 ebs.csi.aws.com volume(s)" in bind_refusal(db("p", "y"), "n1", in_a, on_node, vols)
    assert bind_refusal(make_pod("plain"), "n1", in_a, on_node, vols) == ""


def test_without_volume_objects_claims_are_not_looked_at() -> None:
    assert placements(run([db()]))


def test_a_volumes_zone_label_pins_it_too() -> None:
    """kube-scheduler's VolumeZone: the labels of older volumes, several zones joined by `__`."""
    labelled = volume("pv", claim_ref=("default", "data"), labels={ZONE: "test-zone-b__test-zone-c"})
    vols = objects([claim("data", volume="pv")], [labelled])
    pod = db(required=[[req(ZONE, "NotIn", "test-zone-b")]])
    assert zone_of(run([pod], volumes=vols), "db-0") == "test-zone-c"
    assert "allow only zone test-zone-b or test-zone-c" in reason(
        run([db(required=[[req(ZONE, "In", "test-zone-a")]])], volumes=vols), "db-0"
    )


def test_an_attach_limit_no_type_meets_is_named() -> None:
    small = dataclasses.replace(make_instance_type("m.large"), volume_limits={DRIVER: 2})
    vols = objects([claim(n) for n in "abc"], [], [storage_class()])
    why = reason(run([with_claims(make_pod("p"), *"abc")], types=[small], volumes=vols), "p")
    assert "has 3 ebs.csi.aws.com volume attachments (the largest has 2 ebs.csi.aws.com volume attachments)" in why


def test_a_volume_naming_an_alias_waits_for_the_node_to_carry_it() -> None:
    """karpy plans `topology.ebs.csi.aws.com/zone` as the zone, but kube-scheduler reads the key as
    written: karpy binds only once the node has that label (the EBS driver sets it)."""
    ebs = volume(
        "pv", terms=zone_affinity("test-zone-c", key="topology.ebs.csi.aws.com/zone"), claim_ref=("default", "data")
    )
    vols = objects([claim("data", volume="pv")], [ebs])
    assert zone_of(run([db()], volumes=vols), "db-0") == "test-zone-c"
    labels = {ZONE: "test-zone-c", HOSTNAME: "n1"}
    assert "no label topology.ebs.csi.aws.com/zone" in bind_refusal(db(), "n1", labels, [], vols)
    assert bind_refusal(db(), "n1", {**labels, "topology.ebs.csi.aws.com/zone": "test-zone-c"}, [], vols) == ""


def test_a_claim_being_deleted_still_takes_its_attachment() -> None:
    vols = objects(
        [claim("old", volume="pv-old", deleting=True), claim("new", volume="pv-new")],
        [volume("pv-old", claim_ref=("default", "old")), volume("pv-new", claim_ref=("default", "new"))],
        [storage_class()],
        [csinode("n1", 1)],
    )
    node = make_node("n1", bound=[with_claims(make_pod("running", node_name="n1"), "old")])
    assert node_of(run([db("db-0", "new")], nodes=[node], volumes=vols), "db-0") != "n1"
