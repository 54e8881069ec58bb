"""The plain types of `controller/scheduling/types.py`."""

from __future__ import annotations

import pytest

from controller.scheduling.types import LabelSelector, pod_key
from tests.builders.scheduling import make_instance_type, make_node, make_pod

SELECTOR = LabelSelector(
    match_labels=(("app", "web"),),
    match_expressions=(("tier", "In", ("front", "edge")), ("legacy", "DoesNotExist", ())),
)


@pytest.mark.parametrize(
    ("labels", "selected"),
    [
        ({"app": "web", "tier": "front"}, True),
        ({"app": "web", "tier": "edge"}, True),
        ({"app": "web", "tier": "back"}, False),
        ({"app": "web"}, False),
        ({"app": "web", "tier": "front", "legacy": "yes"}, False),
        ({"app": "api", "tier": "front"}, False),
    ],
)
def test_label_selector_matches_labels_and_expressions(labels: dict[str, str], selected: bool) -> None:
    assert SELECTOR.matches(labels) is selected


def test_label_selector_not_in_and_exists() -> None:
    selector = LabelSelector(match_expressions=(("zone", "NotIn", ("a",)), ("team", "Exists", ())))
    assert selector.matches({"team": "x", "zone": "b"})
    assert selector.matches({"team": "x"})
    assert not selector.matches({"team": "x", "zone": "a"})
    assert not selector.matches({"zone": "b"})
    assert str(LabelSelector()) == "<all>"


def test_instance_type_allocatable_and_labels() -> None:
    it = make_instance_type("m.xlarge", cpu=4, memory_gib=16, overhead={"cpu": "80m", "memory": "1Gi"})
    assert it.allocatable["cpu"] == 3920
    assert it.allocatable["memory"] == 15 * 2**30
    assert it.labels["node.kubernetes.io/instance-type"] == "m.xlarge"
    # zone and capacity type have several values: they come from the launch, not the type
    assert "topology.kubernetes.io/zone" not in it.labels
    assert len(it.available_offerings()) == 3


def test_pod_key() -> None:
    assert pod_key("ns", "name") == "ns/name"


def test_a_node_counts_its_pods_by_label_set_daemonset_pods_aside() -> None:
    """What kube-scheduler's default spread counts of a node, made once per node."""
    pods = [
        make_pod("a", labels={"app": "x"}, owner_kind="ReplicaSet", node_name="n"),
        make_pod("b", labels={"app": "x"}, owner_kind="ReplicaSet", node_name="n"),
        make_pod("c", labels={"app": "x", "tier": "1"}, owner_kind="ReplicaSet", node_name="n"),
        make_pod("d", labels={"app": "x"}, owner_kind="DaemonSet", node_name="n"),
    ]
    node = make_node("n", bound=pods)
    assert node.label_sets == {frozenset({("app", "x")}): 2, frozenset({("app", "x"), ("tier", "1")}): 1}
    assert node.label_sets is node.label_sets
