"""Savings: the dollars and hourly rate consolidation saved, kept in a ConfigMap across restarts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from controller.clock import FakeClock
from controller.core.labels import DEPROVISIONING_CORDON, INITIALIZED
from controller.decisions import DEPROVISIONING_FAILED, Decision, DecisionLog
from controller.explain.savings import DATA_KEY, DAY, WEEK, Entry, SavingsLedger, summary
from controller.kube.client import Obj
from controller.kube.errors import KubeError
from controller.kube.resources import CONFIGMAPS, NODES, Kind
from tests.fakes.deprovisioning import World as DeprovisioningWorld
from tests.fakes.deprovisioning import replacing_big, restarted
from tests.fakes.kube import FakeKube

T0 = 1_704_067_200.0


def command(nodes: list[str], before: float, after: float, at: float) -> Decision:
    return Decision("deprovisioning", "consolidation/delete", f"node/{nodes[0]}", "consolidation: delete",
                    price_before=before, price_after=after, time=at, extra={"nodes": nodes})  # fmt: skip


def replace_command(nodes: list[str], replacements: list[str], before: float, after: float, at: float) -> Decision:
    return Decision("deprovisioning", "consolidation/replace", f"node/{nodes[0]}", "consolidation: replace",
                    price_before=before, price_after=after, time=at,
                    extra={"nodes": nodes, "replacementNodes": replacements})  # fmt: skip


def node(name: str, cordoned: bool = False, initialized: bool = True) -> dict[str, Any]:
    """A Node as the API holds it; `cordoned`: by a deprovisioning command (karpy's mark)."""
    meta: dict[str, Any] = {"name": name, "labels": {INITIALIZED: "true"} if initialized else {},
                            "finalizers": ["karpenter.sh/termination"]}  # fmt: skip
    if cordoned:
        meta["annotations"] = {DEPROVISIONING_CORDON: "true"}
    return {"metadata": meta, "spec": {"unschedulable": True} if cordoned else {}}


def gone(kube: FakeKube, name: str) -> None:
    """The termination finalizer done: the Node deleted."""
    kube.delete(NODES, name)
    kube.patch(NODES, name, {"metadata": {"finalizers": None}})


def uncordoned(kube: FakeKube, name: str) -> None:
    """What a new leader does to the cordon of a command that died with the old one."""
    kube.patch(
        NODES, name, {"metadata": {"annotations": {DEPROVISIONING_CORDON: None}}, "spec": {"unschedulable": None}}
    )


def test_summary_counts_each_commands_rate_from_when_it_ran() -> None:
    entries = [
        Entry(T0, "consolidation/delete", ("a",), 0.4, 0.0),
        Entry(T0 + DAY, "consolidation/replace", ("b",), 0.3, 0.1),
    ]
    now = T0 + 2 * DAY
    got = summary(entries, now)
    assert got["savingPerHour"] == pytest.approx(0.6)
    assert got["lastDay"] == pytest.approx(0.6 * 24)  # both ran for the whole last day
    assert got["lastWeek"] == pytest.approx(0.4 * 48 + 0.2 * 24)
    assert summary([Entry(now - WEEK - DAY, "x", ("c",), 1.0, 0.0)], now)["lastWeek"] == pytest.approx(168.0)
    assert summary([], now) == {"savingPerHour": 0, "lastDay": 0, "lastWeek": 0, "commands": 0, "pending": 0,
                                "dropped": 0, "since": "", "recent": []}  # fmt: skip


def test_only_commands_that_took_effect_count_each_from_when_it_did() -> None:
    entries = [
        Entry(T0, "consolidation/replace", ("a",), 0.4, 0.1, ("r",), "counted", T0 + 3600),
        Entry(T0, "consolidation/delete", ("b",), 0.2, 0.0, (), "pending"),
        Entry(T0, "consolidation/replace", ("c",), 0.5, 0.1, ("s",), "ready"),
        Entry(T0, "consolidation/delete", ("d",), 0.3, 0.0, (), "dropped", T0 + 60),
    ]
    got = summary(entries, T0 + 3 * 3600)
    assert (got["savingPerHour"], got["commands"], got["pending"], got["dropped"]) == (pytest.approx(0.3), 1, 2, 1)
    assert got["lastDay"] == pytest.approx(0.3 * 2)  # from when the replace took effect, not when it began
    assert [e["nodes"] for e in got["recent"]] == [["a"]]


def ledger(kube: FakeKube, decisions: DecisionLog, clock: FakeClock) -> SavingsLedger:
    return SavingsLedger(kube, decisions, clock, "karpy", "karpy-savings")


def test_commands_are_persisted_and_a_new_leader_reads_them_back() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    decisions.record(Decision("provisioning", "launched", "node/x", price=0.1, time=T0))
    first = ledger(kube, decisions, clock)
    first.reconcile()
    stored = json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])
    assert [e["nodes"] for e in stored] == [["a"]]
    # another replica, with an empty decision log of its own, takes over
    second = ledger(kube, DecisionLog(clock), clock)
    second.reconcile()
    assert second.answer()["savingPerHour"] == pytest.approx(0.4)
    assert second.answer()["persisted"] is True


