"""`karpy dev`: the main job on one machine, on the simulated cloud.

Starts karpy's webapp over TLS with freshly generated certificates, the local control plane
(`localcluster`), registers the webhooks, applies the default Provisioner and a small sample
Deployment, starts the controller with the simulated cloud provider, prints the kubeconfig, the
webapp's URL and a `kubectl scale` one-liner to try, and stops every process it started on
Ctrl-C (SIGINT) or SIGTERM. tests/karpy/test_dev.py runs it through `make dev`.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import requests

DEFAULT_PROVISIONER = """\
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot", "on-demand"]
  limits:
    resources:
      cpu: "1000"
      memory: 1000Gi
  consolidation:
    enabled: true
"""

SAMPLE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sample
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: sample}
  template:
    metadata:
      labels: {app: sample}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: 500m, memory: 512Mi}
"""


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "karpy", *args],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_healthy(url: str, ca: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process serving {url} exited with code {proc.returncode}")
        try:
            if requests.get(f"{url}/healthz", verify=str(ca), timeout=1).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy in {timeout:.0f}s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def run(args: argparse.Namespace) -> int:
    from certs import generate
    from localcluster.binaries import BuildError
    from localcluster.cluster import ClusterError, LocalCluster
    from localcluster.procs import free_port

    base = Path(args.dir).resolve()
    base.mkdir(parents=True, exist_ok=True)
    logs = base / "logs"
    logs.mkdir(exist_ok=True)
    certs = generate(base / "certs", ["127.0.0.1", "localhost"])
    url = f"https://127.0.0.1:{args.port}"
    procs: list[subprocess.Popen[bytes]] = []
    cluster = LocalCluster(base / "cluster")
    stopping = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    # Ctrl-C too, explicitly: a process started in the background by a shell without job control
    # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt for it.
    signal.signal(signal.SIGINT, on_signal)
    try:
        print("karpy dev: starting the webhook server", flush=True)
        controller_port = free_port()
        webapp = _start(
            ["webapp", "--cert-dir", str(base / "certs"), "--port", str(args.port), "--host", "127.0.0.1",
             "--kubeconfig", str(cluster.kubeconfig), "--controller-url", f"http://127.0.0.1:{controller_port}"],
            logs / "webapp.log",
        )  # fmt: skip
        procs.append(webapp)
        _wait_healthy(url, certs.ca_cert, webapp)
        print("karpy dev: starting the local control plane (builds the binaries the first time)", flush=True)
        if cluster.status().running:
            cluster.down()
        state = cluster.up(timeout=180, detach=False)
        cluster.install_webhooks(url, certs.ca_cert.read_bytes())
        cluster.kubectl("apply", "-f", "-", input=DEFAULT_PROVISIONER)
        cluster.kubectl("apply", "-f", "-", input=SAMPLE_DEPLOYMENT)
        controller = _start(
            [
                "controller",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--cloud-provider",
                "simulated",
                "--simulated-db",
                str(base / "simulated-cloud.sqlite"),
                "--http-host",
                "127.0.0.1",
                "--http-port",
                str(controller_port),
            ],
            logs / "controller.log",
        )
        procs.append(controller)
        print("karpy dev: controller started on the simulated cloud", flush=True)
        kubectl = cluster.bin_dir / "kubectl"
        print(
            f"\nkarpy is running (cluster ready in {state.ready_seconds:.1f}s)\n"
            f"  kubeconfig: {cluster.kubeconfig}\n"
            f"  dashboard:  {url}/  (read-only; TLS, CA {certs.ca_cert}; also serves the webhooks)\n"
            f"  try:        KUBECONFIG={cluster.kubeconfig} {kubectl} scale deployment/sample --replicas=10\n"
            f"              KUBECONFIG={cluster.kubeconfig} {kubectl} get nodes,pods -o wide\n"
            f"  logs:       {logs} and {cluster.dir / 'logs'}\n"
            "Press Ctrl-C to stop everything.",
            flush=True,
        )
        while not stopping:
            for proc in procs:
                if proc.poll() is not None:
                    print(f"karpy dev: a process exited with code {proc.returncode}; see {logs}", file=sys.stderr)
                    return 1
            time.sleep(0.5)
        return 0
    except KeyboardInterrupt:
        return 0
    except (ClusterError, BuildError, RuntimeError, OSError) as err:
        print(f"karpy dev: {err}", file=sys.stderr)
        return 1
    finally:
        print("karpy dev: stopping", flush=True)
        for proc in reversed(procs):
            _stop(proc)
        cluster.down()


def register(subparsers: Any) -> None:
    dev = subparsers.add_parser("dev", help="local control plane + webhooks + controller on the simulated cloud")
    dev.add_argument("--dir", default=".dev", help="where certificates, cluster data and logs go (%(default)s)")
    dev.add_argument("--port", type=int, default=8443, help="webhook port (%(default)s)")
    dev.set_defaults(func=run)
