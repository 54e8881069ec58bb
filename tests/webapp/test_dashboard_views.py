"""The dashboard's pages and JSON API through Flask's test client: what a user sees, and safety."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from controller.clock import SystemClock
from controller.core import labels as L
from controller.scheduling.types import Clause
from localcluster.procs import free_port
from tests.builders.wire import make_node, make_pdb, make_pod, make_provisioner
from tests.webapp.dashboard.builders import FakeSource, answers
from webapp import create_app
from webapp.dashboard.common import cluster_cost
from webapp.dashboard.reader import ReadOnlyKube
from webapp.dashboard.source import ControllerAnswers, DashboardSource

XSS = "<script>alert(1)</script>"
PAGES = ["/", "/nodes", "/nodes/n1", "/provisioners", "/provisioners/default", "/pods/pending", "/decisions"]
APIS = ["/api/v1/overview", "/api/v1/nodes", "/api/v1/nodes/n1", "/api/v1/provisioners",
        "/api/v1/provisioners/default", "/api/v1/pods/pending", "/api/v1/decisions"]  # fmt: skip


def cluster() -> FakeSource:
    secret_pod = make_pod("web-1", node="n1", cpu="1", memory="1Gi")
    secret_pod["spec"]["containers"][0]["env"] = [{"name": "DB_PASSWORD", "value": "hunter2"}]
    secret_pod["spec"]["containers"][0]["args"] = ["--token=s3cr3t-arg"]
    objects = {
        "nodes": [
            make_node("n1", labels={"team": XSS}),
            make_node("n2", instance_type="c5.large", labels={L.CAPACITY_TYPE: "spot", L.ZONE: "us-west-2b"}),
            make_node("static-1", provisioner=None, instance_type="m5.xlarge"),
        ],
        "pods": [
            secret_pod,
            make_pod("guarded", node="n2", annotations={L.DO_NOT_EVICT: "true"}),
            make_pod("big-1", cpu="64"),
            make_pod("big-2", cpu="64"),
        ],
        "provisioners": [make_provisioner("default", limits={"resources": {"cpu": "4"}}), make_provisioner("gpu")],
        "poddisruptionbudgets": [make_pdb("pdb", {"app": "web"})],
    }
    limit = Clause(("default",), ("limits",), "provisioner 'default' limits would be exceeded (cpu: 0 of 4 left)")
    too_big = Clause(("gpu",), ("instance-types",), "no instance type in provisioner 'gpu' has 64 cpu")
    launched = {
        "controller": "provisioning", "action": "launched", "subject": "node/n1", "reason": "pods did not fit",
        "pods": ["default/web-1"], "price": 0.096, "instance_type": "m5.large", "time": "2024-01-01T00:01:00Z",
    }  # fmt: skip
    reply = answers(
        prices={"n1": 0.096, "n2": 0.035},
        outlooks={"n2": {"verdict": "blocked", "reason": "cannot be disrupted: pod default/guarded has do not evict"}},
        pending={
            "default/big-1": [limit, too_big],
            "default/big-2": [limit],
        },
        decisions=[launched, {"controller": "garbagecollection", "action": "garbage-collected", "subject": "x"}],
    )
    return FakeSource(objects, reply)


@pytest.fixture
def client() -> FlaskClient:
    return create_app(dashboard_source=cluster()).test_client()


@pytest.mark.parametrize("path", PAGES + APIS)
def test_every_page_and_api_answers(client: FlaskClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 200, resp.get_data(as_text=True)[:500]


@pytest.mark.parametrize("path", PAGES + APIS)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_nothing_writes(client: FlaskClient, path: str, method: str) -> None:
    assert client.open(path, method=method).status_code == 405


def test_csp_forbids_inline_scripts_and_pages_have_none(client: FlaskClient) -> None:
    for path in PAGES:
        resp = client.get(path)
        csp = resp.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        html = resp.get_data(as_text=True)
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\son[a-z]+=", html), path  # no inline event handlers


def test_values_are_escaped(client: FlaskClient) -> None:
    html = client.get("/nodes/n1").get_data(as_text=True)
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_no_env_args_or_secrets_are_shown(client: FlaskClient) -> None:
    for path in PAGES + APIS:
        text = client.get(path).get_data(as_text=True)
        for secret in ("hunter2", "DB_PASSWORD", "s3cr3t-arg"):
            assert secret not in text, path


def test_overview_figures(client: FlaskClient) -> None:
    data = client.get("/api/v1/overview").get_json()["data"]
    assert data["costPerHour"] == pytest.approx(0.131)
    assert data["costPerMonth"] == pytest.approx(0.131 * 730, abs=0.01)
    assert data["nodes"] == 3 and data["managedNodes"] == 2 and data["pendingPods"] == 2
    assert {g["key"]: g["nodes"] for g in data["byCapacityType"]} == {"on-demand": 2, "spot": 1}
    assert data["packing"]["cpu"]["requested"] == pytest.approx(1.5)
    assert data["packing"]["cpu"]["allocatable"] == pytest.approx(4.0)  # karpy nodes only
    assert data["decisions"][0]["subject"] == "node/n1"
    html = client.get("/").get_data(as_text=True)
    assert "$0.1310" in html and "$95.63/month" in html


def test_nodes_sort_filter_and_unmanaged_apart(client: FlaskClient) -> None:
    data = client.get("/api/v1/nodes?sort=pricePerHour&order=desc").get_json()["data"]
    assert [r["name"] for r in data["managed"]] == ["n1", "n2"]
    assert [r["name"] for r in data["unmanaged"]] == ["static-1"]
    data = client.get("/api/v1/nodes?capacityType=spot").get_json()["data"]
    assert [r["name"] for r in data["managed"]] == ["n2"] and data["unmanaged"] == []
    data = client.get("/api/v1/nodes?label=team").get_json()["data"]
    assert [r["name"] for r in data["managed"]] == ["n1"]
    data = client.get("/api/v1/nodes?q=c5").get_json()["data"]
    assert [r["name"] for r in data["managed"]] == ["n2"]


@pytest.mark.parametrize("query", ["sort=nope", "order=sideways"])
def test_bad_queries_get_a_clear_400(client: FlaskClient, query: str) -> None:
    resp = client.get(f"/api/v1/nodes?{query}")
    assert resp.status_code == 400 and resp.get_json()["error"]
    page = client.get(f"/nodes?{query}")
    assert page.status_code == 400 and "text/html" in page.content_type


def test_unknown_node_and_provisioner_are_404(client: FlaskClient) -> None:
    for path in ("/nodes/nope", "/provisioners/nope", "/api/v1/nodes/nope", "/api/v1/provisioners/nope"):
        assert client.get(path).status_code == 404


def test_node_detail_says_what_would_happen(client: FlaskClient) -> None:
    data = client.get("/api/v1/nodes/n2").get_json()["data"]
    assert data["outlook"]["verdict"] == "blocked"
    assert [p["name"] for p in data["podList"]] == ["guarded"] and data["podList"][0]["doNotEvict"]
    html = client.get("/nodes/n2").get_data(as_text=True)
    assert "has do not evict" in html


def test_provisioner_limits_and_limit_blocking(client: FlaskClient) -> None:
    rows = {p["name"]: p for p in client.get("/api/v1/provisioners").get_json()["data"]["provisioners"]}
    cpu = rows["default"]["limits"][0]
    assert (cpu["resource"], cpu["used"], cpu["limit"], cpu["full"]) == ("cpu", "4", "4", True)
    assert rows["default"]["limitBlocking"] == ["default/big-1", "default/big-2"]
    assert rows["gpu"]["limitBlocking"] == [] and rows["gpu"]["limits"] == []
    assert "limit keeps 2 pod(s) pending" in client.get("/provisioners").get_data(as_text=True)


def test_pending_pods_grouped_with_reasons(client: FlaskClient) -> None:
    data = client.get("/api/v1/pods/pending").get_json()["data"]
    assert data["count"] == 2
    (group,) = data["groups"]
    assert group["owner"] == "ReplicaSet/owner"
    first = group["pods"][0]
    assert "limits would be exceeded" in first["reason"]
    considered = {c["provisioner"]: c["rejected"] for c in first["provisioners"]}
    assert considered["gpu"] == "no instance type in provisioner 'gpu' has 64 cpu"
    assert "limits would be exceeded" in considered["default"]


def test_controller_unreachable_is_said_plainly() -> None:
    source = cluster()
    source.answers = answers()
    source.answers = type(source.answers)(error="the controller at http://x:1 is unreachable (MaxRetryError)")
    client = create_app(dashboard_source=source).test_client()
    html = client.get("/").get_data(as_text=True)
    assert "Controller unreachable" in html and "http://x:1" in html
    assert client.get("/api/v1/overview").get_json()["status"]["controllerReachable"] is False
    assert client.get("/api/v1/nodes").get_json()["data"]["total"] == 3


def test_a_cloud_that_does_not_answer_gets_a_banner_on_every_page() -> None:
    source = cluster()
    source.answers = dataclasses.replace(source.answers, cloud_problem="ec2 DescribeInstanceTypes: AuthFailure: bad")
    client = create_app(dashboard_source=source).test_client()
    for path in PAGES:
        html = client.get(path).get_data(as_text=True)
        assert 'id="cloud-problem"' in html and "AuthFailure: bad" in html, path
    assert client.get("/api/v1/overview").get_json()["status"]["cloudProblem"].endswith("AuthFailure: bad")
    assert 'id="cloud-problem"' not in create_app(dashboard_source=cluster()).test_client().get("/").get_data(True)


def test_without_a_cluster_the_dashboard_says_so() -> None:
    client = create_app().test_client()
    html = client.get("/").get_data(as_text=True)
    assert "no Kubernetes API is configured" in html
    assert "no controller URL is configured" in html


def test_static_assets_are_served_and_linked(client: FlaskClient) -> None:
    html = client.get("/").get_data(as_text=True)
    for asset in ("dashboard.css", "dashboard.js", "favicon.svg"):
        assert f"/static/{asset}" in html
        assert client.get(f"/static/{asset}").status_code == 200


def test_every_internal_link_leads_to_a_page(client: FlaskClient) -> None:
    seen: set[str] = set()
    todo = ["/"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        resp = client.get(path)
        assert resp.status_code == 200, path
        if "text/html" in resp.content_type:
            html = resp.get_data(as_text=True).replace("&amp;", "&")
            todo += [h for h in re.findall(r'href="(/[^"]*)"', html) if not h.startswith("/static/")]
    assert {"/nodes/n1", "/nodes/n2", "/nodes/static-1", "/provisioners/default", "/provisioners/gpu"} <= seen
    assert any(p.startswith("/nodes?sort=pricePerHour") for p in seen)


def test_deprovisioning_decisions_show_prices_before_and_after() -> None:
    source = cluster()
    consolidation = {
        "controller": "deprovisioning", "action": "consolidation/replace", "subject": "node/n1",
        "reason": "consolidation: replace, terminating 1 machines", "price_before": 0.192, "price_after": 0.096,
        "extra": {"candidates": ["n1"], "replacements": ["m5.large"]}, "time": "2024-01-01T00:02:00Z",
    }  # fmt: skip
    source.answers = answers(decisions=[consolidation])
    client = create_app(dashboard_source=source).test_client()
    html = client.get("/decisions?controller=deprovisioning").get_data(as_text=True)
    assert "$0.1920 → $0.0960" in html and "consolidation/replace" in html and "replacements: m5.large" in html
    assert client.get("/api/v1/decisions?action=launched").get_json()["data"]["decisions"] == []


def test_an_instance_without_a_node_yet_is_listed_as_launching() -> None:
    source = cluster()
    source.answers = answers(prices={"n1": 0.096})
    source.answers.nodes["i-new"] = {"pricePerHour": 0.2, "inFlight": True}  # type: ignore[index]
    client = create_app(dashboard_source=source).test_client()
    rows = {r["name"]: r for r in client.get("/api/v1/nodes").get_json()["data"]["managed"]}
    assert rows["i-new"]["status"] == "Launching" and rows["i-new"]["pricePerHour"] == 0.2
    assert rows["n1"]["status"] == "Ready"


def test_a_limit_warns_at_80_percent() -> None:
    source = cluster()
    five_cpus = make_provisioner("default", limits={"resources": {"cpu": "5"}})  # the two nodes have 4
    source.objects = {**source.objects, "provisioners": [five_cpus]}
    client = create_app(dashboard_source=source).test_client()
    (row,) = client.get("/api/v1/provisioners").get_json()["data"]["provisioners"]
    assert (row["limits"][0]["fraction"], row["limits"][0]["warn"], row["limits"][0]["full"]) == (0.8, True, False)
    assert "over 80%" in client.get("/provisioners/default").get_data(as_text=True)


def unreachable_cluster(tmp_path: Path) -> DashboardSource:
    """The dashboard's real source, reading an API server where nothing listens."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return DashboardSource(ReadOnlyKube(str(kubeconfig), timeout=1), None, SystemClock(), cluster_cost)


