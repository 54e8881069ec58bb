"""Expiration: replace nodes past `ttlSecondsUntilExpired` with pre-spun capacity (spec §6.4)."""

from __future__ import annotations

from controller.core import labels as L
from controller.deprovisioning.expiration import Expiration
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import SMALL, at, make_inputs, make_node, make_pdb, make_pod, make_provisioner

TTL = [make_provisioner(ttl_expired=100)]


def test_an_expired_node_with_pods_is_replaced_by_new_capacity() -> None:
    node = make_node("n1", pods=[make_pod("a", cpu=1.5)], created=at(0))
    out = Expiration().compute(make_inputs([node], TTL, now=at(101)), schedule)
    assert out.command is not None and out.command.reason == "expiration/replace"
    assert out.command.node_names == ("n1",)
    (new,) = out.command.replacements
    assert [p.key for p in new.pods] == ["default/a"]


def test_an_expired_node_whose_pods_fit_elsewhere_is_just_deleted() -> None:
    nodes = [make_node("old", pods=[make_pod("a")], created=at(0)), make_node("young", created=at(90))]
    out = Expiration().compute(make_inputs(nodes, TTL, now=at(101)), schedule)
    assert out.command is not None and out.command.reason == "expiration/delete"
    assert out.command.node_names == ("old",)


def test_oldest_expiry_first_and_one_node_per_pass() -> None:
    nodes = [make_node("b", created=at(5)), make_node("a", created=at(1))]
    out = Expiration().compute(make_inputs(nodes, TTL, now=at(200)), schedule)
    assert out.command is not None and out.command.node_names == ("a",)


def test_not_expired_yet_or_no_ttl() -> None:
    node = make_node("n1", created=at(0))
    assert Expiration().compute(make_inputs([node], TTL, now=at(100)), schedule).command is None
    no_ttl = make_inputs([node], [make_provisioner()], now=at(10**6))
    assert Expiration().compute(no_ttl, schedule).command is None


def test_voluntary_disruption_annotation_decides_when_present() -> None:
    marked = make_node("n1", created=at(0), annotations={L.VOLUNTARY_DISRUPTION: "expired"})
    assert Expiration().compute(make_inputs([marked], TTL, now=at(1)), schedule).command is not None
    drifted = make_node("n1", created=at(0), annotations={L.VOLUNTARY_DISRUPTION: "drifted"})
    assert Expiration().compute(make_inputs([drifted], TTL, now=at(500)), schedule).command is None


def test_do_not_evict_pod_keeps_its_node_from_expiring() -> None:
    node = make_node("n1", pods=[make_pod("a", annotations={L.DO_NOT_EVICT: "true"})], created=at(0))
    out = Expiration().compute(make_inputs([node], TTL, now=at(500)), schedule)
    assert out.command is None
    assert [e.reason for e in out.events] == ["DeprovisioningBlocked"]


def test_pdb_blocks_expiry_and_the_next_node_goes_instead() -> None:
    nodes = [
        make_node("guarded", pods=[make_pod("a")], created=at(0)),
        make_node("free", SMALL, pods=[make_pod("b", labels={"app": "other"})], created=at(1)),
    ]
    out = Expiration().compute(make_inputs(nodes, TTL, now=at(500), pdbs=[make_pdb(allowed=0)]), schedule)
    assert out.command is not None and out.command.node_names == ("free",)


def test_expiration_proceeds_even_if_some_pods_fit_nowhere() -> None:
    node = make_node("n1", pods=[make_pod("huge", cpu=64), make_pod("a")], created=at(0))
    out = Expiration().compute(make_inputs([node], TTL, now=at(500)), schedule)
    assert out.command is not None and out.command.node_names == ("n1",)
