"""The requirement algebra of spec §5.12."""

from __future__ import annotations

import pytest

from controller.core.requirements import Requirement, Requirements


def r(op: str, *values: str, key: str = "k") -> Requirement:
    return Requirement.new(key, op, values)


def test_operators_map_to_sets() -> None:
    assert r("In", "a", "b").operator == "In"
    assert r("NotIn", "a").operator == "NotIn"
    assert r("Exists").operator == "Exists"
    assert r("DoesNotExist").operator == "DoesNotExist"
    assert r("Gt", "2").has("3") and not r("Gt", "2").has("2") and not r("Gt", "2").has("x")
    assert r("Lt", "5").has("4") and not r("Lt", "5").has("5")


def test_keys_are_normalised() -> None:
    assert Requirement.new("beta.kubernetes.io/arch", "In", ["arm64"]).key == "kubernetes.io/arch"
    assert Requirement.new("topology.ebs.csi.aws.com/zone", "Exists").key == "topology.kubernetes.io/zone"


@pytest.mark.parametrize(("op", "values"), [("Gt", ()), ("Lt", ("a",)), ("Gt", ("1", "2")), ("Like", ("a",))])
def test_bad_operators_raise(op: str, values: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        Requirement.new("k", op, values)


INTERSECTIONS = {
    "In and In": (r("In", "a", "b"), r("In", "b", "c"), "In", {"b"}),
    "In and NotIn": (r("In", "a", "b"), r("NotIn", "a"), "In", {"b"}),
    "NotIn and NotIn": (r("NotIn", "a"), r("NotIn", "b"), "NotIn", {"a", "b"}),
    "Exists and In": (r("Exists"), r("In", "x"), "In", {"x"}),
    "In and DoesNotExist": (r("In", "x"), r("DoesNotExist"), "DoesNotExist", set()),
    "Gt and In filters values": (r("Gt", "2"), r("In", "1", "3", "x"), "In", {"3"}),
    "Gt and Lt crossing": (r("Gt", "5"), r("Lt", "5"), "DoesNotExist", set()),
}


@pytest.mark.parametrize(("a", "b", "op", "values"), INTERSECTIONS.values(), ids=INTERSECTIONS.keys())
def test_intersection(a: Requirement, b: Requirement, op: str, values: set[str]) -> None:
    both = a.intersection(b)
    assert both.operator == op and both.values == values
    assert b.intersection(a).values == values


def test_bounds_combine() -> None:
    both = r("Gt", "2").intersection(r("Lt", "8"))
    assert both.has("5") and not both.has("2") and not both.has("8")
    assert both.operator == "Exists"


def test_intersects_allows_two_absences_only() -> None:
    assert r("NotIn", "a").intersects(r("DoesNotExist"))
    assert r("DoesNotExist").intersects(r("DoesNotExist"))
    assert not r("In", "a").intersects(r("DoesNotExist"))
    assert not r("In", "a").intersects(r("In", "b"))
    assert r("Exists").intersects(r("NotIn", "a"))


def test_requirements_add_intersects_same_key() -> None:
    reqs = Requirements([r("In", "a", "b"), r("NotIn", "a")])
    assert reqs["k"].values == {"b"} and len(reqs) == 1


def test_compatible_needs_known_custom_keys() -> None:
    node = Requirements.from_wire([{"key": "team", "operator": "In", "values": ["a"]}])
    assert node.compatible(Requirements([r("In", "a", key="team")]))
    assert node.compatible(Requirements([r("In", "amd64", key="kubernetes.io/arch")]))  # well-known: fine
    errors = node.compatible_errors(Requirements([r("In", "x", key="tema")]))
    assert errors == ['label "tema" does not have known values']
    errors = node.compatible_errors(Requirements([r("In", "x", key="kubernetes.io/arc")]))
    assert errors == ['label "kubernetes.io/arc" does not have known values (typo of "kubernetes.io/arch"?)']
    assert node.compatible(Requirements([r("DoesNotExist", key="other")]))
    assert node.compatible_errors(Requirements([r("In", "b", key="team")])) == ["key team, team In b not in team In a"]


NODE_SIDES = [
    Requirements(),
    Requirements([r("In", "a", key="team")]),
    Requirements([r("In", "a", key="team"), r("In", "us-west-2a", key="topology.kubernetes.io/zone")]),
    Requirements([r("NotIn", "a", key="team"), r("Exists", key="gpu")]),
]
POD_SIDES = [
    Requirements(),
    Requirements([r("In", "a", key="team")]),
    Requirements([r("In", "b", key="team")]),
    Requirements([r("In", "x", key="unknown")]),
    Requirements([r("NotIn", "x", key="unknown")]),
    Requirements([r("DoesNotExist", key="unknown")]),
    Requirements([r("In", "us-west-2b", key="topology.kubernetes.io/zone")]),
    Requirements([r("Exists", key="gpu"), r("In", "a", key="team")]),
    Requirements([r("DoesNotExist", key="gpu")]),
]


@pytest.mark.parametrize("node", NODE_SIDES, ids=repr)
@pytest.mark.parametrize("pod", POD_SIDES, ids=repr)
def test_compatible_decides_as_its_errors_say(node: Requirements, pod: Requirements) -> None:
    """The solver's fast `compatible` (no messages) answers exactly as `compatible_errors`."""
    assert node.compatible(pod) == (not node.compatible_errors(pod))


def test_labels_pick_deterministic_values_for_custom_keys_only() -> None:
    reqs = Requirements.from_wire(
        [
            {"key": "team", "operator": "In", "values": ["b", "a"]},
            {"key": "counter", "operator": "Exists"},
            {"key": "shard", "operator": "Gt", "values": ["4"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ]
    )
    assert reqs.labels() == {"team": "a", "counter": "0", "shard": "5"}


def test_wire_round_trip() -> None:
    wire = [{"key": "k", "operator": "Gt", "values": ["2"]}, {"key": "j", "operator": "In", "values": ["a", "b"]}]
    assert Requirements.from_wire(wire).to_wire() == wire
