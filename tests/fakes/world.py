"""The one test world: a cluster the controllers act on, fed to cluster state as watches would.

`World` holds a `FakeClock`, a `FakeKube` (the API server), a `FakeCloudProvider`, a
`ClusterState`, the process's `EventRecorder` and `DecisionLog`, wired as `controller/main.py`
wires them. `sync()` hands state what the watches would deliver (copies: a later change to a
stored object reaches state only by the next sync); `put()`, `step()` and the `expect_*`
helpers keep tests about behaviour. `sync_from(state, kube)` is the same sync for a state or a
FakeKube a test holds apart (a restarted controller, another cloud); `feed(state, objects)` lists
plain objects into a state (as the informers do on start) and `state_of(objects)` makes one, for
tests that need no API server. The `world` fixture
(`tests/conftest.py`) gives each test a fresh one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.clock import FakeClock
from controller.decisions import DecisionLog
from controller.events import EventRecorder
from controller.kube.client import Obj
from controller.kube.resources import NODES, WATCHED, Kind
from controller.scheduling.types import InstanceType
from controller.state.cluster import ClusterState
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube


def feed(state: ClusterState, objects: Mapping[str, Sequence[Obj]] | None = None) -> ClusterState:
    """List every watched kind into `state`, as the informers do on start (kind name → objects;
    absent kinds are listed empty): afterwards it is synced. The one copy of that loop."""
    for kind in WATCHED:
        state.replace(kind.name, list((objects or {}).get(kind.name, ())))
    return state


def sync_from(state: ClusterState, kube: FakeKube) -> ClusterState:
    """`state` lists what `kube` holds, as a watch delivers it: copies, so a later change to a
    stored object reaches state only by the next sync."""
    return feed(state, {kind.name: copy.deepcopy(kube.items(kind)) for kind in WATCHED})


def state_of(objects: Mapping[str, Sequence[Obj]] | None = None, clock: FakeClock | None = None) -> ClusterState:
    """A synced cluster state holding `objects`."""
    return feed(ClusterState(clock or FakeClock()), objects)


@dataclass
class World:
    clock: FakeClock
    kube: FakeKube
    cloud: FakeCloudProvider
    state: ClusterState
    recorder: EventRecorder
    decisions: DecisionLog
    synced: bool = field(default=False)

    @staticmethod
    def make(instance_types: Iterable[InstanceType] | None = None, now: float | None = None) -> World:
        clock = FakeClock() if now is None else FakeClock(now)
        kube = FakeKube(clock)
        cloud = FakeCloudProvider(tuple(instance_types or ()), clock)
        state = ClusterState(clock)
        return World(clock, kube, cloud, state, EventRecorder(kube, clock), DecisionLog(clock))

    # The cluster -----------------------------------------------------------------------------

    def put(self, kind: Kind, *objs: Mapping[str, Any]) -> None:
        for obj in objs:
            self.kube.put(kind, obj)

    def sync(self) -> None:
        """Every watched kind as a fresh list would deliver it (copies of the stored objects)."""
        sync_from(self.state, self.kube)
        self.synced = True

    def step(self, seconds: float) -> None:
        self.clock.step(seconds)

    # Expectations ----------------------------------------------------------------------------

    def names(self, kind: Kind) -> list[str]:
        return sorted(str(o["metadata"]["name"]) for o in self.kube.items(kind))

    def expect_nodes(self, *names: str) -> None:
        """Exactly these Nodes exist (in any order)."""
        assert self.names(NODES) == sorted(names), f"nodes: {self.names(NODES)}, expected {sorted(names)}"

    def deleting(self, kind: Kind = NODES) -> list[str]:
        return sorted(
            str(o["metadata"]["name"]) for o in self.kube.items(kind) if o["metadata"].get("deletionTimestamp")
        )

    def expect_deleting(self, *names: str, kind: Kind = NODES) -> None:
        """Exactly these objects of `kind` are being deleted (deletionTimestamp set)."""
        assert self.deleting(kind) == sorted(names), f"deleting: {self.deleting(kind)}, expected {sorted(names)}"

    def events(self, reason: str) -> list[Obj]:
        return [e for e in self.kube.events if e.get("reason") == reason]

    def expect_event(self, reason: str, about: str = "", says: str = "") -> Obj:
        """An event with `reason` was recorded (on the object named `about`, its text containing
        `says`); the first such event."""
        for event in self.events(reason):
            if about and (event.get("involvedObject") or {}).get("name") != about:
                continue
            if says and says not in str(event.get("message") or ""):
                continue
            return event
        seen = sorted({str(e.get("reason")) for e in self.kube.events})
        raise AssertionError(f"no {reason} event about {about or 'anything'} saying {says!r}; seen: {seen}")

    def expect_no_event(self, reason: str) -> None:
        assert not self.events(reason), f"unexpected {reason} events: {self.events(reason)}"
