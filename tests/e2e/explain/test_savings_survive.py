"""End to end: what consolidation saved survives a controller restart and a leader change (issue 22).

A Deployment scaled down lets consolidation remove capacity; the leader records the command's
prices in its ConfigMap (its answer says `persisted` once the ConfigMap holds them). Once the
command is carried out, the leader is killed (SIGKILL) and a second replica, whose decision log
never saw that command, takes the Lease over: its `/api/v1/savings` reports the same commands and
hourly saving, read back from the ConfigMap.

A replace killed mid-way: its replacement never initializes (a startup taint nobody lifts), so
the leader stores the command pending; it is killed, the next leader lifts the cordon of the
command that died and its ledger drops the entry — and once the test lets nodes initialize and
the new leader removes that node for good, its saving is counted once.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from controller.core import labels as L
from controller.kube.errors import KubeError
from controller.kube.resources import CONFIGMAPS, NODES
from tests.e2e.env import FAST, Controller, KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e


def _savings(ctrl: Controller) -> Any:
    try:
        return ctrl.get("/api/v1/savings")
    except OSError:
        return {}


def test_savings_survive_a_restart_and_a_leader_change(karpy: KarpyEnv) -> None:
    configmap = f"savings-{karpy.namespace}"
    flags = (*FAST, "--savings-configmap", configmap)
    try:
        karpy.provisioner("default", consolidation={"enabled": True})
        first = karpy.start("replica-a", *flags)
        karpy.deployment("web", 6, cpu="1", memory="1Gi")
        until(lambda: len(karpy.running("web")) == 6, 60, "6 pods Running")
        karpy.scale("web", 1)
        # `persisted` once the ConfigMap holds every command counted (the answer counts a command
        # from the decision log before its pass's write lands)
        saved = until(lambda: (s := _savings(first)).get("commands") and s["persisted"] and s, 120, "a command stored")
        assert saved["savingPerHour"] > 0
        stored = karpy.kube.get(CONFIGMAPS, configmap, "kube-system")
        assert len(json.loads(stored["data"]["savings.json"])) >= saved["commands"]
        # the command carried out to its end (a replace's old node gone), so the next leader has
        # none of it to finish or undo and makes no deprovisioning decision of its own
        removed = [n for e in saved["recent"] for n in e["nodes"]]
        until(lambda: all(karpy.node_gone(n) for n in removed), 60, f"nodes {removed} gone")

        karpy.kill(first)
        second = karpy.start("replica-b", *flags)  # waits until it leads and is synced
        assert second.get("/api/v1/decisions") == [] or all(
            d["controller"] != "deprovisioning" for d in second.get("/api/v1/decisions")
        )  # its own log never saw the command
        again = until(lambda: (s := _savings(second)).get("commands") and s, 30, "savings read back")
        before = {(e["time"], tuple(e["nodes"])) for e in saved["recent"]}
        assert before <= {(e["time"], tuple(e["nodes"])) for e in again["recent"]}
        assert again["savingPerHour"] >= saved["savingPerHour"] - 1e-9
        assert again["lastDay"] >= 0 and again["since"] == saved["since"]
    finally:
        with contextlib.suppress(KubeError):
            karpy.kube.delete(CONFIGMAPS, configmap, "kube-system")


STARTUP = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}


def _stored(karpy: KarpyEnv, configmap: str) -> list[dict[str, Any]]:
    try:
        data = karpy.kube.get(CONFIGMAPS, configmap, "kube-system").get("data") or {}
    except KubeError:
        return []
    return list(json.loads(data.get("savings.json") or "[]"))


def _boot(karpy: KarpyEnv) -> list[str]:
    """Lift the startup taint of every node that still has it (what a node agent would do), so
    it initializes; the nodes that had it. A conflict is retried on the next call."""
    booted = []
    for node in karpy.nodes():
        taints = node["spec"].get("taints") or []
        kept = [t for t in taints if t["key"] != STARTUP["key"]]
        if len(kept) == len(taints):
            continue
        meta = node["metadata"]
        with contextlib.suppress(KubeError):
            karpy.kube.patch(NODES, meta["name"], {"metadata": {"resourceVersion": meta["resourceVersion"]},
                                                   "spec": {"taints": kept or None}})  # fmt: skip
        booted.append(meta["name"])
    return booted


def test_a_replace_killed_mid_way_is_dropped_and_its_node_saved_once(karpy: KarpyEnv) -> None:
    configmap = f"savings-{karpy.namespace}"
    flags = (*FAST, "--savings-configmap", configmap)
    try:
        karpy.provisioner(
            "default",
            consolidation={"enabled": True},
            startupTaints=[STARTUP],
            requirements=[
                {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.2xlarge"]},
                {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
            ],
        )
        first = karpy.start("replica-a", *flags)
        tolerate = [{"key": STARTUP["key"], "operator": "Exists"}]
        karpy.deployment("web", 6, cpu="1", memory="1Gi", tolerations=tolerate)
        until(lambda: len(karpy.running("web")) == 6 and not _boot(karpy), 60, "6 pods Running on initialized nodes")
        karpy.scale("web", 1)  # the pod left fits a smaller node: a replace, whose replacement never initializes

        def open_replace() -> dict[str, Any] | None:
            opened = ("pending", "ready")
            return next((e for e in _stored(karpy, configmap) if e["action"].endswith("/replace")
                         and e["status"] in opened), None)  # fmt: skip

        entry = until(open_replace, 60, "a replace stored pending")
        key = (entry["time"], entry["nodes"])
        answer = _savings(first)
        assert answer["pending"] >= 1 and all(e["nodes"] != entry["nodes"] for e in answer["recent"])
        assert not any(karpy.node_gone(n) for n in entry["nodes"])  # mid-way: its candidates are still there

        karpy.kill(first)
        second = karpy.start("replica-b", *flags)

        # the new leader lifts the cordon of the command that died; its ledger settles the entry
        # it finds pending in the ConfigMap from the cluster: dropped, never counted
        def status() -> str | None:
            return next((e["status"] for e in _stored(karpy, configmap) if (e["time"], e["nodes"]) == key), None)

        until(lambda: status() == "dropped", 60, f"the replace of {entry['nodes']} dropped")

        # nodes initialize from now on: whatever the new leader does with those nodes, each one
        # removed is saved once
        def done() -> Any:
            _boot(karpy)
            s = _savings(second)
            gone = all(karpy.node_gone(n) for n in entry["nodes"])
            removed = {n for e in s.get("recent", ()) for n in e["nodes"]} >= set(entry["nodes"])
            return gone and removed and s["pending"] == 0 and s["persisted"] and s

        final = until(done, 180, f"nodes {entry['nodes']} removed by the new leader and counted")
        stored = _stored(karpy, configmap)
        print("stored:", [(e["action"], e["nodes"], e["replacements"], e["status"]) for e in stored])
        for name in entry["nodes"]:
            counted = [e for e in stored if name in e["nodes"] and e["status"] == "counted"]
            assert len(counted) == 1, f"{name} counted {len(counted)} times: {stored}"
        assert status() == "dropped"
        assert final["savingPerHour"] == pytest.approx(sum(e["before"] - e["after"] for e in stored
                                                           if e["status"] == "counted"), abs=1e-6)  # fmt: skip
    finally:
        with contextlib.suppress(KubeError):
            karpy.kube.delete(CONFIGMAPS, configmap, "kube-system")
