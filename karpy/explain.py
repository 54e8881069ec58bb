"""`karpy explain node NAME`, `karpy explain pod NS/NAME` and `karpy what-if --pod FILE`.

Each asks the controller's HTTP API (`--controller-url`, env `KARPY_CONTROLLER_URL`, default
http://127.0.0.1:8080 — e.g. through `kubectl port-forward`; `--token`, env
`KARPY_CONTROLLER_TOKEN`, when it checks callers with `--api-auth kubernetes`, e.g.
`kubectl create token …`) and prints its answer as text or,
with `--output json`, as the controller gave it. The answers come from the controller's own
decision code (`controller/explain/`); nothing is changed. Exit codes: 0 answered, 1 the
controller could not be asked (the message says why), 2 bad input (the controller's message).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8080"
TIMEOUT = 60.0
EXIT_UNREACHABLE = 1
EXIT_INPUT = 2


class AskError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def ask(base: str, path: str, body: bytes | None = None, token: str = "") -> Any:
    """GET (or POST `body` to) the controller; the JSON answer, or AskError."""
    url = base.rstrip("/") + path
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        req.add_header("Content-Type", "application/yaml")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:
        try:
            message = str(json.loads(err.read()).get("error") or err.reason)
        except (ValueError, AttributeError):
            message = str(err.reason)
        raise AskError(message, EXIT_INPUT if 400 <= err.code < 500 else EXIT_UNREACHABLE) from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        why = getattr(err, "reason", err)
        raise AskError(f"cannot reach the controller at {base}: {why}", EXIT_UNREACHABLE) from None


def _price(value: Any) -> str:
    return f"${value:.4f}/h" if isinstance(value, (int, float)) else "price unknown"


def _new_node(n: dict[str, Any]) -> str:
    return f"new {n.get('instanceType')} ({n.get('capacityType')}, {n.get('zone')}, {_price(n.get('pricePerHour'))})"


def _destinations(answer: dict[str, Any]) -> list[str]:
    new = {n["index"]: n for n in answer.get("newNodes", [])}
    lines = []
    for d in answer.get("destinations", []):
        where = f"existing node {d['node']}" if d["kind"] == "existing" else _new_node(new.get(d["newNode"], {}))
        lines.append(f"  {d['pod']} -> {where}")
    return lines


def node_text(a: dict[str, Any]) -> str:
    lines = [f"node {a['node']}: {a.get('instanceType') or '?'} of provisioner {a.get('provisioner') or '-'}, "
             f"{_price(a.get('pricePerHour'))}"]  # fmt: skip
    lines.append("if removed now, its pods would go to:" if a.get("destinations") else "pods that would move: none")
    lines += _destinations(a)
    if a.get("priceAfterPerHour") is not None and a.get("pricePerHour") is not None:
        lines.append(f"price before {_price(a['pricePerHour'])}, after {_price(a['priceAfterPerHour'])} "
                     f"(saving {_price(a.get('savingPerHour'))})")  # fmt: skip
    blockers = a.get("blockers") or []
    lines.append("blockers:" if blockers else "blockers: none")
    lines += [f"  [{b['kind']}] {b['message']}" for b in blockers]
    c = a.get("consolidation") or {}
    lines.append(f"consolidation: would {c['action']}" if c.get("action") else f"consolidation: no ({c.get('whyNot')})")
    return "\n".join(lines) + "\n"


def _placement_text(a: dict[str, Any]) -> list[str]:
    lines = _destinations(a)
    lines += [f"  {u['pod']}: unschedulable: {u['reason']}" for u in a.get("unschedulable", [])]
    for n in a.get("newNodes", []):
        fits = ", ".join(f"{f['instanceType']} {_price(f['pricePerHour'])}" for f in n.get("fits", []))
        lines.append(f"  node {n['index']} ({n['provisioner']}) could also be: {fits}")
    return lines


def _provisioner_lines(entries: list[dict[str, Any]]) -> list[str]:
    lines = []
    for p in entries:
        if p["outcome"] == "would-launch":
            lines.append(f"  {p['provisioner']}: would launch {_new_node(p)}")
        else:
            lines.append(f"  {p['provisioner']}: {p.get('reason')}")
    return lines


def pod_text(a: dict[str, Any]) -> str:
    lines = [f"pod {a['pod']}: {a['status']}" + (f" on {a['node']}" if a.get("node") else "")]
    if a.get("ignored"):
        lines.append(f"ignored by karpy: {a['ignored']}")
    last = a.get("lastEvaluation")
    if last:
        lines.append(f"last evaluation {last['time']}: {last['outcome']}: {last.get('reason', '')}")
    else:
        lines.append("last evaluation: none recorded by this controller")
    if "now" in a:
        lines.append("now it would go to:")
        lines += _placement_text(a["now"])
        lines.append("each provisioner:")
        lines += _provisioner_lines(a.get("provisioners", []))
    return "\n".join(lines) + "\n"


def what_if_text(a: dict[str, Any]) -> str:
    lines = [f"what-if for {len(a.get('pods', []))} pod(s):"]
    lines += _placement_text(a)
    lines.append(f"added price: {_price(a.get('addedPricePerHour'))}")
    lines.append("each provisioner, for the first pod:")
    lines += _provisioner_lines(a.get("provisioners", []))
    return "\n".join(lines) + "\n"


def _print(args: argparse.Namespace, answer: Any, text: Any) -> int:
    if args.output == "json":
        json.dump(answer, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text(answer))
    return 0


def _run(args: argparse.Namespace, path: str, text: Any, body: bytes | None = None) -> int:
    try:
        answer = ask(args.controller_url, path, body, args.token)
    except AskError as err:
        print(f"karpy {args.command}: {err}", file=sys.stderr)
        return err.code
    return _print(args, answer, text)


def explain_node(args: argparse.Namespace) -> int:
    return _run(args, f"/api/v1/explain/nodes/{urllib.parse.quote(args.name, safe='')}", node_text)


def explain_pod(args: argparse.Namespace) -> int:
    ns, _, name = args.name.partition("/")
    if not ns or not name or "/" in name:
        print(f"karpy explain pod: expected NAMESPACE/NAME, got {args.name!r}", file=sys.stderr)
        return EXIT_INPUT
    path = f"/api/v1/explain/pods/{urllib.parse.quote(ns, safe='')}/{urllib.parse.quote(name, safe='')}"
    return _run(args, path, pod_text)


def what_if(args: argparse.Namespace) -> int:
    try:
        body = Path(args.pod).read_bytes()
    except OSError as err:
        print(f"karpy what-if: cannot read {args.pod}: {err.strerror or err}", file=sys.stderr)
        return EXIT_INPUT
    return _run(args, "/api/v1/what-if", what_if_text, body)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--controller-url",
        default=os.environ.get("KARPY_CONTROLLER_URL", DEFAULT_URL),
        help=f"the controller's HTTP API (env KARPY_CONTROLLER_URL, default {DEFAULT_URL})",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("KARPY_CONTROLLER_TOKEN", ""),
        help="bearer token for a controller that checks callers (env KARPY_CONTROLLER_TOKEN)",
    )
    p.add_argument("--output", choices=("table", "json"), default="table")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = subparsers.add_parser("explain", help="why a pod is where it is, what removing a node would do")
    sub = explain.add_subparsers(dest="explain_command", required=True)
    node = sub.add_parser("node", help="what removing the node would do now (destinations, prices, blockers)")
    node.add_argument("name")
    _common(node)
    node.set_defaults(func=explain_node)
    pod = sub.add_parser("pod", help="the pod's last evaluation and what each provisioner would do for it now")
    pod.add_argument("name", metavar="NAMESPACE/NAME")
    _common(pod)
    pod.set_defaults(func=explain_pod)
    wi = subparsers.add_parser("what-if", help="what karpy would launch for a Pod/Deployment/StatefulSet manifest")
    wi.add_argument("--pod", required=True, help="YAML or JSON manifest (Pod, Deployment, StatefulSet, …)")
    _common(wi)
    wi.set_defaults(func=what_if)
