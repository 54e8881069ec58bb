"""The explain answers over the controller's HTTP server: a node, a pod, a what-if manifest —
and every bad request a clear 4xx that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from controller.clock import FakeClock
from controller.core import labels as L
from controller.decisions import UNSCHEDULABLE, Decision, DecisionLog
from controller.explain.service import Explainer, post_routes, prefix_routes
from controller.httpserver import MAX_BODY, ControllerHTTPServer
from controller.state.cluster import ClusterState
from tests.builders.scheduling import make_instance_type
from tests.builders.wire import make_node, make_pdb, make_pod, make_provisioner
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.world import state_of

ZONE = {L.ZONE: "us-west-2a"}
CATALOG = [
    make_instance_type("m5.large", cpu=2, memory_gib=8, pods=29, price=0.096, zones=("us-west-2a",)),
    make_instance_type("m5.xlarge", cpu=4, memory_gib=16, pods=58, price=0.192, zones=("us-west-2a",)),
    make_instance_type("g4dn.xlarge", cpu=4, memory_gib=16, pods=29, price=0.526, gpus=1, zones=("us-west-2a",)),
]


@dataclass
class Served:
    url: str
    decisions: DecisionLog
    state: ClusterState


@pytest.fixture
def served() -> Iterator[Served]:
    clock = FakeClock()
    objects = {
        "nodes": [
            make_node("a", instance_type="m5.large", labels=ZONE),
            make_node("b", instance_type="m5.xlarge", cpu="4", memory="16Gi", labels=ZONE),
            make_node("foreign", provisioner=None),
        ],
        "pods": [
            make_pod("moves", node="a", cpu="1"),
            make_pod("guarded", node="b", cpu="1", labels={"app": "db"}),
            make_pod("waiting", cpu="1", nodeSelector={"team": "blue"}),
        ],
        "provisioners": [
            make_provisioner("default", consolidation={"enabled": True}),
            make_provisioner(
                "gpu",
                requirements=[{"key": L.INSTANCE_CATEGORY, "operator": "In", "values": ["g"]}],
                taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            ),
        ],
        "poddisruptionbudgets": [make_pdb("db", {"app": "db"})],
    }
    state = state_of(objects, clock)
    decisions = DecisionLog(clock)
    explainer = Explainer(state, FakeCloudProvider(CATALOG, clock), decisions)
    srv = ControllerHTTPServer(
        "127.0.0.1", 0, decisions, lambda: {"synced": True},
        prefixes=prefix_routes(explainer), posts=post_routes(explainer),
    )  # fmt: skip
    srv.start()
    try:
        yield Served(f"http://127.0.0.1:{srv.port}", decisions, state)
    finally:
        srv.stop()


def test_explain_node_gives_destinations_prices_and_blockers(served: Served) -> None:
    movable = requests.get(f"{served.url}/api/v1/explain/nodes/a", timeout=10).json()
    assert movable["destinations"] == [{"pod": "default/moves", "kind": "existing", "node": "b"}]
    assert movable["blockers"] == [] and movable["removable"] is True
    assert movable["pricePerHour"] == 0.096 and movable["priceAfterPerHour"] == 0
    guarded = requests.get(f"{served.url}/api/v1/explain/nodes/b", timeout=10).json()
    assert [(b["kind"], b["pod"]) for b in guarded["blockers"]] == [("pdb", "default/guarded")]
    foreign = requests.get(f"{served.url}/api/v1/explain/nodes/foreign", timeout=10).json()
    assert "not managed by karpy" in foreign["blockers"][0]["message"]


def test_explain_pod_gives_the_last_evaluation_and_each_provisioners_reason(served: Served) -> None:
    served.decisions.record_once(Decision("provisioning", UNSCHEDULABLE, "pod/default/waiting", "no match"))
    answer = requests.get(f"{served.url}/api/v1/explain/pods/default/waiting", timeout=10).json()
    assert answer["status"] == "pending"
    assert answer["lastEvaluation"]["outcome"] == UNSCHEDULABLE
    assert answer["lastEvaluation"]["reason"] == "no match"
    reasons = {p["provisioner"]: p["reason"] for p in answer["provisioners"]}
    assert '"team"' in reasons["default"]
    assert "nvidia.com/gpu=true:NoSchedule not tolerated" in reasons["gpu"]
    assert {p["provisioner"]: p["stages"] for p in answer["provisioners"]}["gpu"] == ["requirements", "taints"]
    assert answer["now"]["unschedulable"][0]["pod"] == "default/waiting"


def test_explain_pod_of_a_bound_pod_says_what_a_new_node_would_be(served: Served) -> None:
    answer = requests.get(f"{served.url}/api/v1/explain/pods/default/moves", timeout=10).json()
    assert answer["status"] == "bound" and answer["node"] == "a"
    prov = next(p for p in answer["provisioners"] if p["provisioner"] == "default")
    assert prov["outcome"] == "would-launch"
    assert (prov["instanceType"], prov["pricePerHour"]) == ("m5.large", 0.096)
    assert [f["instanceType"] for f in prov["fits"]] == ["m5.large", "m5.xlarge"]


GPU_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer, namespace: ml}
spec:
  replicas: 2
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: c
        image: x
        resources: {limits: {nvidia.com/gpu: "1"}, requests: {cpu: "1"}}
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
"""


