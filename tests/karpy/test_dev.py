"""`make dev` end to end: it starts, the sample Deployment scales onto nodes karpy launches, the
printed URL answers, and Ctrl-C (SIGINT to its process group) leaves no process behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from localcluster import procs
from tests.support.poll import until, within

REPO = Path(__file__).resolve().parents[2]


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Output:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stdout is not None
        stream = proc.stdout
        self._thread = threading.Thread(target=lambda: self.lines.extend(stream), daemon=True)
        self._thread.start()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, marker: str, proc: subprocess.Popen[str], timeout: float) -> None:
        def printed() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"make dev exited before printing {marker!r}:\n{self.text[-4000:]}")
            return marker in self.text

        if not within(printed, timeout, interval=0.5):
            pytest.fail(f"make dev did not print {marker!r}:\n{self.text[-4000:]}")


def kubectl_json(kubectl: str, kubeconfig: str, *args: str) -> Any:
    out = subprocess.run([kubectl, f"--kubeconfig={kubeconfig}", *args, "-o", "json"],
                         capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
    return json.loads(out)


def test_make_dev_runs_scales_and_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    port = procs.free_port()
    make = subprocess.Popen(
        ["make", "--no-print-directory", "dev", f"DEV_DIR={tmp_path / 'dev'}", f"DEV_PORT={port}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        # as a shell without job control starts a background job (CI's may): SIGINT inherited ignored;
        # Ctrl-C must still stop everything
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    out = Output(make)
    started: set[int] = set()
    try:
        out.wait_for("Press Ctrl-C to stop everything.", make, 300)
        text = out.text
        kubeconfig = re.search(r"kubeconfig: (\S+)", text).group(1)  # type: ignore[union-attr]
        url, ca = re.search(r"dashboard: +(\S+) +\(read-only; TLS, CA (\S+);", text).groups()  # type: ignore[union-attr]
        scale = re.search(r"try: +(KUBECONFIG=\S+ \S+ scale \S+ --replicas=(\d+))", text)
        assert scale, text
        kubectl = scale.group(1).split()[1]
        replicas = int(scale.group(2))

        def running(n: int) -> bool:
            pods = kubectl_json(kubectl, kubeconfig, "get", "pods", "-n", "default", "-l", "app=sample")["items"]
            return bool(sum(p["status"].get("phase") == "Running" for p in pods) == n)

        until(lambda: running(2), 120, "the sample Deployment's 2 pods Running")
        subprocess.run(["bash", "-c", scale.group(1)], check=True, capture_output=True, timeout=60)  # as printed
        until(lambda: running(replicas), 180, f"{replicas} sample pods Running")
        nodes = kubectl_json(kubectl, kubeconfig, "get", "nodes", "-l", "karpenter.sh/provisioner-name=default")
        launched = {n["metadata"]["name"] for n in nodes["items"]}
        pods = kubectl_json(kubectl, kubeconfig, "get", "pods", "-n", "default", "-l", "app=sample")["items"]
        assert launched and {p["spec"]["nodeName"] for p in pods} <= launched  # on nodes karpy launched
        page = requests.get(url, verify=ca, timeout=10)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"], page.text[:500]
        until(lambda: any(n in requests.get(url + "nodes", verify=ca, timeout=10).text for n in launched),
                   60, "the dashboard's nodes page listing a node karpy launched")  # fmt: skip

        subprocess.run([kubectl, f"--kubeconfig={kubeconfig}", "scale", "deployment/sample", "--replicas=0"],
                       check=True, capture_output=True, timeout=60)  # fmt: skip
        until(lambda: not kubectl_json(kubectl, kubeconfig, "get", "nodes", "-l",
                                            "karpenter.sh/provisioner-name=default")["items"],
                   180, "consolidation to remove the empty nodes")  # fmt: skip

        started = descendants(make.pid)
        assert len(started) >= 7  # karpy dev, webapp (+ workers), controller, 5 control-plane components
    finally:
        os.killpg(make.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        try:
            make.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
            raise
    assert "karpy dev: stopping" in out.text
    until(lambda: not [p for p in started if alive(p)], 30, "every process make dev started to exit")
    assert not (tmp_path / "dev" / "cluster" / "state.json").exists()
