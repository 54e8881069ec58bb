"""What would happen to each node now: one verdict per node, agreeing with what decide() does."""

from __future__ import annotations

import dataclasses

import pytest

from controller.cloudprovider.drift import Drift, DriftReason
from controller.core import labels as L
from controller.deprovisioning.decide import decide
from controller.deprovisioning.outlook import (
    BLOCKED,
    CONSOLIDATE,
    DELETING,
    DRIFTED,
    EMPTY,
    EXPIRE,
    KEPT,
    NOT_CANDIDATE,
    Underway,
    node_outlooks,
    unconsolidatable_reasons,
    underway_of,
)
from controller.deprovisioning.types import DeprovisioningSettings, DriftInputs
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

CONSOLIDATING = make_provisioner(consolidation=True)


def outlook_of(node: NodeView, prov: ProvisionerWithTypes = CONSOLIDATING, **kw):  # type: ignore[no-untyped-def]
    snap = make_inputs([node], [prov], now=kw.pop("now", at(60)), **kw)
    return node_outlooks(snap, Underway(), {})[node.name]


@pytest.mark.parametrize(
    ("node", "prov", "verdict", "words"),
    [
        (make_node("d", deleting=True), CONSOLIDATING, DELETING, "being deleted"),
        (make_node("m", marked_for_deletion=True), CONSOLIDATING, DELETING, "marked for deletion"),
        (make_node("i", initialized=False), CONSOLIDATING, NOT_CANDIDATE, "not initialized"),
        (make_node("n", nominated=True), CONSOLIDATING, NOT_CANDIDATE, "nominated"),
        (make_node("o", provisioner="gone"), CONSOLIDATING, NOT_CANDIDATE, "provisioner gone is missing"),
        (make_node("x", pods=[make_pod("a")]), make_provisioner(ttl_expired=30), EXPIRE, "expired"),
        (make_node("e", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:30Z"}), make_provisioner(ttl_empty=60),
         EMPTY, "deleted at 2024-01-01T00:01:30Z"),
        (make_node("c", pods=[make_pod("a")], annotations={L.DO_NOT_CONSOLIDATE: "true"}), CONSOLIDATING, KEPT,
         "do-not-consolidate annotation"),
        (make_node("off", pods=[make_pod("a")]), make_provisioner(), KEPT, "consolidation disabled"),
        (make_node("g", pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})]), CONSOLIDATING, BLOCKED,
         "pod default/a has do not evict annotation"),
    ],
)  # fmt: skip
def test_verdicts(node: NodeView, prov: ProvisionerWithTypes, verdict: str, words: str) -> None:
    got = outlook_of(node, prov)
    assert got.verdict == verdict and words in got.reason


def test_a_pdb_blocks_and_is_named() -> None:
    got = outlook_of(make_node("p", pods=[make_pod("a")]), pdbs=[make_pdb("guard")])
    assert (got.verdict, got.reason) == (BLOCKED, "cannot be disrupted: pdb default/guard prevents pod evictions")


def test_an_expired_node_held_by_a_do_not_evict_pod_is_blocked() -> None:
    node = make_node("x", pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})])
    got = outlook_of(node, make_provisioner(ttl_expired=30))
    assert got.verdict == BLOCKED and got.reason.startswith("expired, but")
    assert got.expires == "2024-01-01T00:00:30Z"


def test_the_pending_consolidation_and_the_reasons_of_the_last_pass_agree_with_decide() -> None:
    settings = DeprovisioningSettings()
    # "big" is a large node with one small pod: replaceable by a cheaper small node; "pinned" opts out.
    big = make_node("big", LARGE, pods=[make_pod("a", 1)], created=at(0))
    pinned = make_node("pinned", SMALL, pods=[make_pod("b", 1.5)], annotations={L.DO_NOT_CONSOLIDATE: "true"})
    snap = make_inputs([big, pinned], [CONSOLIDATING], now=at(60))
    decision = decide(snap, None, schedule, settings)
    assert decision.pending is not None and decision.pending.command.node_names == ("big",)
    progress = underway_of(decision, None, settings.validation_wait_seconds)
    got = node_outlooks(snap, progress, unconsolidatable_reasons(decision))
    assert got["big"].verdict == CONSOLIDATE and "2024-01-01T00:01:15Z" in got["big"].reason
    assert got["pinned"].verdict == KEPT and "do-not-consolidate" in got["pinned"].reason


def test_reasons_from_the_last_consolidation_pass_are_quoted() -> None:
    node = make_node("k", SMALL, pods=[make_pod("a", 1.5)])
    snap = make_inputs([node], [CONSOLIDATING], now=at(60))
    got = node_outlooks(snap, Underway(), {"k": "can't replace with a cheaper node"})["k"]
    assert (got.verdict, got.reason) == (KEPT, "not consolidated: can't replace with a cheaper node")
    consolidated = make_inputs([node], [CONSOLIDATING], now=at(60), consolidated=True)
    assert "no cheaper placement" in node_outlooks(consolidated, Underway(), {})["k"].reason


def test_a_node_in_an_executing_command_is_being_removed() -> None:
    settings = DeprovisioningSettings(validation_wait_seconds=0)
    node = make_node("e", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"})
    snap = make_inputs([node], [make_provisioner(ttl_empty=5)], now=at(60))
    decision = decide(snap, None, schedule, settings)
    assert decision.execute is not None
    got = node_outlooks(snap, Underway(executing=decision.execute), {})["e"]
    assert got.verdict == DELETING and "emptiness/delete" in got.reason
    assert got.to_json() == {"verdict": DELETING, "reason": got.reason}


def test_a_drifted_node_says_why_and_what_blocks_it() -> None:
    ami = Drift(DriftReason.AMI, "AMI ami-1 is no longer selected by AWSNodeTemplate nodes (now ami-2)")
    node = make_node("n", pods=[make_pod("a")], annotations={L.VOLUNTARY_DISRUPTION: "drifted"})
    base = make_inputs([node], [CONSOLIDATING], now=at(60))
    on = dataclasses.replace(base, drift=DriftInputs(True, {}, {"n": ami}))
    got = node_outlooks(on, Underway(), {})["n"]
    assert (got.verdict, got.reason) == (
        DRIFTED,
        "drifted: AMI ami-1 is no longer selected by AWSNodeTemplate nodes (now ami-2): it will be replaced",
    )
    assert got.to_json()["drift"] == {"reason": "AMIDrift", "message": ami.message}
    guarded = dataclasses.replace(on, state=dataclasses.replace(on.state, pdbs=(make_pdb("guard"),)))
    blocked = node_outlooks(guarded, Underway(), {})["n"]
    assert blocked.verdict == BLOCKED
    assert blocked.reason.endswith("but it cannot be disrupted: pdb default/guard prevents pod evictions")
    off = node_outlooks(base, Underway(), {})["n"]
    assert off.verdict == KEPT and off.drift is None  # drift off: the annotation means nothing
