"""Leader election on a Lease: create, renew, take over an expired lease, wait, release."""

from __future__ import annotations

from typing import Any

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
    assert not b.step()  # b sees the lease renewed now (by its own clock)
    clock.step(9)
    assert not b.step()
    clock.step(2)  # 11 s without a change b could see
    assert b.step() and b.is_leader() and not a.is_leader()
    assert kube.get(LEASES, "lease", "kube-system")["spec"]["leaseTransitions"] == 1


def test_release_hands_over_at_once() -> None:
    _, _, a, b = pair()
    a.step()
    a.release()
    assert b.step()


class Partitioned:
    """A replica's view of the API server when its network is cut: every call fails."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise OSError("network unreachable")

        return fail


def test_clock_skew_never_gives_two_leaders() -> None:
    # issue 14, item 5: b's clock runs 3 s ahead of a's; a is cut off right after renewing.
    # Judged by renewTime, b took over 3 s before a stopped (two leaders for ~2.5 s).
    clock_a, clock_b = FakeClock(), FakeClock(1_700_000_003.0)
    kube = FakeKube(clock_a)
    a = LeaderElector(kube, clock_a, "a", "kube-system", "lease", duration=10, retry_seconds=1)
    b = LeaderElector(kube, clock_b, "b", "kube-system", "lease", duration=10, retry_seconds=1)
    assert a.step() and not b.step()
    a.kube = Partitioned()
    leaders = []
    for tick in range(1, 31):  # 15 s in half-second steps
        clock_a.step(0.5)
        clock_b.step(0.5)
        if tick % 2 == 0:
            a.step()
            b.step()
        assert not (a.is_leader() and b.is_leader()), f"two leaders at +{tick / 2}s"
        leaders.append("a" if a.is_leader() else "b" if b.is_leader() else "-")
    assert leaders[0] == "a" and leaders[-1] == "b"  # a stopped first, b took over later


def test_a_leader_that_sees_another_holder_stops_at_once() -> None:
    _, kube, a, _ = pair()
    a.step()
    lease = kube.get(LEASES, "lease", "kube-system")
    kube.replace(LEASES, "lease", {**lease, "spec": {**lease["spec"], "holderIdentity": "b"}}, "kube-system")
    assert a.is_leader()
    assert not a.step() and not a.is_leader()


def test_a_leader_stops_acting_before_its_lease_could_be_taken() -> None:
    clock, _, a, _ = pair()
    a.step()
    a.kube = Partitioned()
    clock.step(7.9)
    assert a.step() and a.is_leader()  # the renewal failed; still within the renew deadline
    clock.step(0.2)  # 8.1 s after the last renewal: within the 10 s lease, past the renew deadline
    assert not a.is_leader()