def test_a_command_that_failed_later_is_not_a_saving() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.1, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"]) == (0, 1)
    decisions.record(Decision("deprovisioning", DEPROVISIONING_FAILED, "node/a", "never initialized",
                              price_before=0.4, price_after=0.1, time=T0 + 30, extra={"nodes": ["a"]}))  # fmt: skip
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"], book.answer()["dropped"]) == (0, 0, 1)
    assert [e["status"] for e in json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])] == [
        "dropped"
    ]


def test_a_conflict_rereads_and_merges_what_another_writer_stored() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    ours = DecisionLog(clock)
    ours.record(command(["a"], 0.4, 0.0, T0))
    book = ledger(kube, ours, clock)
    book.reconcile()
    theirs = DecisionLog(clock)
    theirs.record(command(["b"], 0.2, 0.0, T0 + 10))
    ledger(kube, theirs, clock).reconcile()  # another writer, now ahead
    ours.record(command(["c"], 0.1, 0.0, T0 + 20))
    book.reconcile()  # conflict: nothing lost, re-read next pass
    book.reconcile()
    stored = json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])
    assert sorted(e["nodes"][0] for e in stored) == ["a", "b", "c"]


def test_a_broken_configmap_is_started_over_not_a_crash() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    kube.put(CONFIGMAPS, {"metadata": {"name": "karpy-savings", "namespace": "karpy"}, "data": {DATA_KEY: "{nope"}})
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    assert book.answer()["savingPerHour"] == pytest.approx(0.4)
    assert json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])[0]["nodes"] == ["a"]


def test_the_charts_labels_and_annotations_stay_on_the_configmap() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    helm = {"labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": {"meta.helm.sh/release-name": "karpy"}}
    kube.put(CONFIGMAPS, {"metadata": {"name": "karpy-savings", "namespace": "karpy", **helm}})
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    ledger(kube, decisions, clock).reconcile()
    stored = kube.get(CONFIGMAPS, "karpy-savings", "karpy")
    assert stored["metadata"]["labels"] == helm["labels"]
    assert stored["metadata"]["annotations"] == helm["annotations"]
    assert json.loads(stored["data"][DATA_KEY])[0]["nodes"] == ["a"]


def test_a_standby_answers_with_what_the_leader_stored() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    ledger(kube, decisions, clock).reconcile()
    standby = ledger(kube, DecisionLog(clock), clock)  # its job never runs: it does not lead
    assert standby.answer()["savingPerHour"] == pytest.approx(0.4)
    assert kube.get(CONFIGMAPS, "karpy-savings", "karpy")["metadata"]["resourceVersion"] == "1"  # it wrote nothing


class WatchedKube(FakeKube):
    """A FakeKube that lets a test see the ledger's answer while its write is under way."""

    def __init__(self) -> None:
        super().__init__()
        self.during_write: list[Callable[[], None]] = []

    def replace(self, kind: Kind, name: str, obj: Mapping[str, Any], namespace: str | None = None) -> Obj:
        for look in self.during_write:
            look()
        self._maybe_fail("replace")
        return super().replace(kind, name, obj, namespace)


def stored_nodes(kube: FakeKube) -> list[str]:
    return [e["nodes"][0] for e in json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])]


def test_persisted_only_once_the_configmap_holds_every_command_counted() -> None:
    # the flake of tests/e2e/explain/test_savings_survive.py: the answer counted a command the
    # ConfigMap did not hold yet (its write under way, refused, or failed) and said persisted
    clock, kube = FakeClock(T0 + 60), WatchedKube()
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    assert book.answer()["persisted"] is True and stored_nodes(kube) == ["a"]

    seen: list[tuple[int, bool, list[str]]] = []
    kube.during_write.append(lambda: seen.append((book.answer()["commands"], book.answer()["persisted"],
                                                  stored_nodes(kube))))  # fmt: skip
    decisions.record(command(["b"], 0.3, 0.0, T0 + 10))
    clock.step(5)
    book.reconcile()
    assert seen == [(2, False, ["a"])]  # counted while its write was under way: not persisted yet
    assert book.answer()["persisted"] is True and stored_nodes(kube) == ["a", "b"]

    kube.during_write.clear()
    kube.fail_next["replace"] = KubeError("etcdserver: request timed out", 504)
    decisions.record(command(["c"], 0.2, 0.0, T0 + 20))
    clock.step(5)
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["persisted"]) == (3, False)  # the write failed
    clock.step(5)
    book.reconcile()  # the next pass writes what it owes
    assert book.answer()["persisted"] is True and stored_nodes(kube) == ["a", "b", "c"]


