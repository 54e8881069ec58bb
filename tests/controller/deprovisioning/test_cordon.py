"""`cordon.py`: which deprovisioning cordons are stale, and the patches that set and lift them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.core.labels import DEPROVISIONING_CORDON
from controller.deprovisioning.cordon import cordon_patch, stale_cordons, uncordon_patch
from controller.state.snapshot import NodeView
from controller.state.views import node_view
from tests.builders.wire import make_node
from tests.fakes.kube import merge_patch


def marked_node(name: str, marked: bool = True, **kw: Any) -> NodeView:
    in_flight = kw.pop("in_flight", False)
    obj = merge_patch(make_node(name, **kw), cordon_patch()) if marked else make_node(name, **kw)
    return dataclasses.replace(node_view(obj), in_flight=in_flight)


STALE_CASES = {
    "marked, idle: stale": (marked_node("n1"), (), True),
    "not marked (someone else's cordon)": (marked_node("n1", marked=False), (), False),
    "being deleted (termination's cordon)": (marked_node("n1", deleting=True), (), False),
    "in flight": (marked_node("n1", in_flight=True), (), False),
    "candidate of the command in progress": (marked_node("n1"), ("n1",), False),
    "another node's command in progress": (marked_node("n1"), ("n2",), True),
}


@pytest.mark.parametrize(("node", "in_progress", "stale"), STALE_CASES.values(), ids=STALE_CASES.keys())
def test_stale_cordons(node: NodeView, in_progress: tuple[str, ...], stale: bool) -> None:
    assert [n.name for n in stale_cordons([node], in_progress)] == (["n1"] if stale else [])


def test_cordon_and_mark_are_one_patch_and_uncordon_undoes_both() -> None:
    node = make_node("n1")
    cordoned = merge_patch(node, cordon_patch())
    assert cordoned["spec"]["unschedulable"] is True
    assert cordoned["metadata"]["annotations"] == {DEPROVISIONING_CORDON: "true"}
    lifted = merge_patch(cordoned, uncordon_patch("7"))
    assert "unschedulable" not in lifted["spec"] and lifted["metadata"]["annotations"] == {}
    assert uncordon_patch("7")["metadata"]["resourceVersion"] == "7"  # only if unchanged since seen
    assert "resourceVersion" not in uncordon_patch()["metadata"]


def test_uncordon_keeping_another_cordon_only_removes_the_mark() -> None:
    cordoned = merge_patch(make_node("n1"), cordon_patch())
    lifted = merge_patch(cordoned, uncordon_patch("7", keep_cordoned=True))
    assert lifted["spec"]["unschedulable"] is True and DEPROVISIONING_CORDON not in lifted["metadata"]["annotations"]
