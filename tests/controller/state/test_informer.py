"""Informers: list, watch, 410 Gone and lost connections re-list and continue."""

from __future__ import annotations

import threading

from controller.clock import FakeClock
from controller.kube.client import WatchEvent
from controller.kube.errors import ConnectionLostError, GoneError
from controller.kube.resources import NODES, PODS
from controller.state.cluster import ClusterState
from controller.state.informer import Informer
from tests.builders.wire import make_node, make_pod
from tests.fakes.kube import FakeKube


class StopAfterWatches(FakeKube):
    """Stops the informer once the watch script is used up."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop = stop

    def watch(self, kind, resource_version, timeout_seconds=60):  # type: ignore[no-untyped-def]
        if not self.watch_script:
            self.stop.set()
        yield from super().watch(kind, resource_version, timeout_seconds)


def run(
    script: list[WatchEvent | Exception], nodes: int = 1, page_size: int = 500, expire_continues: int = 0
) -> tuple[StopAfterWatches, ClusterState, Informer]:
    stop = threading.Event()
    kube = StopAfterWatches(stop)
    for i in range(nodes):
        kube.put(NODES, make_node("listed" if nodes == 1 else f"listed-{i:02d}"))
    kube.watch_script = script
    kube.expire_continues = expire_continues
    state = ClusterState(FakeClock(), kinds=[NODES.name])
    informer = Informer(kube, NODES, state, stop, page_size=page_size)
    informer.run()
    return kube, state, informer


def lists(kube: FakeKube) -> list[tuple[object, ...]]:
    return [args for call, args in kube.calls if call == "list"]


def test_list_then_watch_events() -> None:
    _, state, informer = run([WatchEvent("ADDED", make_node("watched")), WatchEvent("DELETED", make_node("listed"))])
    assert sorted(state.snapshot().nodes) == ["watched"]
    assert state.synced() and informer.relists == 1


def test_gone_relists_and_continues() -> None:
    _, state, informer = run([WatchEvent("ADDED", make_node("a")), GoneError("too old", 410)])
    assert informer.relists == 2
    assert sorted(state.snapshot().nodes) == ["listed"]  # the re-list is the truth
    assert state.synced()


def test_connection_reset_relists() -> None:
    _, state, informer = run([ConnectionLostError("reset")])
    assert informer.relists == 2 and state.synced()


def test_a_list_is_asked_page_by_page_and_the_watch_starts_at_its_resource_version() -> None:
    kube, state, informer = run([WatchEvent("ADDED", make_node("watched"))], nodes=5, page_size=2)
    assert lists(kube) == [("nodes", 2, ""), ("nodes", 2, "2/5"), ("nodes", 2, "4/5")]
    assert sorted(state.snapshot().nodes) == [*(f"listed-{i:02d}" for i in range(5)), "watched"]
    assert next(args for call, args in kube.calls if call == "watch") == ("nodes", "5")
    assert informer.relists == 1 and state.synced()


def test_an_expired_continue_token_lists_everything_at_once() -> None:
    kube, state, informer = run([], nodes=5, page_size=2, expire_continues=1)
    assert lists(kube) == [("nodes", 2, ""), ("nodes", 2, "2/5"), ("nodes", 0, "")]
    assert sorted(state.snapshot().nodes) == [f"listed-{i:02d}" for i in range(5)]
    assert informer.relists == 1 and state.synced()


def test_an_expired_first_page_is_a_410_that_relists() -> None:
    stop = threading.Event()
    kube = StopAfterWatches(stop)
    kube.put(NODES, make_node("listed"))
    kube.fail_next["list"] = GoneError("too old", 410)
    state = ClusterState(FakeClock(), kinds=[NODES.name])
    informer = Informer(kube, NODES, state, stop)
    informer.run()
    assert lists(kube) == [("nodes", 500, ""), ("nodes", 500, "")]
    assert sorted(state.snapshot().nodes) == ["listed"] and informer.relists == 1


class ChangeThenExpire(FakeKube):
    """The first watch: remembers the objects state holds, changes one pod, then answers 410."""

    def __init__(self, stop: threading.Event, state: ClusterState) -> None:
        super().__init__()
        self.stop, self.state = stop, state
        self.first: dict[str, object] = {}

    def watch(self, kind, resource_version, timeout_seconds=60):  # type: ignore[no-untyped-def]
        if self.first:
            self.stop.set()
            return
        self.first = {k: v.obj for k, v in self.state.snapshot().pods.items()}
        changed = make_pod("changes")
        changed["metadata"]["labels"] = {"v": "2"}
        self.put(PODS, changed)
        raise GoneError("too old", 410)
        yield


def test_a_relist_keeps_one_copy_of_each_unchanged_object() -> None:
    stop = threading.Event()
    state = ClusterState(FakeClock(), kinds=[PODS.name])
    kube = ChangeThenExpire(stop, state)
    for name in ("same", "changes"):
        kube.put(PODS, make_pod(name))
    informer = Informer(kube, PODS, state, stop, page_size=1)
    informer.run()
    pods = state.snapshot().pods
    assert informer.relists == 2
    assert pods["default/same"].obj is kube.first["default/same"]  # the held copy, not the re-listed one
    assert pods["default/changes"].obj is not kube.first["default/changes"]
    assert pods["default/changes"].labels == {"v": "2"}
