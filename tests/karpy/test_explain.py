"""`karpy explain node|pod` and `karpy what-if` against a controller HTTP server: the text and
JSON outputs, and the exit codes of a bad request (2) and an unreachable controller (1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.clock import FakeClock
from controller.decisions import DecisionLog
from controller.httpserver import ControllerHTTPServer
from karpy.cli import main

NODE = {
    "node": "a", "found": True, "provisioner": "default", "instanceType": "m5.large", "pricePerHour": 0.096,
    "priceAfterPerHour": 0.0416, "savingPerHour": 0.0544, "removable": False,
    "consolidation": {"action": "", "whyNot": "pdb default/db prevents pod evictions"},
    "destinations": [{"pod": "default/web-1", "kind": "existing", "node": "b"},
                     {"pod": "default/db-0", "kind": "new", "newNode": 0}],
    "newNodes": [{"index": 0, "provisioner": "default", "instanceType": "t3.medium", "zone": "us-west-2a",
                  "capacityType": "spot", "pricePerHour": 0.0416, "options": ["t3.medium"], "pods": ["default/db-0"]}],
    "blockers": [{"kind": "pdb", "message": "pdb default/db prevents pod evictions", "pod": "default/db-0"}],
}  # fmt: skip
POD = {
    "pod": "default/p", "status": "pending", "node": "",
    "lastEvaluation": {"time": "2024-01-01T00:00:00Z", "outcome": "unschedulable", "reason": "limits"},
    "now": {"destinations": [], "newNodes": [], "unschedulable": [{"pod": "default/p", "reason": "no room"}]},
    "provisioners": [{"provisioner": "default", "weight": 0, "outcome": "rejected",
                      "reason": "provisioner 'default' limits would be exceeded (cpu: 0 of 4 left)"}],
}  # fmt: skip


def _node(rest: str) -> tuple[int, Any]:
    return (200, NODE) if rest == "a" else (404, {"error": f"node {rest} not found"})


def _pod(rest: str) -> tuple[int, Any]:
    return 200, POD


def _what_if(text: str) -> tuple[int, Any]:
    if "kind: Deployment" not in text:
        return 400, {"error": "manifest: no Pod, Deployment, ReplicaSet, StatefulSet or Job in it"}
    return 200, {"pods": ["ml/t-0"], **{k: NODE[k] for k in ("destinations", "newNodes")}, "unschedulable": [],
                 "addedPricePerHour": 0.0416, "provisioners": []}  # fmt: skip


@pytest.fixture
def url() -> Iterator[str]:
    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {},
        prefixes={"/api/v1/explain/nodes/": _node, "/api/v1/explain/pods/": _pod},
        posts={"/api/v1/what-if": _what_if},
    )  # fmt: skip
    srv.start()
    try:
        yield f"http://127.0.0.1:{srv.port}"
    finally:
        srv.stop()


def test_explain_node_prints_destinations_prices_and_blockers(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "node", "a", "--controller-url", url]) == 0
    out = capsys.readouterr().out
    assert "default/web-1 -> existing node b" in out
    assert "default/db-0 -> new t3.medium (spot, us-west-2a, $0.0416/h)" in out
    assert "price before $0.0960/h, after $0.0416/h (saving $0.0544/h)" in out
    assert "[pdb] pdb default/db prevents pod evictions" in out


def test_json_output_is_the_controllers_answer(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "node", "a", "--controller-url", url, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == NODE


def test_explain_pod_prints_the_last_evaluation_and_each_provisioner(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", "pod", "default/p", "--controller-url", url]) == 0
    out = capsys.readouterr().out
    assert "last evaluation 2024-01-01T00:00:00Z: unschedulable: limits" in out
    assert "default: provisioner 'default' limits would be exceeded (cpu: 0 of 4 left)" in out


def test_what_if_posts_the_manifest(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "d.yaml"
    manifest.write_text("kind: Deployment\n")
    assert main(["what-if", "--pod", str(manifest), "--controller-url", url]) == 0
    assert "added price: $0.0416/h" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["explain", "node", "missing"], 2, "node missing not found"),
        (["explain", "pod", "no-namespace"], 2, "expected NAMESPACE/NAME"),
        (["what-if", "--pod", "/nonexistent.yaml"], 2, "cannot read /nonexistent.yaml"),
    ],
)
def test_bad_requests_exit_2_with_the_reason(
    url: str, argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--controller-url", url]) == code
    assert message in capsys.readouterr().err


def test_a_bad_manifest_gets_the_controllers_message(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "svc.yaml"
    manifest.write_text("kind: Service\n")
    assert main(["what-if", "--pod", str(manifest), "--controller-url", url]) == 2
    assert "no Pod, Deployment" in capsys.readouterr().err


def test_an_unreachable_controller_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "node", "a", "--controller-url", "http://127.0.0.1:9"]) == 1
    assert "cannot reach the controller at http://127.0.0.1:9" in capsys.readouterr().err


def test_the_token_is_shown_to_a_controller_that_checks(capsys: pytest.CaptureFixture[str]) -> None:
    from controller.kube.access import UNAUTHENTICATED, Verdict

    def access(token: str) -> Verdict:
        return Verdict(200, "me") if token == "s3cret" else UNAUTHENTICATED

    srv = ControllerHTTPServer(
        "127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {}, prefixes={"/api/v1/explain/nodes/": _node},
        access=access,
    )  # fmt: skip
    srv.start()
    try:
        url = f"http://127.0.0.1:{srv.port}"
        assert main(["explain", "node", "a", "--controller-url", url]) == 2
        assert "error" not in capsys.readouterr().out
        assert main(["explain", "node", "a", "--controller-url", url, "--token", "s3cret"]) == 0
        assert "node a:" in capsys.readouterr().out
    finally:
        srv.stop()
