"""`handoff`: which pods left to kube-scheduler on a new node wait for its answer, and until when."""

from __future__ import annotations

from typing import Any

from controller.clock import FakeClock
from controller.core import labels as L
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.handoff import HANDOFF_SECONDS, Handoffs
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot
from tests.builders.wire import make_node, make_pod, make_provisioner


def pod(name: str, rv: str = "7", **kw: Any) -> dict[str, Any]:
    out = make_pod(name, **kw)
    out["metadata"]["resourceVersion"] = rv
    return out


def snapshot(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None, now: float = 0.0) -> Snapshot:
    clock = FakeClock()
    clock.step(now)
    state = ClusterState(clock)
    by_kind: dict[str, list[dict[str, Any]]] = {k.name: [] for k in WATCHED}
    by_kind[PROVISIONERS.name].append(make_provisioner("default"))
    by_kind[NODES.name] += nodes if nodes is not None else [make_node("new", cpu="8")]
    by_kind[PODS.name] += pods
    for name, items in by_kind.items():
        state.replace(name, items)
    return state.snapshot()


def test_only_marked_pods_karpy_neither_pinned_nor_nominated_are_recorded() -> None:
    nominated = pod("nominated")
    nominated["status"]["nominatedNodeName"] = "new"
    pods = [pod("marked"), pod("queued", pending=False), pod("pinned", nodeSelector={L.ZONE: "us-west-2a"},
            topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": L.ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                        "labelSelector": {"matchLabels": {"app": "s"}}}]), nominated]  # fmt: skip
    handoffs = Handoffs()
    recorded = handoffs.record(snapshot(pods), [(f"default/{p['metadata']['name']}", "new") for p in pods])
    assert recorded == [("default/marked", "new")]


def test_a_record_holds_until_kube_scheduler_writes_the_pod_binds_it_the_node_goes_or_the_bound_passes() -> None:
    handoffs = Handoffs()
    handoffs.record(snapshot([pod("a"), pod("b"), pod("c"), pod("d")]), [(f"default/{n}", "new") for n in "abcd"])
    assert set(handoffs.waiting(snapshot([pod("a"), pod("b"), pod("c"), pod("d")], now=60))) == {
        f"default/{n}" for n in "abcd"
    }
    later = [pod("a", rv="9"), pod("b", node="new"), pod("c"), pod("d")]
    assert set(handoffs.waiting(snapshot(later, now=61))) == {"default/c", "default/d"}
    going = make_node("new", cpu="8")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert handoffs.waiting(snapshot([pod("c"), pod("d")], [going], now=62)) == {}
    handoffs.record(snapshot([pod("c")]), [("default/c", "new")])
    assert set(handoffs.waiting(snapshot([pod("c")], now=HANDOFF_SECONDS - 1))) == {"default/c"}
    assert handoffs.waiting(snapshot([pod("c")], now=HANDOFF_SECONDS)) == {} and len(handoffs) == 0
