"""karpy's name/label/value rules against the real API server's (issue 20, defect 4).

For fuzzed label keys, label values and taints, a Node carrying them is created with
`dryRun=All` (validated and admitted, never stored): the API server's answer is the oracle, and
karpy's `qualified_name_errors` / `label_value_errors` must agree with it exactly — so a
Provisioner karpy admits never yields a Node the API server refuses (an instance bought for
nothing). The character-level statement of the same rules is `tests/controller/core/test_labels.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.apis.load import check_provisioner
from controller.core import labels as L
from controller.kube.client import KubeClient
from controller.kube.errors import KubeError
from localcluster import LocalCluster
from tests.builders.wire import make_provisioner
from tests.controller.core.test_labels import ALPHABET

pytestmark = pytest.mark.e2e

FUZZ = st.text(alphabet=ALPHABET, max_size=20)
KEYS = FUZZ | st.builds(lambda a, b: f"{a}/{b}", FUZZ, FUZZ)


@pytest.fixture(scope="module")
def client(local_cluster: LocalCluster) -> KubeClient:
    return KubeClient(str(local_cluster.kubeconfig))


def apiserver_accepts(client: KubeClient, labels: dict[str, str], taint: dict[str, str] | None = None) -> bool:
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "fuzz", "labels": labels}}
    if taint is not None:
        node["spec"] = {"taints": [taint]}
    try:
        client._request("POST", "/api/v1/nodes", node, query={"dryRun": "All"})
    except KubeError as err:
        assert err.status == 422, err  # Invalid: nothing else is acceptable here
        return False
    return True


def karpy_accepts_label(key: str, value: str) -> bool:
    return not L.qualified_name_errors(key) and not L.label_value_errors(value)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=KEYS, value=FUZZ)
@example(key="team", value="a\n")
@example(key="team\n", value="a")
@example(key="example.com/team", value="a" * 64)
@example(key="a" * 254 + "/b", value="v")
def test_label_keys_and_values_agree_with_the_apiserver(client: KubeClient, key: str, value: str) -> None:
    assert karpy_accepts_label(key, value) is apiserver_accepts(client, {key: value}), (key, value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=KEYS, value=FUZZ)
@example(key="t", value="a/b")
@example(key="t", value="v\n")
def test_taints_karpy_admits_are_taints_the_apiserver_accepts(client: KubeClient, key: str, value: str) -> None:
    # karpy's rule (Karpenter's qualified name for the value, plus the Node's label-value rule) may
    # be stricter than the API server's, never looser
    taint = {"key": key, "value": value, "effect": "NoSchedule"}
    if not check_provisioner(make_provisioner(taints=[taint])):
        assert apiserver_accepts(client, {}, {"key": key, "value": value, "effect": "NoSchedule"}), (key, value)
