"""bench/sweep_e2e.py's parts: a pass read from the controller's /metrics, the commands from its
log, the Provisioner it builds the fleet with (the cluster and the controller are the bench's run)."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import REGISTRY, generate_latest

from bench.karpenter_e2e import REQUIREMENTS
from bench.sweep_e2e import build_provisioner, commands, ended_by, pass_sample
from controller.core import labels as L
from controller.deprovisioning import metrics as M


def test_a_pass_is_read_from_the_metrics_the_controller_exposes() -> None:
    before = pass_sample(generate_latest(REGISTRY).decode())
    M.EVALUATION_DURATION.labels(method="multinodeconsolidation").observe(3.0)
    M.PASS_SECONDS.set(3.25)
    M.PASS_CPU_SECONDS.set(1.5)
    M.PASS_COMPLETE.set(0)
    M.CANDIDATES_COVERED.labels(method="multinodeconsolidation").set(751)
    M.ELIGIBLE_MACHINES.labels(deprovisioner="consolidation").set(1000)
    M.ACTIONS_PERFORMED.labels(action="delete", deprovisioner="consolidation").inc()
    after = pass_sample(generate_latest(REGISTRY).decode())
    assert after.passes == before.passes + 1 and ended_by(before, after) == "multinodeconsolidation"
    assert ended_by(after, after) == ""
    assert (after.seconds, after.cpu_seconds, after.complete) == (3.25, 1.5, False)
    assert after.covered["multinodeconsolidation"] == 751 and after.eligible == 1000
    assert after.actions == before.actions + 1
    M.PASS_COMPLETE.set(1)
    assert pass_sample(generate_latest(REGISTRY).decode()).complete


def test_nothing_exposed_reads_as_no_pass() -> None:
    empty = pass_sample("")
    assert (empty.passes, empty.seconds, empty.complete, empty.covered, empty.eligible, empty.actions) == (
        0,
        0.0,
        False,
        {},
        0,
        0,
    )


def test_the_commands_are_read_from_the_controllers_log() -> None:
    prefix = "2026-11-26 11:20:01,123 INFO controller.deprovisioning.controller: "
    lines = [
        prefix + "deprovisioning via consolidation delete, terminating 3 machines a/s-16x/on-demand, b/s-16x/on-demand,"
        " c/s-16x/on-demand",
        prefix + "consolidation waits: scale-up under way",
        prefix + "deprovisioning via consolidation replace, terminating 2 machines a/s-16x/on-demand, b/s-16x/on-demand"
        " and replacing with on-demand machine from types c-16x-amd64-linux, s-16x-amd64-linux",
    ]
    assert commands(lines) == ["consolidation delete, 3 machines", "consolidation replace, 2 machines + 1 new"]


def test_the_fleet_is_built_of_one_type_without_consolidation_then_every_type_with_it() -> None:
    base: list[dict[str, Any]] = json.loads(json.dumps(REQUIREMENTS))
    built = build_provisioner("s-16x-amd64-linux", consolidation=False)
    reqs = built["spec"]["requirements"]
    assert [r for r in reqs if r["key"] == L.INSTANCE_TYPE] == [
        {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["s-16x-amd64-linux"]}
    ]
    assert [r for r in reqs if r["key"] != L.INSTANCE_TYPE] == [r for r in base if r["key"] != L.INSTANCE_TYPE]
    assert built["spec"]["consolidation"] == {"enabled": False}
    widened = build_provisioner(None, consolidation=True)
    assert widened["spec"]["requirements"] == REQUIREMENTS and widened["spec"]["consolidation"] == {"enabled": True}
