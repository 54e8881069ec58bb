"""The emptiness-timestamp marker and TTL-based deletion of empty nodes (spec §6.1, §6.3)."""

from __future__ import annotations

from controller.core import labels as L
from controller.core.timestamps import parse_timestamp
from controller.deprovisioning.emptiness import Emptiness, emptiness_annotations
from controller.deprovisioning.types import Annotate
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import at, make_inputs, make_node, make_pod, make_provisioner

TTL5 = [make_provisioner(ttl_empty=5)]


def test_an_empty_node_gets_the_timestamp_of_now() -> None:
    snap = make_inputs([make_node("n1", pods=[make_pod("ds", owner_kind="DaemonSet")])], TTL5, now=at(42))
    assert emptiness_annotations(snap) == [Annotate("n1", L.EMPTINESS_TIMESTAMP, "2024-01-01T00:00:42Z")]
    assert parse_timestamp("2024-01-01T00:00:42Z") == at(42)


def test_the_timestamp_is_removed_when_pods_come_back() -> None:
    node = make_node("n1", pods=[make_pod("a")], annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"})
    assert emptiness_annotations(make_inputs([node], TTL5)) == [Annotate("n1", L.EMPTINESS_TIMESTAMP, None)]


def test_marker_leaves_alone_nominated_uninitialized_and_ttl_less_nodes() -> None:
    nodes = [make_node("nominated", nominated=True), make_node("booting", initialized=False)]
    assert emptiness_annotations(make_inputs(nodes, TTL5)) == []
    assert emptiness_annotations(make_inputs([make_node("n1")], [make_provisioner()])) == []


def test_already_marked_empty_node_is_not_touched() -> None:
    node = make_node("n1", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"})
    assert emptiness_annotations(make_inputs([node], TTL5)) == []


def test_nodes_empty_longer_than_the_ttl_are_deleted_together() -> None:
    nodes = [
        make_node("old-1", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"}),
        make_node("old-2", annotations={L.EMPTINESS_TIMESTAMP: "garbage"}),
        make_node("recent", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:04Z"}),
        make_node("unmarked"),
        make_node("busy", pods=[make_pod("a")], annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"}),
    ]
    out = Emptiness().compute(make_inputs(nodes, TTL5, now=at(6)), schedule)
    assert out.command is not None
    assert out.command.reason == "emptiness/delete"
    assert sorted(out.command.node_names) == ["old-1", "old-2"]


def test_nothing_before_the_ttl_or_without_it() -> None:
    node = make_node("n1", annotations={L.EMPTINESS_TIMESTAMP: "2024-01-01T00:00:00Z"})
    assert Emptiness().compute(make_inputs([node], TTL5, now=at(5)), schedule).command is None
    assert Emptiness().compute(make_inputs([node], [make_provisioner()], now=at(60)), schedule).command is None