@pytest.mark.parametrize(
    "path", ["/nodes/n1", "/provisioners/default", "/api/v1/nodes/n1", "/api/v1/provisioners/default"]
)
def test_details_answer_503_not_404_while_the_cluster_cannot_be_read(tmp_path: Path, path: str) -> None:
    """Issue 20, defect 6: an unreachable API server made existing objects answer 404 "not found"."""
    source = unreachable_cluster(tmp_path)
    try:
        resp = create_app(dashboard_source=source).test_client().get(path)
    finally:
        source.close()
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "10"
    text = resp.get_data(as_text=True)
    assert "cannot be looked up now" in text and "not found" not in text
    if path.startswith("/api/"):
        assert resp.get_json()["status"]["synced"] is False
    else:
        assert 'id="cluster-problem"' in text


def test_a_missing_object_of_a_synced_cluster_is_404(client: FlaskClient) -> None:
    for path in ("/nodes/nope", "/provisioners/nope", "/api/v1/nodes/nope", "/api/v1/provisioners/nope"):
        assert client.get(path).status_code == 404, path


def test_a_drifted_node_says_why_on_its_pages() -> None:
    drift = {"reason": "AMIDrift", "message": "AMI ami-0a is no longer selected by AWSNodeTemplate nodes (now ami-0b)"}
    outlook = {"verdict": "drifted", "reason": f"drifted: {drift['message']}: it will be replaced", "drift": drift}
    source = FakeSource({"nodes": [make_node("n1")], "provisioners": [make_provisioner("default")]})
    source.answers = ControllerAnswers("", {"n1": {"outlook": outlook}}, {}, ())
    client = create_app(dashboard_source=source).test_client()
    page = client.get("/nodes/n1").get_data(as_text=True)
    assert '<p id="drift">Drift: <code>AMIDrift</code> — AMI ami-0a is no longer selected' in page
    listing = client.get("/nodes").get_data(as_text=True)
    assert "v-drifted" in listing and "drifted: AMI ami-0a is no longer selected by AWSNodeTemplate nodes" in listing
    assert client.get("/api/v1/nodes/n1").get_json()["data"]["outlook"]["drift"] == drift


