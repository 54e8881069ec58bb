"""Leader election on a Lease: create, renew, take over an expired lease, wait, release."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.kube.resources import LEASES
from controller.leaderelection import LeaderElector
from tests.fakes.kube import FakeKube


def pair() -> tuple[FakeClock, FakeKube, LeaderElector, LeaderElector]:
    clock = FakeClock()
    kube = FakeKube(clock)
    a = LeaderElector(kube, clock, "a", "kube-system", "lease", duration=10, retry_seconds=1)
    b = LeaderElector(kube, clock, "b", "kube-system", "lease", duration=10, retry_seconds=1)
    return clock, kube, a, b


def test_first_replica_leads_second_waits() -> None:
    _, _, a, b = pair()
    assert a.step() and not b.step()
    assert a.is_leader() and not b.is_leader()


def test_standby_takes_over_once_the_leader_stops_renewing() -> None:
    clock, kube, a, b = pair()
    a.step()
    clock.step(9)
    assert not b.step()
    clock.step(2)  # 11 s without renewal
    assert b.step() and b.is_leader() and not a.is_leader()
    assert kube.get(LEASES, "lease", "kube-system")["spec"]["leaseTransitions"] == 1


def test_release_hands_over_at_once() -> None:
    _, _, a, b = pair()
    a.step()
    a.release()
    assert b.step()
