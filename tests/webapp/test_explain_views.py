"""The dashboard's explain pages and JSON: the controller's answer rendered (escaped), its 4xx
passed on, an unreachable controller a 503 that says why, and the links from the node and pod views."""

from __future__ import annotations

from typing import Any

from tests.builders.wire import make_node, make_pod, make_provisioner
from tests.webapp.dashboard.builders import FakeSource
from webapp import create_app
from webapp.dashboard.reader import ControllerError

XSS = "<script>alert(1)</script>"
NODE_ANSWER: dict[str, Any] = {
    "node": "n1", "found": True, "provisioner": "default", "instanceType": "m5.large", "pricePerHour": 0.096,
    "priceAfterPerHour": 0.0416, "savingPerHour": 0.0544, "removable": False, "time": "2024-01-01T00:05:00Z",
    "consolidation": {"action": "", "whyNot": "pdb default/db prevents pod evictions"},
    "destinations": [{"pod": "default/web-1", "kind": "existing", "node": "n2"},
                     {"pod": "default/db-0", "kind": "new", "newNode": 0}],
    "newNodes": [{"index": 0, "provisioner": "default", "instanceType": "t3.medium", "zone": "us-west-2a",
                  "capacityType": "spot", "pricePerHour": 0.0416, "options": ["t3.medium"], "pods": ["default/db-0"]}],
    "blockers": [{"kind": "pdb", "message": f"pdb default/{XSS} prevents pod evictions", "pod": "default/db-0"}],
}  # fmt: skip
POD_ANSWER: dict[str, Any] = {
    "pod": "default/big-1", "status": "pending", "node": "", "time": "2024-01-01T00:05:00Z",
    "lastEvaluation": {"time": "2024-01-01T00:04:00Z", "outcome": "unschedulable", "reason": "limits"},
    "now": {"destinations": [], "newNodes": [], "unschedulable": [{"pod": "default/big-1", "reason": "no room"}]},
    "provisioners": [
        {"provisioner": "default", "weight": 0, "outcome": "rejected",
         "reason": "provisioner 'default' limits would be exceeded (cpu: 0 of 4 left)"},
        {"provisioner": "gpu", "weight": 10, "outcome": "would-launch", "instanceType": "g4dn.xlarge",
         "zone": "us-west-2a", "capacityType": "on-demand", "pricePerHour": 0.526,
         "fits": [{"instanceType": "g4dn.xlarge", "pricePerHour": 0.526}]},
    ],
}  # fmt: skip


def source() -> FakeSource:
    objects = {
        "nodes": [make_node("n1"), make_node("n2")],
        "pods": [make_pod("web-1", node="n1"), make_pod("big-1", cpu="64")],
        "provisioners": [make_provisioner("default"), make_provisioner("gpu")],
    }
    explained = {
        "/api/v1/explain/nodes/n1": (200, NODE_ANSWER),
        "/api/v1/explain/pods/default/big-1": (200, POD_ANSWER),
    }
    return FakeSource(objects, explained=explained)


def test_the_node_page_shows_destinations_prices_and_blockers_escaped() -> None:
    html = create_app(dashboard_source=source()).test_client().get("/explain/nodes/n1").get_data(as_text=True)
    assert 'existing node <a href="/nodes/n2">n2</a>' in html
    assert "new <strong>t3.medium</strong> (spot, us-west-2a, $0.0416/hour)" in html
    assert "$0.0544/hour" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and XSS not in html


def test_the_pod_page_shows_the_last_evaluation_and_each_provisioner() -> None:
    html = create_app(dashboard_source=source()).test_client().get("/explain/pods/default/big-1").get_data(as_text=True)
    assert "unschedulable — limits" in html
    assert "provisioner &#39;default&#39; limits would be exceeded (cpu: 0 of 4 left)" in html
    assert "would launch new <strong>g4dn.xlarge</strong>" in html


def test_json_is_the_controllers_answer_and_its_404_is_passed_on() -> None:
    client = create_app(dashboard_source=source()).test_client()
    assert client.get("/api/v1/explain/nodes/n1").get_json() == NODE_ANSWER
    missing = client.get("/api/v1/explain/pods/default/nope")
    assert missing.status_code == 404 and "not found" in missing.get_json()["error"]
    assert client.get("/explain/nodes/nope").status_code == 404


class Unreachable(FakeSource):
    def ask(self, path: str, timeout: float) -> tuple[int, Any]:
        raise ControllerError("the controller at http://x is unreachable (MaxRetryError)")


def test_an_unreachable_controller_is_a_503_saying_why() -> None:
    client = create_app(dashboard_source=Unreachable({})).test_client()
    resp = client.get("/explain/nodes/n1")
    assert resp.status_code == 503 and "unreachable" in resp.get_data(as_text=True)
    assert client.get("/api/v1/explain/nodes/n1").status_code == 503


