"""End to end: drift on the real local control plane, simulated cloud (spec §6.5; issue 18 §2).

One controller (`--drift-enabled`) and two Provisioners: `web` (AWSNodeTemplate `nodes`, one
pod per m5.large node, two nodes) and `other` (one node). In turn, and each time exactly the
affected nodes are replaced, one at a time, replacement first, and no pod needs capacity that
was not launched as a replacement:

1. `web`'s weight and limits change: nothing drifts;
2. the template's AMI changes while a PDB allows no disruption: the web nodes are annotated
   `drifted` and shown so by the controller's node outlook, blocked, and nothing moves; the PDB
   goes, and both are replaced by nodes on the new AMI;
3. a label is added to `web`: its nodes drift (`ProvisionerDrifted`); the controller is killed
   once the first replacement is launched and a new one finishes the job;
4. a kubelet field of `other` changes: only its node is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controller.core import labels as L
from controller.kube.resources import AWSNODETEMPLATES, PDBS
from tests.e2e.env import FAST, Controller, KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e

TYPES = {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}
START = ("replica-a", *FAST, "--drift-enabled")


def template(ami: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "nodes"},
        "spec": {"subnetSelector": {"karpy-test": "*"}, "securityGroupSelector": {"karpy-test": "*"},
                 "amiSelector": {"aws-ids": ami}},
    }  # fmt: skip


def web_spec(**extra: Any) -> dict[str, Any]:
    return {"requirements": [TYPES], "labels": {"team": "web"}, "providerRef": {"name": "nodes"}, **extra}


def other_spec(**extra: Any) -> dict[str, Any]:
    return {"requirements": [TYPES], "labels": {"team": "other"}, **extra}


def of(karpy: KarpyEnv, team: str) -> dict[str, dict[str, Any]]:
    """The live nodes of a Provisioner, by name."""
    return {n["metadata"]["name"]: n for n in karpy.nodes() if n["metadata"]["labels"].get("team") == team}


def drifted(node: dict[str, Any]) -> bool:
    return bool(node["metadata"].get("annotations", {}).get(L.VOLUNTARY_DISRUPTION) == "drifted")


def disrupted(node: dict[str, Any]) -> bool:
    return bool(node["metadata"].get("deletionTimestamp") or node["spec"].get("unschedulable"))


def settled(karpy: KarpyEnv) -> bool:
    pods = karpy.pods()
    return (
        len(pods) == 3
        and all(p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                for p in pods)
        and not any(disrupted(n) for n in karpy.nodes())
        and karpy.consistent() == ""
    )  # fmt: skip


class Watch:
    """Polls until the `old` nodes of `team` are all gone and the cluster settled, recording
    what it saw: how many old nodes were disrupted at once, and whether each old node that
    started deleting had its replacement (a new, initialized node of the team) up already."""

    def __init__(self, karpy: KarpyEnv, team: str, old: set[str]) -> None:
        self.karpy, self.team, self.old = karpy, team, old
        self.launched_before = {i.provider_id for i in karpy.cloud.list()}
        self.most_disrupted = 0
        self.seen_deleting: set[str] = set()
        self.deleting_without_replacement: list[str] = []

    def done(self) -> bool:
        nodes = of(self.karpy, self.team)
        moving = [name for name in self.old if name in nodes and disrupted(nodes[name])]
        self.most_disrupted = max(self.most_disrupted, len(moving))
        fresh = [n for name, n in nodes.items() if name not in self.old and L.INITIALIZED in n["metadata"]["labels"]]
        for name in moving:
            if nodes[name]["metadata"].get("deletionTimestamp") and name not in self.seen_deleting:
                self.seen_deleting.add(name)
                if len(fresh) < len(self.seen_deleting):
                    self.deleting_without_replacement.append(name)
        return not (self.old & set(nodes)) and settled(self.karpy)

    def launched(self) -> list[str]:
        return [i.name for i in self.karpy.cloud.list() if i.provider_id not in self.launched_before]


def replaced_one_at_a_time(
    karpy: KarpyEnv, team: str, old: set[str], during: Callable[[Watch], None] | None = None
) -> Watch:
    watch = Watch(karpy, team, old)
    if during is not None:
        during(watch)
    until(watch.done, 90, f"nodes {sorted(old)} replaced", interval=0.1)
    assert watch.most_disrupted == 1, "more than one drifted node was disrupted at a time"
    assert watch.deleting_without_replacement == []
    assert len(watch.launched()) == len(old), "capacity beyond the replacements was launched"
    return watch


def test_drift_replaces_exactly_the_affected_nodes_one_at_a_time(karpy: KarpyEnv) -> None:
    karpy.apply(template("ami-0aaa"))
    karpy.provisioner("web", **web_spec())
    karpy.provisioner("other", **other_spec())
    ctrl = karpy.start(*START)
    karpy.deployment("web", 2, cpu="1500m", memory="1Gi", nodeSelector={"team": "web"})
    karpy.deployment("other", 1, cpu="1500m", memory="1Gi", nodeSelector={"team": "other"})
    try:
        run(karpy, ctrl)
    finally:
        karpy.kube.delete(AWSNODETEMPLATES, "nodes")


def run(karpy: KarpyEnv, ctrl: Controller) -> None:
    until(lambda: settled(karpy) and len(of(karpy, "web")) == 2, 40, "3 pods Running on 3 nodes")
    web, other = of(karpy, "web"), of(karpy, "other")
    for node in web.values():
        annotations = node["metadata"]["annotations"]
        assert {L.PROVISIONER_HASH, L.NODE_TEMPLATE_HASH} <= set(annotations)
        assert node["metadata"]["labels"][L.INSTANCE_AMI_ID] == "ami-0aaa"
    (other_name,) = other
    assert L.NODE_TEMPLATE_HASH not in other[other_name]["metadata"]["annotations"]  # no template

    # 1. fields that shape no node: nothing drifts (many passes at 0.5 s)
    karpy.provisioner("web", **web_spec(weight=50, limits={"resources": {"cpu": "100"}}))
    karpy.passes("deprovisioning", 8)
    assert not any(drifted(n) or disrupted(n) for n in karpy.nodes()), "a node drifted by weight or limits"

    # 2. the AMI, while a PDB allows no disruption
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "web", "namespace": karpy.namespace},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}}  # fmt: skip
    karpy.apply(pdb)
    karpy.apply(template("ami-0bbb"))
    until(lambda: all(drifted(n) for n in of(karpy, "web").values()), 20, "web nodes annotated drifted")
    first = sorted(web)[0]

    def blocked_outlook() -> dict[str, Any] | None:
        found: dict[str, Any] = ctrl.get("/api/v1/nodes")["nodes"][first].get("outlook") or {}
        return found if found.get("verdict") == "blocked" else None

    outlook = until(blocked_outlook, 20, "the node's outlook: drifted but blocked")
    assert outlook["drift"]["reason"] == "AMIDrift"
    assert outlook["reason"].startswith("drifted: AMI ami-0aaa is no longer selected by AWSNodeTemplate nodes")
    assert "prevents pod evictions" in outlook["reason"]
    until(lambda: [e for e in karpy.events("DeprovisioningBlocked") if "pdb" in e["message"]], 20, "blocked")
    assert set(of(karpy, "web")) == set(web) and not any(disrupted(n) for n in karpy.nodes())
    assert not drifted(of(karpy, "other")[other_name])
    karpy.kube.delete(PDBS, "web", karpy.namespace)
    replaced_one_at_a_time(karpy, "web", set(web))
    web = of(karpy, "web")
    assert {n["metadata"]["labels"][L.INSTANCE_AMI_ID] for n in web.values()} == {"ami-0bbb"}
    assert not any(drifted(n) for n in karpy.nodes()) and set(of(karpy, "other")) == {other_name}
    decisions = ctrl.get("/api/v1/decisions")
    replace = [d for d in decisions if d["action"] == "drift/replace"]
    assert len(replace) == 2 and all("no longer selected by AWSNodeTemplate nodes" in d["reason"] for d in replace)

    # 3. a Provisioner label; the controller is killed mid-drift, a new one finishes the job
    karpy.provisioner("web", **web_spec(weight=50, labels={"team": "web", "tier": "gold"}))

    def restart_mid_drift(watch: Watch) -> None:
        until(lambda: watch.launched(), 30, "the first replacement launched")
        karpy.kill(ctrl)
        karpy.start("replica-b", *FAST, "--drift-enabled")

    replaced_one_at_a_time(karpy, "web", set(web), restart_mid_drift)
    assert {n["metadata"]["labels"].get("tier") for n in of(karpy, "web").values()} == {"gold"}
    assert set(of(karpy, "other")) == {other_name}

    # 4. a kubelet field of the other Provisioner: only its node
    web = of(karpy, "web")
    karpy.provisioner("other", **other_spec(kubeletConfiguration={"maxPods": 50}))
    replaced_one_at_a_time(karpy, "other", {other_name})
    assert set(of(karpy, "web")) == set(web)
    assert [n["status"]["capacity"]["pods"] for n in of(karpy, "other").values()] == ["50"]
