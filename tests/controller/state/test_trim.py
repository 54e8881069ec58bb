"""What cluster state keeps of an object: only the fields karpy reads (issue 21)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from controller.kube.resources import NODES, PODS, PROVISIONERS
from controller.state.trim import LAST_APPLIED, Kept, kept
from controller.state.views import node_view, pod_view
from tests.builders.wire import make_node, make_pod, make_provisioner


def heavy_pod() -> dict[str, Any]:
    pod = make_pod(
        "p", cpu="250m", annotations={LAST_APPLIED: "{" + "x" * 4000 + "}", "karpenter.sh/do-not-evict": "true"},
        nodeSelector={"team": "a"}, tolerations=[{"key": "k", "operator": "Exists"}],
        initContainers=[{"name": "init", "image": "busybox", "restartPolicy": "Always", "command": ["sh"],
                         "resources": {"requests": {"cpu": "100m"}}}],
    )  # fmt: skip
    container = pod["spec"]["containers"][0]
    container.update(env=[{"name": f"V{i}", "value": "v" * 100} for i in range(50)], command=["run"],
                     livenessProbe={"httpGet": {"path": "/"}}, volumeMounts=[{"name": "v", "mountPath": "/v"}],
                     ports=[{"containerPort": 80, "hostPort": 8080}])  # fmt: skip
    pod["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
    pod["status"]["containerStatuses"] = [{"name": "c", "image": "x", "state": {"running": {}}}]
    return pod


def fields_of(obj: object) -> dict[str, object]:
    assert dataclasses.is_dataclass(obj)
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def test_a_pod_keeps_what_its_view_reads_and_loses_the_rest() -> None:
    pod = heavy_pod()
    original = copy.deepcopy(pod)
    small = kept(PODS.name, pod)
    assert pod == original  # the object as sent is not changed
    assert fields_of(pod_view(small).request) == fields_of(pod_view(pod).request)  # the scheduler's view
    assert pod_view(small).annotations == {"karpenter.sh/do-not-evict": "true"}
    (container,) = small["spec"]["containers"]
    assert set(container) == {"name", "resources", "ports"}
    assert small["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    assert "managedFields" not in small["metadata"] and "containerStatuses" not in small["status"]
    assert small["status"]["conditions"] == pod["status"]["conditions"]
    assert len(json.dumps(small)) * 5 < len(json.dumps(pod))


def test_an_object_kept_already_is_kept_as_it_is() -> None:
    small = kept(PODS.name, heavy_pod())
    assert isinstance(small, Kept) and kept(PODS.name, small) is small


def test_a_pod_keeps_only_the_volumes_that_name_a_claim() -> None:
    claim = {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}
    scratch = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    token = {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    pod = make_pod("p", volumes=[token, claim, {"name": "tmp", "emptyDir": {}}, scratch])
    small = kept(PODS.name, pod)
    assert small["spec"]["volumes"] == [claim, scratch]
    assert fields_of(pod_view(small).request) == fields_of(pod_view(pod).request)


def test_what_is_kept_shares_its_keys_and_short_strings_across_objects() -> None:
    a, b = (kept(PODS.name, json.loads(json.dumps(make_pod(name)))) for name in ("a", "b"))
    key_a = next(k for k in a["metadata"] if k == "namespace")
    key_b = next(k for k in b["metadata"] if k == "namespace")
    assert key_a is key_b and a["status"]["phase"] is b["status"]["phase"]
    long_a, long_b = ("x" * 100 + "a", "x" * 100 + "a")
    pods = [kept(PODS.name, make_pod(n, annotations={"note": v})) for n, v in (("a", long_a), ("b", long_b))]
    assert pods[0]["metadata"]["annotations"]["note"] == pods[1]["metadata"]["annotations"]["note"]


def test_an_object_nested_deeper_than_compaction_goes_is_kept_whole() -> None:
    deep: dict[str, Any] = {"leaf": "v"}
    for _ in range(5000):
        deep = {"d": deep}
    provisioner = make_provisioner("default")
    provisioner["spec"]["x-deep"] = deep
    small = kept(PROVISIONERS.name, provisioner)
    node = small["spec"]["x-deep"]
    while "d" in node:
        node = node["d"]
    assert node == {"leaf": "v"}


def test_a_node_loses_its_image_list_only() -> None:
    node = make_node("n1", cpu="4")
    node["status"]["images"] = [{"names": [f"registry/image{i}:v1"], "sizeBytes": 1} for i in range(50)]
    small = kept(NODES.name, node)
    assert "images" not in small["status"] and "images" in node["status"]
    assert {k: v for k, v in small["status"].items()} == {k: v for k, v in node["status"].items() if k != "images"}
    assert fields_of(node_view(small).state_node()) == fields_of(node_view(node).state_node())


def test_other_kinds_are_kept_as_sent() -> None:
    provisioner = make_provisioner("default", labels={"team": "a"})
    assert kept(PROVISIONERS.name, provisioner) == provisioner


def test_a_section_unchanged_since_the_object_kept_before_is_that_section() -> None:
    before = kept(PODS.name, heavy_pod())
    update = heavy_pod()
    update["metadata"]["resourceVersion"] = "2"
    update["status"]["phase"] = "Running"
    after = kept(PODS.name, update, before)
    assert isinstance(after, Kept) and after == kept(PODS.name, update)  # what is kept does not depend on it
    assert after["spec"] is before["spec"]  # unchanged: shared, not compacted again
    assert after["metadata"] is not before["metadata"] and after["status"]["phase"] == "Running"
    assert after["metadata"]["labels"] is before["metadata"]["labels"]  # and so one level down
    update["spec"]["nodeName"] = "n1"
    bound = kept(PODS.name, update, after)
    assert bound["spec"] is not before["spec"] and bound["spec"]["nodeName"] == "n1"
    assert before["spec"].get("nodeName") is None  # the one kept before is not changed


def test_a_custom_resource_shares_nothing_with_the_object_kept_before() -> None:
    """A free-form field of a custom resource may change from 1 to true, which Python finds equal."""
    before = kept(PROVISIONERS.name, make_provisioner("default", provider={"flag": 1}))
    changed = make_provisioner("default", provider={"flag": True})
    after = kept(PROVISIONERS.name, changed, before)
    assert after["spec"] is not before["spec"] and after["spec"]["provider"]["flag"] is True


def _nested(depth: int) -> dict[str, Any]:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(depth):
        inner["x"] = {}
        inner = inner["x"]
    return deep


def test_a_part_nested_too_deep_to_compare_is_kept_anew() -> None:
    pod = make_pod("p")
    before = kept(PODS.name, {**pod, "spec": {**pod["spec"], "deep": _nested(5000)}})
    spec = {**pod["spec"], "deep": _nested(5000)}  # equal to the one kept before, and too deep to compare
    update = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "2"}, "spec": spec}
    after = kept(PODS.name, update, before)
    assert after["metadata"]["resourceVersion"] == "2" and "deep" in after["spec"]