def test_a_replica_leading_again_reads_what_the_other_leader_stored_meanwhile() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    ours = DecisionLog(clock)
    ours.record(command(["a"], 0.4, 0.0, T0))
    first = ledger(kube, ours, clock)
    first.reconcile()
    clock.step(30)  # it lost the Lease; another replica led and carried out a command
    theirs = DecisionLog(clock)
    theirs.record(command(["b"], 0.2, 0.0, T0 + 70))
    ledger(kube, theirs, clock).reconcile()
    clock.step(30)  # the first leads again, with nothing new of its own
    first.reconcile()
    got = first.answer()
    assert (got["commands"], got["persisted"]) == (2, True)
    assert got["savingPerHour"] == pytest.approx(0.6)


# A command counts only once it took effect ---------------------------------------------------


def stored(kube: FakeKube) -> list[tuple[str, str]]:
    return [
        (e["nodes"][0], e["status"])
        for e in json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY])
    ]


def test_a_replace_counts_only_once_its_candidate_is_gone_and_from_then() -> None:
    clock, kube = FakeClock(T0), FakeKube(FakeClock(T0))
    kube.put(NODES, node("a", cordoned=True))
    kube.put(NODES, node("r", initialized=False))
    decisions = DecisionLog(clock)
    decisions.record(replace_command(["a"], ["r"], 0.4, 0.1, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["pending"], got["savingPerHour"], got["persisted"]) == (0, 1, 0, True)
    assert stored(kube) == [("a", "pending")]  # a new leader can settle it
    kube.patch(NODES, "r", {"metadata": {"labels": {INITIALIZED: "true"}}})
    clock.step(5)
    book.reconcile()
    assert (book.answer()["commands"], stored(kube)) == (0, [("a", "ready")])
    kube.delete(NODES, "a")  # the executor deletes it; the termination finalizer drains it
    clock.step(5)
    book.reconcile()
    assert book.answer()["commands"] == 0
    gone(kube, "a")
    clock.step(5)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["pending"], got["savingPerHour"], got["persisted"]) == (1, 0, pytest.approx(0.3), True)
    assert stored(kube) == [("a", "counted")]
    clock.step(3600)
    assert book.answer()["lastDay"] == pytest.approx(0.3)  # from when it took effect (T0 + 15 s)
    assert book.answer()["recent"][0]["settled"] == "2024-01-01T00:00:15Z"


def test_an_abandoned_command_is_dropped_and_never_counted() -> None:
    clock, kube = FakeClock(T0), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    kube.put(NODES, node("r"))
    decisions = DecisionLog(clock)
    decisions.record(replace_command(["a"], ["r"], 0.4, 0.1, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    assert book.answer()["pending"] == 1
    uncordoned(kube, "a")  # the leader died mid-replace; the new one lifted the cordon: a stays
    clock.step(5)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["pending"], got["dropped"], got["savingPerHour"]) == (0, 0, 1, 0)
    assert stored(kube) == [("a", "dropped")]
    version = kube.get(CONFIGMAPS, "karpy-savings", "karpy")["metadata"]["resourceVersion"]
    gone(kube, "a")  # removed later by something else: the abandoned command still saved nothing
    for _ in range(2):
        clock.step(5)
        book.reconcile()  # the decision log still holds the command: it is not added again
    assert (book.answer()["commands"], book.answer()["dropped"]) == (0, 1)
    assert kube.get(CONFIGMAPS, "karpy-savings", "karpy")["metadata"]["resourceVersion"] == version


def test_a_replace_whose_replacement_never_came_is_dropped() -> None:
    clock, kube = FakeClock(T0), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    decisions = DecisionLog(clock)
    decisions.record(replace_command(["a"], ["r"], 0.4, 0.1, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    gone(kube, "a")  # deleted by someone else; its replacement was never seen
    clock.step(5)
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["dropped"]) == (0, 1)


def test_a_node_consolidated_twice_the_first_command_abandoned_counts_once() -> None:
    clock, kube = FakeClock(T0), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    kube.put(NODES, node("r1"))
    old = DecisionLog(clock)
    old.record(replace_command(["a"], ["r1"], 0.4, 0.1, T0))
    ledger(kube, old, clock).reconcile()  # the old leader stored the replace pending, then died
    clock.step(30)
    # the new leader lifted the cordon and, before its ledger looked, consolidated `a` again
    new = DecisionLog(clock)
    uncordoned(kube, "a")
    kube.delete(NODES, "a")
    new.record(command(["a"], 0.4, 0.0, T0 + 30))
    book = ledger(kube, new, clock)
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"], book.answer()["dropped"]) == (0, 1, 1)
    gone(kube, "a")
    clock.step(5)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["savingPerHour"], got["dropped"]) == (1, pytest.approx(0.4), 1)  # once: the delete
    assert sorted(stored(kube)) == [("a", "counted"), ("a", "dropped")]


def test_a_new_leader_settles_what_the_old_one_left_pending() -> None:
    clock, kube = FakeClock(T0), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    kube.put(NODES, node("r"))
    kube.put(NODES, node("b", cordoned=True))
    kube.put(NODES, node("s"))
    old = DecisionLog(clock)
    old.record(replace_command(["a"], ["r"], 0.4, 0.1, T0))
    old.record(replace_command(["b"], ["s"], 0.5, 0.2, T0 + 1))
    ledger(kube, old, clock).reconcile()
    kube.delete(NODES, "a")  # the old leader deleted `a` (its replacement ready), then was killed
    clock.step(20)
    book = ledger(kube, DecisionLog(clock), clock)  # the new leader: its decision log never saw either
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"]) == (0, 2)  # both still under way
    gone(kube, "a")  # termination finishes `a` on any leader
    uncordoned(kube, "b")  # the new leader's deprovisioning lifts the cordon of the command that died
    clock.step(5)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["pending"], got["dropped"], got["savingPerHour"]) == (1, 0, 1, pytest.approx(0.3))
    assert got["persisted"] is True and sorted(stored(kube)) == [("a", "counted"), ("b", "dropped")]
    standby = ledger(kube, DecisionLog(clock), clock)
    assert (standby.answer()["commands"], standby.answer()["savingPerHour"]) == (1, pytest.approx(0.3))


