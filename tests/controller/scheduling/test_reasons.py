"""One actionable reason per unschedulable pod (`controller/scheduling/reasons.py`)."""

from __future__ import annotations

import pytest

from controller.core.labels import ARCH, HOSTNAME, INSTANCE_TYPE, PROVISIONER_NAME, ZONE
from controller.core.requirements import Requirement
from controller.core.taints import Taint
from controller.scheduling.reasons import amount, render_requirement
from tests.builders.scheduling import make_node, make_pod, make_provisioner, reason, req, run, term

GPU_TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")


def test_untolerated_taint() -> None:
    result = run([make_pod("p")], [make_provisioner("gpu", taints=[GPU_TAINT])])
    assert reason(result, "p") == "provisioner 'gpu' has taint nvidia.com/gpu=true:NoSchedule not tolerated"


def test_the_closest_provisioner_explains() -> None:
    provisioners = [
        make_provisioner("default", requirements=[req(ARCH, "In", "arm64")]),
        make_provisioner("gpu", taints=[GPU_TAINT]),
    ]
    result = run([make_pod("p", gpus=1), make_pod("q", gpus=64)], provisioners)
    # 'default' has no GPU type at all; the taint is what keeps the pod off 'gpu'
    assert reason(result, "p") == "provisioner 'gpu' has taint nvidia.com/gpu=true:NoSchedule not tolerated"
    assert reason(result, "q") == (
        "provisioner 'gpu' has taint nvidia.com/gpu=true:NoSchedule not tolerated, "
        "and no instance type in provisioner 'gpu' has 64 GPUs (the largest has 1 GPU)"
    )


def test_requirement_conflict_names_both_sides() -> None:
    provisioner = make_provisioner(requirements=[req(ARCH, "In", "amd64")])
    result = run([make_pod("p", node_selector={ARCH: "arm64"})], [provisioner])
    assert reason(result, "p") == (
        "pod requires kubernetes.io/arch in [arm64] but provisioner 'default' allows kubernetes.io/arch in [amd64]"
    )


def test_unknown_custom_label() -> None:
    result = run([make_pod("p", node_selector={"team": "a"})])
    assert reason(result, "p") == (
        "provisioner 'default' has no label or requirement \"team\" the pod asks for (team in [a])"
    )


def test_provisioner_selector_mismatch_is_one_clause() -> None:
    result = run([make_pod("p", node_selector={PROVISIONER_NAME: "c"})], [make_provisioner("a"), make_provisioner("b")])
    assert reason(result, "p") == "the pod selects karpenter.sh/provisioner-name in [c], not provisioners 'a', 'b'"


def test_too_many_gpus_and_too_much_cpu() -> None:
    result = run([make_pod("gpu", gpus=64), make_pod("cpu", cpu="100")])
    assert reason(result, "gpu") == "no instance type in provisioner 'default' has 64 GPUs (the largest has 1 GPU)"
    assert reason(result, "cpu") == "no instance type in provisioner 'default' has 100 CPU (the largest has 8 CPU)"


def test_daemonset_overhead_is_mentioned() -> None:
    daemon = make_pod("agent", cpu="1", owner_kind="DaemonSet")
    result = run([make_pod("p", cpu="7500m")], daemonsets=[daemon])
    assert reason(result, "p") == (
        "no instance type in provisioner 'default' has 8.5 CPU "
        "(the largest has 8 CPU, daemonset overhead of 1 CPU included)"
    )


@pytest.mark.parametrize(
    ("milli", "text"), [(191450, "191.45 CPU"), (8500, "8.5 CPU"), (64000, "64 CPU"), (1, "0.001 CPU"), (0, "0 CPU")]
)
def test_cpu_is_shown_in_cores(milli: int, text: str) -> None:
    """Issue 20, defect 8: "(the largest has 191450m cpu)"."""
    assert amount("cpu", milli) == text


def test_a_resource_no_type_offers() -> None:
    pod = make_pod("p", node_selector={ARCH: "arm64"}, gpus=1)
    assert reason(run([pod]), "p") == "no instance type in provisioner 'default' has 1 GPU (none has any)"


def test_no_type_matches_the_requirements() -> None:
    result = run([make_pod("p", node_selector={INSTANCE_TYPE: "z.huge"})])
    assert (
        reason(result, "p")
        == "no instance type in provisioner 'default' matches node.kubernetes.io/instance-type in [z.huge]"
    )


def test_no_offering_in_the_zone() -> None:
    result = run([make_pod("p", node_selector={ZONE: "test-zone-d"})])
    assert reason(result, "p") == (
        "no instance type in provisioner 'default' that matches has an available offering with "
        "topology.kubernetes.io/zone in [test-zone-d] and karpenter.sh/capacity-type exists"
    )


def test_limits() -> None:
    result = run([make_pod("p", cpu="1")], [make_provisioner(limits={"cpu": "1"})])
    assert reason(result, "p") == "provisioner 'default' limits would be exceeded (cpu: 1 of 1 left)"


def test_inverse_anti_affinity_names_the_pod() -> None:
    guard = make_pod("guard", node_name="n1", anti_affinity=[term(ZONE, {"app": "web"})])
    provisioner = make_provisioner(requirements=[req(ZONE, "In", "test-zone-a")])
    result = run([make_pod("w", labels={"app": "web"})], [provisioner], nodes=[make_node("n1", bound=[guard])])
    assert reason(result, "w") == (
        "pod anti-affinity of default/guard on zone: every allowed zone already has a pod it repels (matching app=web)"
    )


def test_hostname_affinity_to_a_missing_pod() -> None:
    result = run([make_pod("p", affinity=[term(HOSTNAME, {"app": "db"})])])
    assert reason(result, "p") == "pod affinity on hostname: no hostname allowed for the pod has a pod matching app=db"


def test_no_provisioners_and_ignored_pods() -> None:
    assert reason(run([make_pod("p")], []), "p") == "no provisioners found"
    ignored = make_pod("p", required=[[req(PROVISIONER_NAME, "DoesNotExist")]])
    assert reason(run([ignored]), "p").startswith("ignored: configured to not run on a Karpenter provisioned node")


def test_rendering_helpers() -> None:
    assert render_requirement(Requirement.new("k", "NotIn", ["b", "a"])) == "k not in [a, b]"
    assert render_requirement(Requirement.new("k", "Exists")) == "k exists"
    assert render_requirement(Requirement.new("k", "DoesNotExist")) == "k does not exist"
    assert render_requirement(Requirement.new("k", "Gt", ["2"])) == "k > 2"
    assert amount("memory", 2**30) == "1Gi memory"
    assert amount("nvidia.com/gpu", 2) == "2 GPUs"


def test_a_reason_is_also_values_readers_need_not_parse() -> None:
    result = run([make_pod("p", cpu="1")], [make_provisioner("small", limits={"cpu": "1"})])
    (clause,) = result.reasons["default/p"].clauses
    assert (clause.provisioners, clause.stages) == (("small",), ("limits",))
    assert result.reasons["default/p"].text == result.unschedulable["default/p"] == clause.text
    both = run([make_pod("q", gpus=64)], [make_provisioner("gpu", taints=[GPU_TAINT])]).reasons["default/q"]
    assert [(c.provisioners, c.stages) for c in both.clauses] == [(("gpu",), ("taints", "instance-types"))]
