"""`explain_node`: what removing a node would do, with consolidation's own simulation (real scheduler)."""

from __future__ import annotations

import dataclasses

from controller.core import labels as L
from controller.explain.node import (
    CONSOLIDATION_DISABLED,
    DO_NOT_EVICT,
    LIMITS,
    NOT_CANDIDATE,
    PDB,
    UNSCHEDULABLE,
    explain_node,
)
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import (
    LARGE,
    MEDIUM,
    SMALL,
    make_inputs,
    make_node,
    make_pdb,
    make_pod,
    make_provisioner,
)


def test_a_freely_movable_node_names_the_existing_node_each_pod_goes_to() -> None:
    snap = make_inputs(
        [make_node("a", MEDIUM, pods=[make_pod("p1", 1.0)]), make_node("b", LARGE, pods=[make_pod("p2", 1.0)])],
        [make_provisioner(consolidation=True)],
    )
    answer = explain_node(snap, "a", schedule).to_json()
    assert answer["destinations"] == [{"pod": "default/p1", "kind": "existing", "node": "b"}]
    assert answer["blockers"] == []
    assert answer["removable"] is True
    assert answer["pricePerHour"] == 0.20
    assert answer["priceAfterPerHour"] == 0
    assert answer["consolidation"] == {"action": "delete", "whyNot": ""}


def test_pods_that_fit_nowhere_get_a_new_node_with_its_type_and_price() -> None:
    snap = make_inputs([make_node("big", LARGE, pods=[make_pod("p1", 1.0)])], [make_provisioner(consolidation=True)])
    answer = explain_node(snap, "big", schedule).to_json()
    assert answer["destinations"] == [{"pod": "default/p1", "kind": "new", "newNode": 0}]
    (new,) = answer["newNodes"]
    assert (new["instanceType"], new["capacityType"], new["pricePerHour"]) == ("small", "spot", 0.03)  # spot first
    assert answer["pricePerHour"] == 0.40  # on-demand large
    assert answer["priceAfterPerHour"] == 0.03
    assert answer["savingPerHour"] == 0.37
    assert answer["consolidation"]["action"] == "replace"


def test_every_pdb_and_do_not_evict_pod_is_a_blocker_naming_the_pod() -> None:
    pods = [
        make_pod("guarded", labels={"app": "db"}),
        make_pod("pinned", annotations={L.DO_NOT_EVICT: "true"}),
    ]
    snap = make_inputs(
        [make_node("a", MEDIUM, pods=pods), make_node("b", LARGE)],
        [make_provisioner(consolidation=True)],
        pdbs=[make_pdb("db-pdb", app="db")],
    )
    answer = explain_node(snap, "a", schedule).to_json()
    kinds = {(b["kind"], b.get("pod")) for b in answer["blockers"]}
    assert kinds == {(PDB, "default/guarded"), (DO_NOT_EVICT, "default/pinned")}
    assert "db-pdb" in answer["blockers"][0]["message"]
    assert answer["removable"] is False
    assert answer["consolidation"]["action"] == ""
    # the destinations are still computed: the blockers say why it will not happen
    assert {d["pod"] for d in answer["destinations"]} == {"default/guarded", "default/pinned"}


def test_a_provisioner_limit_that_forbids_the_replacement_is_a_limits_blocker() -> None:
    prov = make_provisioner(consolidation=True)
    assert prov.view.spec is not None
    spec = dataclasses.replace(prov.view.spec, limits={"cpu": 9000})
    limited = dataclasses.replace(prov, view=dataclasses.replace(prov.view, spec=spec))
    # the limit is 9 CPUs: without "big", the small node's 2 leave 7, too few for any type that holds 7 CPUs
    snap = make_inputs(
        [make_node("big", LARGE, pods=[make_pod("p1", 7.0)]), make_node("s", SMALL, pods=[make_pod("p2", 1.5)])],
        [limited],
    )
    answer = explain_node(snap, "big", schedule).to_json()
    assert [b["kind"] for b in answer["blockers"]] == [LIMITS]
    assert "limits would be exceeded" in answer["blockers"][0]["message"]
    assert answer["blockers"][0]["pod"] == "default/p1"


def test_a_pod_no_provisioner_can_place_is_unschedulable_with_the_schedulers_reason() -> None:
    pod = make_pod("p1")
    assert pod.request is not None
    picky = dataclasses.replace(pod, request=dataclasses.replace(pod.request, node_selector={"team": "blue"}))
    snap = make_inputs([make_node("big", LARGE, pods=[picky])], [make_provisioner(consolidation=True)])
    answer = explain_node(snap, "big", schedule).to_json()
    assert [b["kind"] for b in answer["blockers"]] == [UNSCHEDULABLE]
    assert '"team"' in answer["blockers"][0]["message"]


def test_consolidation_disabled_is_said_but_the_node_can_still_be_removed_by_hand() -> None:
    snap = make_inputs([make_node("a", MEDIUM, pods=[make_pod("p1")]), make_node("b", LARGE)])
    answer = explain_node(snap, "a", schedule).to_json()
    assert [b["kind"] for b in answer["blockers"]] == [CONSOLIDATION_DISABLED]
    assert answer["removable"] is True


def test_a_node_not_initialized_is_not_a_candidate_and_an_unknown_one_is_not_found() -> None:
    snap = make_inputs([make_node("a", MEDIUM, initialized=False)], [make_provisioner(consolidation=True)])
    answer = explain_node(snap, "a", schedule).to_json()
    assert answer["blockers"][0]["kind"] == NOT_CANDIDATE
    assert "not initialized" in answer["blockers"][0]["message"]
    assert explain_node(snap, "nope", schedule).to_json()["found"] is False