def test_a_command_stays_open_while_its_nodes_cannot_be_read() -> None:
    clock, kube = FakeClock(T0), FakeKube()
    kube.put(NODES, node("a", cordoned=True))
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.0, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    uncordoned(kube, "a")
    kube.fail_next["get"] = KubeError("etcdserver: request timed out", 504)
    clock.step(5)
    book.reconcile()
    assert book.answer()["pending"] == 1  # not dropped on a failed read
    clock.step(5)
    book.reconcile()
    assert book.answer()["dropped"] == 1


def test_entries_stored_before_commands_were_settled_count_as_they_did() -> None:
    clock, kube = FakeClock(T0 + 60), FakeKube()
    old = [{"time": T0, "action": "consolidation/delete", "nodes": ["a"], "before": 0.4, "after": 0.0}]
    kube.put(CONFIGMAPS, {"metadata": {"name": "karpy-savings", "namespace": "karpy"},
                          "data": {DATA_KEY: json.dumps(old)}})  # fmt: skip
    kube.put(NODES, node("a"))  # even a node of that name there now: the entry predates node checks
    book = ledger(kube, DecisionLog(clock), clock)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["savingPerHour"], got["persisted"]) == (1, pytest.approx(0.4), True)
    assert kube.get(CONFIGMAPS, "karpy-savings", "karpy")["metadata"]["resourceVersion"] == "1"  # nothing rewritten
    assert got["lastDay"] == pytest.approx(0.4 * 60 / 3600, abs=1e-4)  # from when it ran


# With the real executor (deprovisioning/controller.py) ------------------------------------------


def test_the_executors_replace_counts_once_its_candidate_is_gone() -> None:
    world = DeprovisioningWorld(validation_wait_seconds=0)
    new = replacing_big(world)
    (decision,) = world.decisions.recent()
    assert decision.extra["replacementNodes"] == [new]
    book = SavingsLedger(world.kube, world.decisions, world.clock, "karpy", "karpy-savings")
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"]) == (0, 1)
    world.kube.patch(NODES, new, {"metadata": {"labels": {INITIALIZED: "true"}}})
    world.reconcile(step=1)  # the replacement initialized: the executor deletes `big`
    assert world.deleting() == ["big"]
    book.reconcile()
    assert book.answer()["commands"] == 0
    world.kube.patch(NODES, "big", {"metadata": {"finalizers": None}})  # termination done
    world.reconcile(step=1)
    book.reconcile()
    got = book.answer()
    assert (got["commands"], got["pending"]) == (1, 0)
    assert got["savingPerHour"] == pytest.approx(decision.price_before - decision.price_after)  # type: ignore[operator]


def test_the_executors_command_abandoned_by_a_restart_is_dropped() -> None:
    world = DeprovisioningWorld(validation_wait_seconds=0)
    replacing_big(world)
    book = SavingsLedger(world.kube, world.decisions, world.clock, "karpy", "karpy-savings")
    book.reconcile()
    world.controller = restarted(world, validation_wait_seconds=60)  # the command died with the old process
    world.reconcile(step=1)
    book.reconcile()
    assert (book.answer()["commands"], book.answer()["pending"], book.answer()["dropped"]) == (0, 0, 1)
