"""Informers: list, watch, 410 Gone and lost connections re-list and continue."""

from __future__ import annotations

import threading

from controller.clock import FakeClock
from controller.kube.client import WatchEvent
from controller.kube.errors import ConnectionLostError, GoneError
from controller.kube.resources import NODES
from controller.state.cluster import ClusterState
from controller.state.informer import Informer
from tests.builders.wire import make_node
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


def run(script: list[WatchEvent | Exception]) -> tuple[StopAfterWatches, ClusterState, Informer]:
    stop = threading.Event()
    kube = StopAfterWatches(stop)
    kube.put(NODES, make_node("listed"))
    kube.watch_script = script
    state = ClusterState(FakeClock(), kinds=[NODES.name])
    informer = Informer(kube, NODES, state, stop)
    informer.run()
    return kube, state, informer


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
