"""Node initialization (spec §5.5.1): the label, and startup taints tolerated until it is set."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from controller.core import labels as L
from controller.kube.resources import NODES, PODS
from controller.provisioning.initialization import InitializationController
from tests.builders.wire import make_node, make_pod
from tests.controller.provisioning.test_controller import make_env

STARTUP = {"key": "init", "effect": "NoSchedule"}
TOLERATE = [{"key": "dedicated", "operator": "Exists"}]


def _node(**kw: object) -> dict[str, Any]:
    node = make_node("n1", cpu="4", memory="16Gi", initialized=False, **kw)  # type: ignore[arg-type]
    node["spec"]["taints"] = [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}, STARTUP]
    return node


def test_a_ready_node_with_its_startup_taint_is_not_initialized_and_gets_the_pending_pod() -> None:
    env = make_env()
    env.kube.put(NODES, _node())
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    assert env.cloud.create_calls == []  # the startup taint is tolerated: the node's room is used
    assert env.kube.bindings == []  # and kube-scheduler binds it once the taint is gone
    assert InitializationController(env.state, env.kube).reconcile() == []


def test_initialized_once_ready_without_startup_taints_and_with_extended_resources() -> None:
    env = make_env()
    node = _node(ready=False)
    node["status"]["capacity"] = {**node["status"]["capacity"], "nvidia.com/gpu": "1"}
    node["status"]["allocatable"] = {**node["status"]["allocatable"], "nvidia.com/gpu": "0"}
    env.kube.put(NODES, node)
    controller = InitializationController(env.state, env.kube)

    def step(change: dict[str, Any]) -> list[str]:
        current = env.kube.find(NODES, "n1")
        assert current is not None
        for key, value in change.items():
            section, field = key.split(".")
            current[section][field] = value
        env.kube.put(NODES, current)
        env.sync()
        return controller.reconcile()

    initialized = REGISTRY.get_sample_value("karpenter_machines_initialized", {"provisioner": "default"}) or 0.0
    assert step({}) == []  # not Ready
    assert step({"status.conditions": [{"type": "Ready", "status": "True"}]}) == []  # startup taint
    assert step({"spec.taints": [{"key": "dedicated", "value": "a", "effect": "NoSchedule"}]}) == []  # no GPU yet
    assert step({"status.allocatable": {**node["status"]["capacity"]}}) == ["n1"]
    assert env.kube.find(NODES, "n1")["metadata"]["labels"][L.INITIALIZED] == "true"  # type: ignore[index]
    assert REGISTRY.get_sample_value("karpenter_machines_initialized", {"provisioner": "default"}) == initialized + 1


def test_an_initialized_node_enforces_startup_taints_like_any_taint() -> None:
    env = make_env()
    node = _node()
    node["metadata"]["labels"][L.INITIALIZED] = "true"
    env.kube.put(NODES, node)
    env.kube.put(PODS, make_pod("p0", tolerations=TOLERATE))
    env.run_batch()
    assert len(env.cloud.create_calls) == 1
