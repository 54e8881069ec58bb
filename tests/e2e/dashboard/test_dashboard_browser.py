"""The dashboard in headless Chromium over the real local control plane, with the controller and
the simulated cloud running: every page loads, every internal link works without console errors,
figures match the API and the cluster, a pending pod's reason, a limit-blocked provisioner and a
node kept by a do-not-evict pod are shown, hostile text renders as text, and the overview is
captured as a screenshot (also to `$KARPY_SCREENSHOT` when set, for the README).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import urllib.error
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import pytest

from controller.core import labels as L
from controller.kube.errors import KubeError
from controller.kube.resources import NODES
from localcluster.manifests import VALIDATING_NAME
from tests.e2e.dashboard.conftest import Dashboard
from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = [pytest.mark.e2e, pytest.mark.browser, pytest.mark.timeout(420)]

XSS = "<script>alert(1)</script>"
HOSTILE = {
    "apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "hostile"},
    "spec": {"requirements": [{"key": "team", "operator": "In", "values": [XSS]}]},
}  # fmt: skip
MAX_PAGES = 150


def _setup(env: KarpyEnv) -> None:
    env.provisioner("default", consolidation={"enabled": True})
    # A provisioner whose limit leaves no room for any instance type: its pods stay pending.
    env.provisioner("limited", limits={"resources": {"cpu": "1"}}, labels={"pool": "limited"})
    # Hostile text as a cluster without karpy's validating webhook stores it (the webhook refuses it;
    # the dashboard must still show it as text).
    with _without_validating_webhook(env):
        until(lambda: _create(env, HOSTILE, dry_run=False), 30, "the hostile provisioner stored")
    env.deployment("web", 2, cpu="500m", memory="512Mi")
    env.deployment("guarded", 1, cpu="500m", memory="512Mi", metadata={"annotations": {L.DO_NOT_EVICT: "true"}})
    env.deployment("capped", 1, cpu="1", memory="1Gi", nodeSelector={"pool": "limited"})
    # A node karpy does not manage (kwok runs it); tainted so that no test pod lands on it.
    env.kube.create(NODES, {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"static-{env.namespace}", "labels": {"kwok.x-k8s.io/node": "fake", "role": "static"}},
        "spec": {"taints": [{"key": "dedicated", "value": "static", "effect": "NoSchedule"}]},
    })  # fmt: skip


@contextlib.contextmanager
def _without_validating_webhook(env: KarpyEnv) -> Iterator[None]:
    """karpy's validating webhook unregistered for the block, then registered again exactly as it
    was (the session's webhook server may have registered it for earlier tests; when it has not,
    there is nothing to do)."""
    found = env.cluster.kubectl(
        "get", "validatingwebhookconfiguration", VALIDATING_NAME, "-o", "json", "--ignore-not-found", check=False
    ).stdout.strip()
    if not found:
        yield
        return
    saved = json.loads(found)
    meta = saved["metadata"]
    saved["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
    env.cluster.kubectl("delete", "validatingwebhookconfiguration", VALIDATING_NAME)
    try:
        yield
    finally:
        env.cluster.kubectl("create", "-f", "-", input=json.dumps(saved))
        # the apiserver calls it again (a refused dry run) before the next test relies on it
        until(lambda: not _create(env, {**HOSTILE, "metadata": {"name": "hostile-probe"}}, dry_run=True), 30,
              "karpy's validating webhook called again")  # fmt: skip


def _create(env: KarpyEnv, doc: dict[str, Any], dry_run: bool) -> bool:
    """Whether the apiserver admits `doc` (stored unless `dry_run`)."""
    args = ("create", "--dry-run=server") if dry_run else ("create",)
    return env.cluster.kubectl(*args, "-f", "-", input=json.dumps(doc), check=False).returncode == 0


def _cleanup_static(env: KarpyEnv) -> None:
    with contextlib.suppress(KubeError):
        env.kube.delete(NODES, f"static-{env.namespace}")


def _guarded_node(env: KarpyEnv) -> str:
    for pod in env.running("guarded"):
        return str(pod["spec"].get("nodeName") or "")
    return ""


def test_dashboard_in_chromium(dashboard: tuple[KarpyEnv, Dashboard], browser: Any, tmp_path: Path) -> None:
    env, dash = dashboard
    _setup(env)
    try:
        _run(env, dash, browser, tmp_path)
    finally:
        _cleanup_static(env)


def _run(env: KarpyEnv, dash: Dashboard, browser: Any, tmp_path: Path) -> None:
    until(lambda: len(env.running("web")) == 2 and _guarded_node(env), 120, "web and guarded pods running")
    guarded = _guarded_node(env)
    capped_key = f"{env.namespace}/" + env.pods("capped")[0]["metadata"]["name"]

    seen: dict[str, Any] = {}

    def api_ready() -> bool:
        try:
            pending = dash.api("/api/v1/pods/pending")["data"]
            node = dash.api(f"/api/v1/nodes/{guarded}")["data"]
        except urllib.error.HTTPError as err:  # the webapp's informers have not seen the node yet
            seen["error"] = str(err)
            return False
        pods = {f"{g['namespace']}/{p['name']}": p["reason"] for g in pending["groups"] for p in g["pods"]}
        seen.update(pods=pods, outlook=node.get("outlook"))
        outlook = (node.get("outlook") or {}).get("reason", "")
        return "limits would be exceeded" in pods.get(capped_key, "") and "do not evict" in outlook

    try:
        until(api_ready, 120, "the capped pod's reason and the guarded node's outlook", interval=1)
    except pytest.fail.Exception:
        pytest.fail(f"no reason for {capped_key} or outlook for {guarded}; saw {seen}")

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def on_dialog(dialog: Any) -> None:  # an alert() means hostile text ran as script
        errors.append(f"dialog opened: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)

    # Every page loads and every internal link is followed.
    visited: set[str] = set()
    queue = deque(["/"])
    while queue and len(visited) < MAX_PAGES:
        path = queue.popleft()
        if path in visited:
            continue
        visited.add(path)
        resp = page.goto(dash.url + path)
        assert resp is not None and resp.status == 200, f"{path}: HTTP {resp.status if resp else None}"
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
            target = urlparse(urljoin(dash.url + path, href))
            if target.netloc == urlparse(dash.url).netloc:
                link = target.path + (f"?{target.query}" if target.query else "")
                if link not in visited:
                    queue.append(link)
    for must in ("/", "/nodes", f"/nodes/{guarded}", "/provisioners", "/provisioners/limited", "/pods/pending",
                 "/decisions", f"/explain/nodes/{guarded}"):  # fmt: skip
        assert must in visited, f"no link led to {must}"
    assert errors == []

    # Node and provisioner figures match the API and the cluster.
    page.goto(dash.url + "/nodes")
    cluster_nodes = {n["metadata"]["name"] for n in env.kube.list(NODES).items}
    managed = set(page.locator("#managed-nodes tbody tr td:first-child").all_inner_texts())
    unmanaged = set(page.locator("#unmanaged-nodes tbody tr td:first-child").all_inner_texts())
    karpy_nodes = {n["metadata"]["name"] for n in env.nodes()}
    assert karpy_nodes <= managed and f"static-{env.namespace}" in unmanaged
    assert (managed | unmanaged) - {"no nodes"} <= cluster_nodes | managed
    overview = dash.api("/api/v1/overview")["data"]
    page.goto(dash.url + "/")
    assert page.locator("#node-count").inner_text() == str(overview["nodes"])
    assert page.locator("#cost-hour").inner_text().startswith(f"${overview['costPerHour']:.4f}")
    assert overview["costPerHour"] > 0

    page.goto(dash.url + "/provisioners")
    api_rows = {p["name"]: p for p in dash.api("/api/v1/provisioners")["data"]["provisioners"]}
    karpy_default = [n for n in env.nodes() if n["metadata"]["labels"][L.PROVISIONER_NAME] == "default"]
    assert api_rows["default"]["nodes"] == len(karpy_default) > 0
    cells = page.locator("#provisioners tr", has_text="default").first.locator("td").all_inner_texts()
    assert cells[2] == str(len(karpy_default)) and cells[3] == f"${api_rows['default']['costPerHour']:.4f}"

    # The page refreshes itself (a static script under the CSP, no full reload).
    page.goto(dash.url + "/")
    page.evaluate("window.__karpyNotReloaded = true")
    stamp = page.locator(".updated time").inner_text()
    page.wait_for_function("s => document.querySelector('.updated time').textContent !== s", arg=stamp, timeout=20_000)
    assert page.evaluate("window.__karpyNotReloaded") is True

    # The pending pod's reason and the limit-blocked provisioner.
    page.goto(dash.url + "/pods/pending")
    assert "limits would be exceeded" in page.locator("main").inner_text()
    page.goto(dash.url + "/provisioners")
    row = page.locator("#provisioners tr", has_text="limited")
    assert "limit keeps" in row.inner_text() and "pending" in row.inner_text()

    # The node kept by a do-not-evict pod says so.
    page.goto(dash.url + f"/nodes/{guarded}")
    assert "do not evict" in page.locator("#outlook").inner_text()

    # From the node page, what removing it would do: the do-not-evict pod blocks it (issue 22).
    page.click("#explain-node-link")
    page.wait_for_url(f"**/explain/nodes/{guarded}")
    assert "do-not-evict" in page.locator("#explain-blockers").inner_text()
    assert page.locator("#explain-removable").inner_text() == "no"
    explained = dash.api(f"/api/v1/explain/nodes/{guarded}")
    assert "do-not-evict" in {b["kind"] for b in explained["blockers"]}
    assert len(page.locator("#explain-destinations tbody tr").all()) == len(explained["destinations"]) > 0

    # Savings: the page says what the controller's API says, and the node kept only by its
    # do-not-evict pod is part of the blocked opportunity when removing it would save (issue 22).
    page.click("nav a[href='/savings']")
    page.wait_for_url("**/savings")
    saved = dash.api("/api/v1/savings")
    assert page.locator("#saving-commands").inner_text() == str(saved["commands"])
    assert page.locator("#saving-hour").inner_text().startswith(f"${saved['savingPerHour']:.4f}")
    for n in saved["opportunity"]["nodes"]:
        assert n["node"] in page.locator("#opportunity-nodes").inner_text()

    # What if: a Deployment typed into the form gets the controller's answer, nothing applied.
    page.click("nav a[href='/what-if']")
    manifest = json.dumps(env.deployment_manifest("whatif", 1, cpu="500m", memory="512Mi"))
    page.fill("#manifest", manifest)
    page.click("form.whatif button")
    page.wait_for_selector("#what-if-price")
    assert "$" in page.locator("#what-if-price").inner_text()
    assert "would go to" in page.locator("#what-if-destinations").inner_text().lower()
    assert env.pods("whatif") == []

    # Hostile text is shown as text, never run.
    page.goto(dash.url + "/provisioners/hostile")
    assert XSS in page.locator("main").inner_text()
    assert page.locator("main script").count() == 0
    assert errors == []

    # The controller exports Karpenter's capacity metrics and a price per node.
    metrics = dash.controller.get("/metrics")
    for series in ('karpenter_nodes_allocatable{', f'node_name="{guarded}"', "karpenter_nodes_total_pod_requests{",
                   "karpenter_nodes_total_daemon_requests", 'karpenter_pods_state{', "karpy_nodes_price_per_hour{",
                   'karpenter_provisioner_limit{provisioner="limited",resource_type="cpu"}'):  # fmt: skip
        assert series in metrics, series

    # The overview, for the README.
    page.goto(dash.url + "/")
    shot = tmp_path / "overview.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("KARPY_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["KARPY_SCREENSHOT"])
    context.close()
