"""End to end: what consolidation saved survives a controller restart and a leader change (issue 22).

A Deployment scaled down lets consolidation remove capacity; the leader records the command's
prices in its ConfigMap (its answer says `persisted` once the ConfigMap holds them). Once the
command is carried out, the leader is killed (SIGKILL) and a second replica, whose decision log
never saw that command, takes the Lease over: its `/api/v1/savings` reports the same commands and
hourly saving, read back from the ConfigMap.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from controller.kube.errors import KubeError
from controller.kube.resources import CONFIGMAPS
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
