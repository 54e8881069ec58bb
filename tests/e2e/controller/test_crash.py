"""End to end: killing the controller at random points loses no instance, no pod, no cordon (issue 5).

One test, 22 SIGKILLs of `karpy controller` (consolidation enabled, deprovisioning timings
shortened). Each of 21 random runs starts the controller, changes the workload, and kills it:
- `up`: scale the `crash` Deployment up; kill after a random 0.5–4 s (list/sync, launches,
  bindings);
- `halve`: halve it; kill after a random 0.5–4 s (scale-down, consolidation deletes);
- `consolidate`: shrink it to 2–3 pods, so what is left of a big node fits a smaller one; kill a
  random 0–1.2 s after the log says consolidation replaces a node (between cordon, launch,
  readiness, delete and drain), or after 5 s if it does not;
- `delete-node`: `kubectl delete node` a node; kill after a random 0.5–4 s (termination).
A `guarded` Deployment, on nodes of its own provisioner, sits behind a PDB with `minAvailable`
equal to its replica count; one run deletes its node, so every later run drains against the PDB.
The last run is scripted: a replace killed right after its cordon.

After the final restart: the cordon that kill left is lifted (the node is seen schedulable again);
no guarded pod was evicted (same pod UIDs, no `Evicted` event, a drain refused by the PDB, the
node still waiting); then, with the PDB gone: every pod Running, every instance with a Node and
every karpy Node with an instance, no node deleting, none cordoned, none marked.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from controller.core import labels as L
from controller.core.labels import BINDING_HOLD, DEPROVISIONING_CORDON
from controller.kube.resources import PDBS
from controller.provisioning.nodes import BINDING_HOLD_SECONDS
from tests.e2e.env import Controller, KarpyEnv
from tests.support.poll import settled, until, within

pytestmark = pytest.mark.e2e

RUNS = 21  # random runs; a scripted one follows
GUARDED_RUN = 17  # deletes the guarded node (late: its pods, rescheduled, keep nominating nodes)
GUARDED = 3
GUARDED_TAINT = {"key": "dedicated", "value": "guarded", "effect": "NoSchedule"}
FLAGS = (
    "--gc-leak-seconds", "5", "--gc-interval-seconds", "1",
    "--batch-idle-seconds", "0.5", "--batch-max-seconds", "5",
    "--deprovisioning-interval-seconds", "0.5", "--validation-wait-seconds", "1",
    "--poll-period-seconds", "1", "--consolidated-reset-seconds", "5",
    "--replacement-timeout-seconds", "60",
)  # fmt: skip
CONSOLIDATING = "deprovisioning via consolidation"
REPLACING = "deprovisioning via consolidation replace"
CORDONED = "controller.deprovisioning.controller: cordoned node"
# The actions, in turn; run GUARDED_RUN deletes the guarded node instead.
PLAN = ("up", "consolidate", "up", "delete-node", "halve", "consolidate")


def log_since(ctrl: Controller, offset: int) -> str:
    with open(ctrl.proc.log, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def log_size(ctrl: Controller) -> int:
    log = Path(ctrl.proc.log)
    return log.stat().st_size if log.exists() else 0


def logged(ctrl: Controller, offset: int, text: str, timeout: float) -> bool:
    """Whether the controller logs `text` (after `offset`) within `timeout` seconds."""
    return within(lambda: text in log_since(ctrl, offset), timeout, interval=0.1)


def live(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in nodes if not n["metadata"].get("deletionTimestamp")]


def cordoned(nodes: list[dict[str, Any]]) -> set[str]:
    """Live nodes that are unschedulable (a node being deleted stays cordoned by design)."""
    return {n["metadata"]["name"] for n in live(nodes) if n["spec"].get("unschedulable")}


def annotated(nodes: list[dict[str, Any]], key: str) -> set[str]:
    return {n["metadata"]["name"] for n in nodes if key in (n["metadata"].get("annotations") or {})}


def left_cordoned(nodes: list[dict[str, Any]]) -> set[str]:
    """Live nodes cordoned by something other than a binding hold (which lapses on its own)."""
    return cordoned(nodes) - annotated(nodes, BINDING_HOLD)


def crash_nodes(karpy: KarpyEnv) -> list[dict[str, Any]]:
    """The default provisioner's nodes (the crash pods'), live or not."""
    return [n for n in karpy.nodes() if n["metadata"]["labels"][L.PROVISIONER_NAME] == "default"]


def pod_nodes(pods: list[dict[str, Any]]) -> set[str]:
    return {p["spec"].get("nodeName", "") for p in pods}


def test_random_kills_during_scaling_consolidation_and_termination_leave_a_consistent_cluster(
    karpy: KarpyEnv,
) -> None:
    rng = random.Random(5)
    on_demand = {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}
    karpy.provisioner(
        consolidation={"enabled": True},
        requirements=[
            {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.xlarge", "m5.2xlarge"]},
            on_demand,
        ],
    )
    # The guarded pods get nodes of their own, so they neither absorb nor block the crash pods' consolidation.
    karpy.provisioner(
        "guarded",
        consolidation={"enabled": True},
        taints=[GUARDED_TAINT],
        requirements=[{"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}, on_demand],
    )
    karpy.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guarded", "namespace": karpy.namespace},
            "spec": {"minAvailable": GUARDED, "selector": {"matchLabels": {"app": "guarded"}}},
        }
    )
    setup = karpy.start("replica-a", *FLAGS)
    karpy.deployment(
        "guarded", GUARDED, cpu="250m", memory="128Mi",
        tolerations=[{**GUARDED_TAINT, "operator": "Equal"}], nodeSelector={L.PROVISIONER_NAME: "guarded"},
    )  # fmt: skip
    until(lambda: len(karpy.running("guarded")) == GUARDED, 30, "the guarded pods Running")
    karpy.kill(setup)
    guarded = {p["metadata"]["uid"] for p in karpy.pods("guarded")}
    (guarded_node,) = pod_nodes(karpy.pods("guarded"))
    karpy.deployment("crash", 0, cpu="500m", memory="256Mi")

    replicas, consolidating_kills, replace_kills, cordons_left = 0, 0, 0, 0
    for run in range(RUNS):
        offset = log_size(setup)
        ctrl = karpy.start("replica-a", *FLAGS, wait_ready=False)
        nodes = live(karpy.nodes())
        action = "delete-guarded-node" if run == GUARDED_RUN else PLAN[run % len(PLAN)]
        if action == "delete-guarded-node":
            karpy.cluster.kubectl("delete", "node", guarded_node, "--wait=false")
        elif action == "delete-node":
            victims = [n["metadata"]["name"] for n in nodes if n["metadata"]["name"] != guarded_node]
            if victims:
                karpy.cluster.kubectl("delete", "node", rng.choice(victims), "--wait=false")
        elif action == "halve":
            replicas = max(2, replicas // 2)
            karpy.scale("crash", replicas)
        elif action == "consolidate":
            replicas = rng.randint(2, 3)  # what is left of a big node fits a smaller one: a replace
            karpy.scale("crash", replicas)
        else:
            replicas = min(40, replicas + rng.randint(8, 16))
            karpy.scale("crash", replicas)
        if action != "consolidate":
            time.sleep(rng.uniform(0.5, 4.0))  # chaos: the kill lands at a random moment (not a wait on state)
        elif logged(ctrl, offset, REPLACING, 20):  # a fresh controller: sync, a pass, its validation
            time.sleep(rng.uniform(0.0, 1.2))  # cordon, launch, readiness, delete, drain: about 1 s
        karpy.kill(ctrl)
        output = log_since(ctrl, offset)
        consolidating_kills += CONSOLIDATING in output
        replace_kills += REPLACING in output
        left = left_cordoned(karpy.nodes())
        cordons_left += bool(left)
        print(f"run {run}: {action}, replicas={replicas}, nodes={len(nodes)}, consolidated={CONSOLIDATING in output}, "
              f"replaced={REPLACING in output}, left cordoned={sorted(left)}")  # fmt: skip
    assert consolidating_kills >= 3, f"only {consolidating_kills} run(s) were killed while consolidating"

    # The last run, scripted: the crash pods start over on one new big node, shrink to a few, and
    # the replace that follows is killed right after its cordon.
    offset = log_size(setup)
    ctrl = karpy.start("replica-a", *FLAGS)
    karpy.scale("crash", 0)
    # a node the last random run launched just before its kill is still held for binding: the new
    # leader releases it BINDING_HOLD_SECONDS after its creation, and consolidation waits until then
    until(lambda: not crash_nodes(karpy), BINDING_HOLD_SECONDS + 30, "the crash pods' nodes consolidated away")
    replicas = 12
    karpy.scale("crash", replicas)
    until(lambda: len(karpy.running("crash")) == replicas, 30, f"{replicas} crash pods Running")
    replicas = 2
    karpy.scale("crash", replicas)
    assert logged(ctrl, offset, CORDONED, 30), "no replace started after shrinking to 2 pods"
    karpy.kill(ctrl)
    replace_kills += 1
    left = left_cordoned(karpy.nodes())
    assert left, "the kill left no cordoned node"
    print(f"run {RUNS}: scripted replace, killed after its cordon, left cordoned={sorted(left)}")

    started = time.monotonic()
    karpy.start("replica-a", *FLAGS)

    # Each cordon the last kill left is lifted: the node is seen schedulable again, not merely
    # replaced or deleted (consolidation may well re-cordon it later, legitimately).
    def still_cordoned() -> str:
        nodes = karpy.nodes()
        left.difference_update(n["metadata"]["name"] for n in live(nodes) if not n["spec"].get("unschedulable"))
        return f"still cordoned or gone without being uncordoned: {sorted(left)}" if left else ""

    settled(still_cordoned, 10, "the cordons left by the last kill to be lifted", interval=0.1)

    # The PDB held throughout: the guarded pods were never evicted, their node still waits.
    until(lambda: len(karpy.running("crash")) == replicas, 60, f"all {replicas} crash pods Running")
    assert {p["metadata"]["uid"] for p in karpy.running("guarded")} == guarded, "a guarded pod was replaced"
    assert not [e for e in karpy.events("Evicted") if e["involvedObject"]["name"].startswith("guarded-")]
    assert [e for e in karpy.events("FailedDraining") if "PDB" in e["message"]], "no drain was refused by the PDB"
    assert guarded_node in {n["metadata"]["name"] for n in karpy.nodes() if n["metadata"].get("deletionTimestamp")}

    # Without the PDB the guarded node drains; then everything settles.
    karpy.kube.delete(PDBS, "guarded", karpy.namespace)

    def unsettled() -> str:
        nodes = karpy.nodes()
        problems = [karpy.consistent()]
        running = (len(karpy.running("crash")), len(karpy.running("guarded")))
        if running != (replicas, GUARDED):
            problems.append(f"Running crash/guarded pods: {running}, want {(replicas, GUARDED)}")
        deleting = {n["metadata"]["name"] for n in nodes} - {n["metadata"]["name"] for n in live(nodes)}
        if deleting:
            problems.append(f"nodes deleting: {sorted(deleting)}")
        if cordoned(nodes) or annotated(nodes, DEPROVISIONING_CORDON):
            problems.append(
                f"cordoned: {sorted(cordoned(nodes))}, marked: {sorted(annotated(nodes, DEPROVISIONING_CORDON))}"
            )
        return "; ".join(p for p in problems if p)

    settled(unsettled, 60, "a settled cluster (every pod Running, nothing cordoned or deleting)", interval=0.5)
    print(
        f"{RUNS + 1} kills, {consolidating_kills} while consolidating ({replace_kills} replacing), "
        f"{cordons_left} left a cordon; "
        f"settled {time.monotonic() - started:.1f}s after the last restart"
    )
