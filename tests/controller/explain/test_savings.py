"""Savings: the dollars and hourly rate consolidation saved, kept in a ConfigMap across restarts."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from controller.clock import FakeClock
from controller.decisions import DEPROVISIONING_FAILED, Decision, DecisionLog
from controller.explain.savings import DATA_KEY, DAY, WEEK, Entry, SavingsLedger, summary
from controller.kube.client import Obj
from controller.kube.errors import KubeError
from controller.kube.resources import CONFIGMAPS, Kind
from tests.fakes.kube import FakeKube

T0 = 1_704_067_200.0


def command(nodes: list[str], before: float, after: float, at: float) -> Decision:
    return Decision("deprovisioning", "consolidation/delete", f"node/{nodes[0]}", "consolidation: delete",
                    price_before=before, price_after=after, time=at, extra={"nodes": nodes})  # fmt: skip


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
    assert summary([], now) == {"savingPerHour": 0, "lastDay": 0, "lastWeek": 0, "commands": 0, "since": "",
                                "recent": []}  # fmt: skip


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
    decisions = DecisionLog(clock)
    decisions.record(command(["a"], 0.4, 0.1, T0))
    book = ledger(kube, decisions, clock)
    book.reconcile()
    assert book.answer()["commands"] == 1
    decisions.record(Decision("deprovisioning", DEPROVISIONING_FAILED, "node/a", "never initialized",
                              price_before=0.4, price_after=0.1, time=T0 + 30, extra={"nodes": ["a"]}))  # fmt: skip
    book.reconcile()
    assert book.answer()["commands"] == 0
    assert json.loads(kube.get(CONFIGMAPS, "karpy-savings", "karpy")["data"][DATA_KEY]) == []


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
