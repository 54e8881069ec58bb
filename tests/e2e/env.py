"""The one end-to-end environment: what every e2e test drives, on the real local control plane.

- `Kube` — a thin kubectl helper over a `LocalCluster`; `WebhookServer` — karpy's webhook server
  as the `webhook_server` fixture runs it;
- `KarpyEnv` (the `karpy` fixture, or `karpy_env(cluster, tmp_path)` on a test's own cluster) —
  a fresh namespace, a fresh simulated-cloud SQLite file, and `karpy controller` processes
  against the cluster (text logs in the test's tmp dir, its own Lease name, the HTTP server on a
  free port) that a test starts, kills (SIGKILL) or stops (SIGTERM). Teardown deletes what the
  test made and strips finalizers from any node left over, so tests do not leak into each other.
  Assertions read the API server through karpy's own `KubeClient` (fast) and the cloud through
  `SimulatedCloudProvider` on the same file;
- `FAST` — the flags that shorten deprovisioning's timings (validation wait, poll period,
  consolidated reset, job interval) so a test takes seconds. A new node is nominated, hence left
  alone by deprovisioning, for max(2 × batch max, 10 s) (spec §5.10): `--batch-max-seconds 5`
  brings that to its 10 s floor.
Waiting is `tests.support.poll.until` (poll state with a deadline), never a sleep. The fixtures
are in `tests/e2e/conftest.py`, shared by every e2e directory.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.clock import SystemClock
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.kube.client import KubeClient
from controller.kube.errors import KubeError, NotFoundError, TooManyRequestsError
from controller.kube.resources import NODES, PODS, PROVISIONERS, Kind
from localcluster import LocalCluster, probes, procs
from tests.support.poll import until

REPO = Path(__file__).resolve().parents[2]
_counter = itertools.count(1)
DEPLOYMENTS = Kind("deployments", "apps/v1", "deployments", True)
NAMESPACES = Kind("namespaces", "v1", "namespaces", False)


@dataclass
class Controller:
    proc: procs.Proc
    port: int
    identity: str

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
            body = resp.read()
        return json.loads(body) if path.startswith("/api/") else body.decode()

    def reconciles(self, controller: str) -> float:
        """How many passes `controller` (its `name`: "provisioning", "deprovisioning",
        "node.termination", …) has completed, from `controller_runtime_reconcile_total`."""
        wanted = ("controller_runtime_reconcile_total{", f'controller="{controller}"', 'result="success"')
        for line in str(self.get("/metrics")).splitlines():
            if line.startswith(wanted[0]) and wanted[1] in line and wanted[2] in line:
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def status(self) -> dict[str, Any]:
        try:
            result: dict[str, Any] = self.get("/api/v1/status")
            return result
        except OSError:
            return {}


@dataclass
class KarpyEnv:
    cluster: LocalCluster
    kube: KubeClient
    namespace: str
    db: Path
    lease: str
    tmp: Path
    cloud: SimulatedCloudProvider
    controllers: list[Controller] = field(default_factory=list)

    # processes -------------------------------------------------------------------------------

    def start(self, identity: str = "replica-a", *args: str, wait_ready: bool = True) -> Controller:
        port = procs.free_port()
        argv = [
            sys.executable, "-m", "karpy", "controller",
            "--kubeconfig", str(self.cluster.kubeconfig),
            "--simulated-db", str(self.db),
            "--cluster-name", self.namespace,
            "--leader-election-id", identity,
            "--leader-election-name", self.lease,
            "--http-host", "127.0.0.1", "--http-port", str(port),
            "--log-format", "text",
            *args,
        ]  # fmt: skip
        proc = procs.start(f"controller-{identity}", argv, self.tmp, die_with_parent=True, cwd=REPO)
        ctrl = Controller(proc, port, identity)
        self.controllers.append(ctrl)
        if wait_ready:
            procs.wait_until(f"controller {identity} leader and synced", lambda: self._ready(ctrl), 60, [proc])
        return ctrl

    def _ready(self, ctrl: Controller) -> bool:
        status = ctrl.status()
        return bool(status.get("synced") and status.get("leader"))

    def passes(self, controller: str, count: int = 3, timeout: float = 60.0) -> None:
        """Wait until the running controller process has completed `count` more passes of
        `controller`: what a test waits for before saying that something did not happen."""
        ctrl = self.controllers[-1]
        start = ctrl.reconciles(controller)
        until(lambda: ctrl.reconciles(controller) >= start + count, timeout, f"{count} more {controller} passes")

    def kill(self, ctrl: Controller) -> None:
        procs.stop(ctrl.proc, grace_seconds=0)

    def stop(self, ctrl: Controller) -> None:
        procs.stop(ctrl.proc, grace_seconds=20)

    # cluster helpers -------------------------------------------------------------------------

    def apply(self, manifest: dict[str, Any] | str) -> None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        self.cluster.kubectl("apply", "-f", "-", input=text)

    def provisioner(self, name: str = "default", **spec: Any) -> None:
        self.apply(
            {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": name}, "spec": spec}
        )

    def deployment(self, name: str, replicas: int, cpu: str = "1", memory: str = "1Gi", **pod: Any) -> None:
        self.apply(self.deployment_manifest(name, replicas, cpu, memory, **pod))

    def deployment_manifest(
        self, name: str, replicas: int, cpu: str = "1", memory: str = "1Gi", **pod: Any
    ) -> dict[str, Any]:
        meta = pod.pop("metadata", {})
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}, **meta},
                    "spec": {
                        "terminationGracePeriodSeconds": 0,
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            }
                        ],
                        **pod,
                    },
                },
            },
        }

    def scale(self, name: str, replicas: int) -> None:
        self.kube.patch(DEPLOYMENTS, name, {"spec": {"replicas": replicas}}, self.namespace)

    def pods(self, app: str | None = None) -> list[dict[str, Any]]:
        items = self.kube.list(PODS).items
        return [
            p for p in items
            if p["metadata"]["namespace"] == self.namespace
            and (app is None or p["metadata"].get("labels", {}).get("app") == app)
        ]  # fmt: skip

    def running(self, app: str | None = None) -> list[dict[str, Any]]:
        return [p for p in self.pods(app) if p.get("status", {}).get("phase") == "Running"]

    def nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.kube.list(NODES).items if L.PROVISIONER_NAME in n["metadata"].get("labels", {})]

    def node_gone(self, name: str) -> bool:
        try:
            self.kube.get(NODES, name)
        except NotFoundError:
            return True
        return False

    def events(self, reason: str) -> list[dict[str, Any]]:
        out = []
        for ns in (self.namespace, "default"):
            obj = self.kube._request("GET", f"/api/v1/namespaces/{ns}/events")
            out += [e for e in obj.get("items", []) if e.get("reason") == reason]
        return out

    def consistent(self) -> str:
        """'' when every instance has a Node and every karpy Node an instance; else what is wrong."""
        instances = {i.provider_id for i in self.cloud.list()}
        nodes = {n["spec"].get("providerID") for n in self.nodes()}
        problems = []
        if instances - nodes:
            problems.append(f"instances without nodes: {sorted(instances - nodes)}")
        if nodes - instances:
            problems.append(f"nodes without instances: {sorted(nodes - instances)}")
        return "; ".join(problems)

    # teardown --------------------------------------------------------------------------------

    def _namespace_gone(self) -> bool:
        try:
            self.kube.get(NAMESPACES, self.namespace)
        except NotFoundError:
            return True
        return False

    def cleanup(self) -> None:
        # The namespace goes first, while nodes (and kwok) still run its pods, so no pending pod of
        # this test is left for the next test's controller to provision for.
        _ignore(lambda: self.kube.delete(NAMESPACES, self.namespace))
        self._force_delete_orphans()
        with contextlib.suppress(pytest.fail.Exception):  # a namespace slow to go is not the test's failure
            until(self._namespace_gone, 60, f"namespace {self.namespace} to be deleted", interval=0.5)
        for ctrl in self.controllers:
            procs.stop(ctrl.proc, grace_seconds=5)
        for name in [p["metadata"]["name"] for p in self._listed(PROVISIONERS)]:
            _ignore(functools.partial(self.kube.delete, PROVISIONERS, name))
        for node in self.nodes():
            name = node["metadata"]["name"]
            _ignore(functools.partial(self.kube.patch, NODES, name, {"metadata": {"finalizers": None}}))
            _ignore(functools.partial(self.kube.delete, NODES, name))

    def _force_delete_orphans(self) -> None:
        """Force-delete this test's pods bound to a node that no longer exists (a DaemonSet's pod on
        a node karpy removed): no kubelet is left to confirm their deletion, so the namespace waits
        for kube-controller-manager's pod GC, which takes such a pod only after a 40 s quarantine."""
        with contextlib.suppress(KubeError):
            alive = {n["metadata"]["name"] for n in self.kube.list(NODES).items}
            orphans = [p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName") not in (None, *alive)]
            if orphans:
                self.cluster.kubectl("delete", "pods", "-n", self.namespace, "--force", "--grace-period=0",
                                     "--ignore-not-found", "--wait=false", *orphans, check=False)  # fmt: skip

    def _listed(self, kind: Kind) -> list[dict[str, Any]]:
        """`kind`'s objects; an apiserver still initializing that kind's watch cache (a CRD just
        established on a busy machine) answers 429 "storage is (re)initializing" for a moment."""
        found: list[dict[str, Any]] = []

        def listed() -> bool:
            try:
                found[:] = self.kube.list(kind).items
            except TooManyRequestsError:
                return False
            return True

        until(listed, 60, f"{kind.name} listed", interval=0.5)
        return found


def _ignore(call: Callable[[], Any]) -> None:
    with contextlib.suppress(NotFoundError, KubeError):
        call()


@contextlib.contextmanager
def karpy_env(cluster: LocalCluster, tmp_path: Path) -> Iterator[KarpyEnv]:
    """A `KarpyEnv` on `cluster` (a fresh namespace, cloud file and Lease), cleaned up afterwards."""
    n = next(_counter)
    namespace = f"e2e-karpy-{n}-{int(time.time()) % 100000}"
    kube = KubeClient(str(cluster.kubeconfig))
    kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    db = tmp_path / "cloud.db"
    env = KarpyEnv(
        cluster=cluster,
        kube=kube,
        namespace=namespace,
        db=db,
        lease=f"karpy-{namespace}",
        tmp=tmp_path,
        cloud=SimulatedCloudProvider(db, SystemClock(), cluster=namespace),
    )
    try:
        yield env
    finally:
        env.cleanup()


@dataclass(frozen=True)
class WebhookServer:
    url_base: str
    ca_crt: Path
    proc: procs.Proc


class Kube:
    """A thin kubectl helper over one `LocalCluster`."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    def run(self, *args: str, input: str | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, input=input, check=check)

    def apply(self, manifest: str | dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.run("apply", *args, "-f", "-", input=text)

    def get(self, *args: str) -> Any:
        return json.loads(self.cluster.kubectl("get", *args, "-o", "json").stdout)

    def delete(self, *args: str) -> None:
        self.cluster.kubectl("delete", "--ignore-not-found", "--wait=false", *args)


FAST = (
    "--batch-max-seconds", "5",
    "--deprovisioning-interval-seconds", "0.5",
    "--validation-wait-seconds", "2",
    "--poll-period-seconds", "1",
    "--consolidated-reset-seconds", "5",
    "--replacement-timeout-seconds", "60",
)  # fmt: skip


@contextlib.contextmanager
def webhook_server_on(cluster: LocalCluster, tmp: Path) -> Iterator[WebhookServer]:
    """`karpy webapp` over TLS (certificates of its own in `tmp`) with its webhooks registered on
    `cluster`'s apiserver; unregistered and stopped afterwards."""
    certs = tmp / "certs"
    karpy = [sys.executable, "-m", "karpy"]
    subprocess.run(
        [*karpy, "certs", "generate", "--dir", str(certs), "--host", "127.0.0.1", "--host", "localhost"],
        check=True,
        capture_output=True,
        cwd=REPO,
    )
    ca_crt = certs / "ca.crt"
    port = procs.free_port()
    url_base = f"https://127.0.0.1:{port}"
    proc = procs.start(
        "karpy-webapp",
        [*karpy, "webapp", "--cert-dir", str(certs), "--port", str(port), "--host", "127.0.0.1"],
        tmp,
        die_with_parent=True,
        cwd=REPO,
    )
    try:
        ctx = ssl.create_default_context(cafile=str(ca_crt))
        procs.wait_until("karpy webapp /healthz", lambda: probes.ok(url_base + "/healthz", ctx), 60, [proc])
        cluster.install_webhooks(url_base, ca_crt.read_bytes())
        yield WebhookServer(url_base=url_base, ca_crt=ca_crt, proc=proc)
    finally:
        try:
            cluster.uninstall_webhooks()
        finally:
            procs.stop(proc)