def test_the_node_and_pod_views_link_to_the_explain_pages() -> None:
    client = create_app(dashboard_source=source()).test_client()
    node = client.get("/nodes/n1").get_data(as_text=True)
    assert 'href="/explain/nodes/n1"' in node and 'href="/explain/pods/default/web-1"' in node
    assert 'href="/explain/pods/default/big-1"' in client.get("/pods/pending").get_data(as_text=True)


def test_only_get_is_served() -> None:
    client = create_app(dashboard_source=source()).test_client()
    assert client.post("/explain/nodes/n1").status_code == 405
    assert client.delete("/api/v1/explain/nodes/n1").status_code == 405


SAVINGS: dict[str, Any] = {
    "savingPerHour": 0.288, "lastDay": 3.456, "lastWeek": 3.456, "commands": 1, "since": "2024-01-01T00:00:00Z",
    "configMap": "karpy/karpy-savings", "persisted": True,
    "recent": [{"time": "2024-01-01T00:00:00Z", "action": "consolidation/replace", "nodes": ["n9"], "before": 0.384,
                "after": 0.096, "savingPerHour": 0.288}],
    "opportunity": {"savingPerHour": 0.096, "nodesConsidered": 2, "nodesOwned": 2, "nodes": [
        {"node": "n1", "instanceType": "m5.large", "pricePerHour": 0.096, "savingPerHour": 0.096,
         "blockers": [{"kind": "do-not-evict", "message": f"pod default/{XSS} has do not evict annotation"}]}]},
}  # fmt: skip


def test_the_savings_page_shows_what_was_saved_and_the_blocked_opportunity() -> None:
    src = source()
    src.explained = {**src.explained, "/api/v1/savings": (200, SAVINGS)}
    client = create_app(dashboard_source=src).test_client()
    html = client.get("/savings").get_data(as_text=True)
    assert "$0.2880/hour" in html and "$3.46" in html and "consolidation/replace" in html
    assert 'href="/explain/nodes/n1"' in html and "&lt;script&gt;" in html and XSS not in html
    assert client.get("/api/v1/savings").get_json() == SAVINGS
    assert 'href="/savings"' in client.get("/").get_data(as_text=True)
    assert 'id="saving-pending"' not in html  # nothing under way


def test_the_savings_page_says_how_many_commands_are_still_under_way() -> None:
    src = source()
    src.explained = {**src.explained, "/api/v1/savings": (200, {**SAVINGS, "pending": 2, "dropped": 1})}
    html = create_app(dashboard_source=src).test_client().get("/savings").get_data(as_text=True)
    assert '<dd id="saving-pending">2, counted once their nodes are gone</dd>' in html
    assert '<dd id="saving-commands">1</dd>' in html


WHAT_IF: dict[str, Any] = {
    "time": "2024-01-01T00:05:00Z", "pods": ["ml/trainer-0"], "addedPricePerHour": 0.526,
    "destinations": [{"pod": "ml/trainer-0", "kind": "new", "newNode": 0}], "unschedulable": [],
    "newNodes": [{"index": 0, "provisioner": "gpu", "instanceType": "g4dn.xlarge", "zone": "us-west-2a",
                  "capacityType": "on-demand", "pricePerHour": 0.526, "pods": ["ml/trainer-0"],
                  "fits": [{"instanceType": "g4dn.xlarge", "pricePerHour": 0.526}]}],
    "provisioners": [{"provisioner": "default", "weight": 0, "outcome": "rejected",
                      "reason": f"no instance type in provisioner 'default' has 1 GPU {XSS}"}],
}  # fmt: skip


def test_the_what_if_page_asks_the_controller_and_shows_its_answer() -> None:
    src = source()
    src.explained = {**src.explained, "POST /api/v1/what-if": (200, WHAT_IF)}
    client = create_app(dashboard_source=src).test_client()
    empty = client.get("/what-if").get_data(as_text=True)
    assert "<textarea" in empty and "data-no-refresh" in empty and src.asked == []
    html = client.get("/what-if", query_string={"manifest": "kind: Deployment"}).get_data(as_text=True)
    assert src.asked == ["POST /api/v1/what-if"]
    assert "Added price: $0.5260/hour" in html and "new <strong>g4dn.xlarge</strong>" in html
    assert "&lt;script&gt;" in html and XSS not in html and "kind: Deployment</textarea>" in html


def test_a_bad_or_too_large_manifest_is_said_on_the_page() -> None:
    src = source()
    client = create_app(dashboard_source=src).test_client()
    bad = client.get("/what-if", query_string={"manifest": "kind: Service"})
    assert bad.status_code == 200 and "manifest: cannot use" in bad.get_data(as_text=True)
    big = client.get("/what-if", query_string={"manifest": "x" * 20_000}).get_data(as_text=True)
    assert "karpy what-if --pod FILE" in big and "POST /api/v1/what-if" not in src.asked[1:]
    assert client.post("/what-if").status_code == 405
