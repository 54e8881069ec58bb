"""Pod documents → PodRequest (`controller/scheduling/pods.py`)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from controller.scheduling.pods import PodSpecError, pod_limits, pod_request, pod_requests, same_request
from controller.scheduling.types import ClaimRef


def pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", **meta}, "spec": spec}


def container(**resources: dict[str, str]) -> dict[str, Any]:
    return {"name": "c", "resources": resources}


def test_requests_are_karpenters_ceiling() -> None:
    spec = {
        "containers": [container(requests={"cpu": "250m", "memory": "1Gi"}), container(limits={"cpu": "500m"})],
        "initContainers": [container(requests={"cpu": "1", "memory": "512Mi"})],
    }
    # containers sum to 750m (a limit counts when no request is given); the init container needs 1
    assert pod_requests(spec) == {"cpu": 1000, "memory": 2**30, "pods": 1}


def test_node_affinity_terms_keep_their_order_and_weights() -> None:
    expr = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    spec = {
        "containers": [container()],
        "nodeSelector": {"kubernetes.io/arch": "arm64"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr]}, {"matchExpressions": []}]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchExpressions": [expr]}}
                ],
            }
        },
    }
    p = pod_request(pod(spec, namespace="shop", labels={"app": "web"}))
    assert p.key == "shop/p"
    assert p.node_selector == {"kubernetes.io/arch": "arm64"}
    assert len(p.required_terms) == 2 and p.required_terms[0][0].values == {"a"}
    assert p.preferred_terms[0][0] == 5
    assert p.ignore_reason == ""


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ({"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}, "restricted"),
        ({"key": "team", "operator": "Like", "values": ["a"]}, "unsupported operator"),
        ({"key": "team", "operator": "In", "values": []}, "must have a value"),
        ({"key": "karpenter.sh/provisioner-name", "operator": "DoesNotExist"}, "DoesNotExist requirement"),
    ],
)
def test_pods_karpenter_ignores_get_a_reason(expr: dict[str, Any], fragment: str) -> None:
    spec = {
        "containers": [container()],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
            }
        },
    }
    assert fragment in pod_request(pod(spec)).ignore_reason


def test_match_fields_are_not_supported() -> None:
    spec = {
        "containers": [container()],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                    ]
                }
            }
        },
    }
    assert "matchFields" in pod_request(pod(spec)).ignore_reason


def test_pod_affinity_spread_ports_and_owner() -> None:
    term = {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "db"}}}
    spec = {
        "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}]}],
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": term}]
            },
        },
        "topologySpreadConstraints": [
            {"topologyKey": "kubernetes.io/hostname", "maxSkew": 2, "labelSelector": {"matchLabels": {"a": "b"}},
             "minDomains": 3}
        ],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    }  # fmt: skip
    meta = {"namespace": "ns", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}]}
    p = pod_request({"metadata": {"name": "p", **meta}, "spec": spec, "status": {"phase": "Succeeded"}})
    assert p.pod_affinity[0].namespaces == frozenset({"ns"})
    assert p.pod_affinity[0].selector is not None and p.pod_affinity[0].selector.matches({"app": "db"})
    assert p.preferred_pod_anti_affinity[0].weight == 7
    spread = p.topology_spread[0]
    assert (spread.max_skew, spread.when_unsatisfiable, spread.min_domains) == (2, "DoNotSchedule", 3)
    assert p.host_ports[0].port == 8080 and p.host_ports[0].protocol == "UDP"
    assert p.owner_kind == "ReplicaSet"
    assert p.terminal
    assert p.tolerations[0].operator == "Exists"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"containers": [container(requests={"cpu": "a lot"})]}, "spec.containers[0].resources.requests.cpu"),
        ({"containers": "nope"}, "spec.containers"),
        ({"containers": [], "topologySpreadConstraints": [{"maxSkew": 1}]}, "topologyKey"),
        ({"containers": [], "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}},
         "topologyKey"),
    ],
)  # fmt: skip
def test_malformed_pods_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(PodSpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        pod_request(pod(spec))


def test_a_huge_bad_node_affinity_gives_a_bounded_ignore_reason() -> None:
    # issue 14, item 2: every pending pod's nodeAffinity is read under the state lock
    exprs = [{"key": "k" * 300 + "/!", "operator": "In", "values": ["!"] * 500} for _ in range(40)]
    terms = [{"matchExpressions": exprs}]
    spec = {
        "containers": [container(requests={"cpu": "1"})],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}},
    }
    request = pod_request(pod(spec))
    assert request.ignore_reason
    assert len(request.ignore_reason) < 8_000


def test_claims_of_the_pod_and_of_its_generic_ephemeral_volumes() -> None:
    pod = pod_request(
        {
            "metadata": {"name": "web-0", "namespace": "shop"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                    {"name": "again", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "config", "configMap": {"name": "cfg"}},
                ],
            },
        }
    )
    assert pod.claims == (ClaimRef("data-web-0"), ClaimRef("web-0-scratch", ephemeral=True))


def test_limits_summed_over_containers_at_least_an_init_containers() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m"}}},
            {"name": "c"},
        ],
        "initContainers": [{"name": "i", "resources": {"limits": {"memory": "3Gi"}}}],
    }
    assert pod_limits(spec) == {"cpu": 1500, "memory": 3 * 2**30, "pods": 1}  # requests are not limits


def test_a_malformed_limit_names_its_field() -> None:
    with pytest.raises(PodSpecError, match=r"spec.containers\[0\].resources.limits.cpu"):
        pod_limits({"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]})


def _fields(request: object) -> dict[str, object]:
    assert dataclasses.is_dataclass(request)
    return {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}


def _full_pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "a"},
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}],
            "annotations": {"note": "x"}, "resourceVersion": "1",
        },
        "spec": {"containers": [container(requests={"cpu": "250m"})], "nodeSelector": {"zone": "a"}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def test_same_request_when_only_what_pod_request_does_not_read_changed() -> None:
    before = _full_pod()
    after = copy.deepcopy(before)
    after["spec"] = before["spec"]  # cluster state keeps an unchanged spec as the one it held
    after["metadata"].update(resourceVersion="2", annotations={"note": "y"})
    after["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    assert same_request(before, after)
    assert _fields(pod_request(before)) == _fields(pod_request(after))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p.update(spec=copy.deepcopy(p["spec"])), id="an equal spec that is another object"),
        pytest.param(lambda p: p["metadata"].update(name="q"), id="name"),
        pytest.param(lambda p: p["metadata"].update(namespace="other"), id="namespace"),
        pytest.param(lambda p: p["metadata"].update(uid="u2"), id="uid"),
        pytest.param(lambda p: p["metadata"].update(labels={"app": "b"}), id="labels"),
        pytest.param(lambda p: p["metadata"].update(ownerReferences=[{"kind": "Job", "name": "j"}]), id="owner"),
        pytest.param(lambda p: p["metadata"].update(creationTimestamp="2024-01-02T00:00:00Z"), id="creation"),
        pytest.param(lambda p: p["status"].update(phase="Succeeded"), id="terminal"),
        pytest.param(lambda p: p.update(metadata=None), id="no metadata"),
    ],
)
def test_not_the_same_request_when_anything_pod_request_reads_may_differ(change: Any) -> None:
    before = _full_pod()
    after = copy.deepcopy(before)
    after["spec"] = before["spec"]
    change(after)
    assert not same_request(before, after)
