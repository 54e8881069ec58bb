"""End to end: two replicas, one Lease: only the leader acts; killing it hands over within 15 s."""

from __future__ import annotations

import time

import pytest

from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e


def test_only_the_leader_acts_and_a_standby_takes_over_within_15s(karpy: KarpyEnv) -> None:
    karpy.provisioner()
    first = karpy.start("replica-a")
    second = karpy.start("replica-b", wait_ready=False)
    until(lambda: second.status().get("synced"), 30, "the standby to sync its state")
    assert first.status()["leader"] and not second.status()["leader"]

    karpy.deployment("one", 3, cpu="500m")
    until(lambda: len(karpy.running("one")) == 3, 20, "pods Running")
    assert [d for d in first.get("/api/v1/decisions") if d["action"] == "launched"]
    assert second.get("/api/v1/decisions") == []  # the standby decided nothing

    karpy.kill(first)
    killed = time.monotonic()
    until(lambda: second.status().get("leader"), 15, "the standby to become leader within 15 s")
    handover = time.monotonic() - killed
    karpy.deployment("two", 3, cpu="2")  # does not fit on the first node
    until(lambda: len(karpy.running("two")) == 3, 20, "the new leader to provision")
    assert [d for d in second.get("/api/v1/decisions") if d["action"] == "launched"]
    print(f"handover took {handover:.1f}s")