def test_what_if_names_the_type_and_price_karpy_would_launch(served: Served) -> None:
    answer = requests.post(f"{served.url}/api/v1/what-if", data=GPU_DEPLOYMENT, timeout=10).json()
    assert answer["pods"] == ["ml/trainer-0", "ml/trainer-1"]
    assert [(n["instanceType"], n["pricePerHour"]) for n in answer["newNodes"]] == [("g4dn.xlarge", 0.526)] * 2
    assert answer["addedPricePerHour"] == 1.052
    assert answer["unschedulable"] == []
    by_name = {p["provisioner"]: p for p in answer["provisioners"]}
    assert "1 GPU" in by_name["default"]["reason"]
    assert by_name["gpu"]["instanceType"] == "g4dn.xlarge"


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        pytest.param("kind: Service\nmetadata: {name: x}", 400, "what-if takes Pod", id="wrong kind"),
        pytest.param("{not yaml: [", 400, "not valid YAML", id="not yaml"),
        pytest.param("kind: Pod\nmetadata: {name: p}\nspec: {containers: 3}", 400, "containers", id="bad spec"),
        pytest.param("", 400, "no Pod, Deployment", id="empty"),
        pytest.param("x" * (MAX_BODY + 1), 413, "at most", id="too large"),
    ],
)
def test_a_bad_what_if_manifest_is_a_clear_4xx(served: Served, body: str, status: int, text: str) -> None:
    before = served.state.generation
    resp = requests.post(f"{served.url}/api/v1/what-if", data=body, timeout=10)
    assert resp.status_code == status
    assert text in resp.json()["error"]
    assert served.state.generation == before


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/v1/explain/nodes/missing", 404),
        ("GET", "/api/v1/explain/pods/default/missing", 404),
        ("GET", "/api/v1/explain/pods/only-a-name", 400),
        ("GET", "/api/v1/explain/nodes/a/b", 400),
        ("POST", "/api/v1/explain/nodes/a", 405),
        ("DELETE", "/api/v1/what-if", 405),
        ("GET", "/api/v1/what-if", 404),
    ],
)
def test_unknown_objects_and_paths_are_4xx(served: Served, method: str, path: str, status: int) -> None:
    resp = requests.request(method, f"{served.url}{path}", timeout=10)
    assert resp.status_code == status
    assert "error" in resp.json()


def test_not_synced_is_503_not_a_guess() -> None:
    clock = FakeClock()
    state = ClusterState(clock)
    explainer = Explainer(state, FakeCloudProvider(CATALOG, clock), DecisionLog(clock))
    assert explainer.node("a")[0] == 503
    assert explainer.pod("default", "p")[0] == 503


def test_the_opportunity_is_what_blocked_nodes_would_save_without_their_blockers(served: Served) -> None:
    clock = FakeClock()
    explainer = Explainer(served.state, FakeCloudProvider(CATALOG, clock), DecisionLog(clock))
    got = explainer.opportunity()
    assert [(n["node"], n["savingPerHour"]) for n in got["nodes"]] == [("b", 0.192)]
    assert [b["kind"] for b in got["nodes"][0]["blockers"]] == ["pdb"]
    assert got["savingPerHour"] == 0.192 and got["nodesBlocked"] == 1 and got["nodesOwned"] == 2