def test_refused_karpenter_global_settings_get_a_banner_on_every_page() -> None:
    source = cluster()
    problem = "configmap karpy/karpenter-global-settings is invalid: batchMaxDuration: invalid duration 'soon'"
    source.answers = dataclasses.replace(source.answers, settings_problem=problem)
    client = create_app(dashboard_source=source).test_client()
    for path in PAGES:
        html = client.get(path).get_data(as_text=True)
        assert 'id="settings-problem"' in html and "invalid duration &#39;soon&#39;" in html, path
    assert client.get("/api/v1/overview").get_json()["status"]["settingsProblem"] == problem
    assert 'id="settings-problem"' not in create_app(dashboard_source=cluster()).test_client().get("/").get_data(True)


def test_the_overview_says_when_consolidation_waited_for_kube_scheduler() -> None:
    source = cluster()
    why = "12 pod(s) not yet decided by kube-scheduler (the oldest default/web-9): their room stays"
    last = {"time": "2024-01-01T00:02:00Z", "seconds": 0.02, "complete": True, "waiting": why, "covered": {}}
    source.answers = dataclasses.replace(answers(), consolidation=last)
    html = create_app(dashboard_source=source).test_client().get("/").get_data(as_text=True)
    assert f"consolidation waited: {why}" in html and "went through" not in html
