"""The decision log's kept evaluations, read at once by subject prefix (`DecisionLog.outcomes`)."""

from __future__ import annotations

from controller.clock import FakeClock
from controller.decisions import LAUNCHED, NOMINATED, UNSCHEDULABLE, Decision, DecisionLog


def test_outcomes_gives_each_subjects_last_action_under_the_prefix() -> None:
    log = DecisionLog(FakeClock())
    log.evaluated(Decision("provisioning", UNSCHEDULABLE, "pod/default/a", "no room"))
    log.evaluated(Decision("provisioning", LAUNCHED, "pod/default/a", "a new node n1 was launched for it"))
    log.evaluated(Decision("provisioning", NOMINATED, "pod/default/b", "fits on node n2"), log=False)
    log.record_once(Decision("garbagecollection", "garbage-collected", "node/n3"))
    log.record(Decision("provisioning", LAUNCHED, "node/n1"))  # the ring only: not an evaluation
    assert log.outcomes("pod/") == {"default/a": LAUNCHED, "default/b": NOMINATED}
    assert log.outcomes("node/") == {"n3": "garbage-collected"}
    log.retain("pod/", {"pod/default/b"})
    assert log.outcomes("pod/") == {"default/b": NOMINATED}
