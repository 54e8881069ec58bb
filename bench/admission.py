"""Admission throughput and latency: in-process and through gunicorn over TLS (`make bench`).

Prints reviews per second and p50/p99 latency for a mix of Provisioner reviews (valid, needing
defaults, invalid). Targets: p99 < 5 ms in-process; >= 500 reviews/s over TLS with 2 workers.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import requests

from tests.support.procs import free_port, karpy, stop, wait_until
from webapp import create_app


def _review(i: int) -> bytes:
    specs: list[dict[str, Any]] = [
        {},
        {
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}],
            "limits": {"resources": {"cpu": "1000", "memory": "1000Gi"}},
            "ttlSecondsAfterEmpty": 30,
        },
        {
            "ttlSecondsAfterEmpty": 30,
            "consolidation": {"enabled": True},
            "kubeletConfiguration": {"evictionHard": {"memory.available": "5%"}, "maxPods": 20},
        },
        {
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p3.8xlarge"]}],
        },
    ]
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": f"bench-{i}",
            "operation": "CREATE",
            "kind": {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
            "object": {
                "apiVersion": "karpenter.sh/v1alpha5",
                "kind": "Provisioner",
                "metadata": {"name": f"p{i % 7}"},
                "spec": specs[i % len(specs)],
            },
        },
    }
    return json.dumps(body).encode()


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2] * 1000, ordered[int(len(ordered) * 0.99)] * 1000


def in_process(n: int = 4000) -> None:
    client = create_app().test_client()
    bodies = [_review(i) for i in range(64)]
    latencies = []
    start = time.perf_counter()
    for i in range(n):
        path = "/webhooks/mutate" if i % 2 else "/webhooks/validate"
        t0 = time.perf_counter()
        resp = client.post(path, data=bodies[i % 64], content_type="application/json")
        latencies.append(time.perf_counter() - t0)
        assert resp.status_code == 200
    elapsed = time.perf_counter() - start
    p50, p99 = _percentiles(latencies)
    print(
        f"admission in-process: {n / elapsed:,.0f} reviews/s  p50 {p50:.2f} ms  p99 {p99:.2f} ms  (target p99 < 5 ms)"
    )


def _client(args: tuple[str, str, float, int]) -> list[float]:
    url, ca, seconds, seed = args
    session = requests.Session()
    bodies = [_review(seed * 100 + i) for i in range(32)]
    latencies = []
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        resp = session.post(
            f"{url}/webhooks/{'mutate' if i % 2 else 'validate'}",
            data=bodies[i % 32],
            headers={"Content-Type": "application/json"},
            timeout=10,
            verify=ca,
        )
        latencies.append(time.perf_counter() - t0)
        assert resp.status_code == 200
        i += 1
    return latencies


def over_tls(seconds: float = 8.0, clients: int = 4, workers: int = 2) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp) / "certs"
        subprocess.run(
            [sys.executable, "-m", "karpy", "certs", "generate", "--dir", str(certs), "--host", "127.0.0.1"],
            check=True,
            capture_output=True,
        )
        port = free_port()
        proc = karpy(
            ["webapp", "--cert-dir", str(certs), "--port", str(port), "--host", "127.0.0.1", "--workers", str(workers)],
            Path(tmp) / "webapp.log",
        )
        url, ca = f"https://127.0.0.1:{port}", str(certs / "ca.crt")
        try:
            wait_until(lambda: requests.get(f"{url}/healthz", verify=ca, timeout=1).ok, 30, "webapp", proc)
            with ProcessPoolExecutor(clients) as pool:
                results = list(pool.map(_client, [(url, ca, seconds, c) for c in range(clients)]))
        finally:
            stop(proc)
    latencies = [x for r in results for x in r]
    p50, p99 = _percentiles(latencies)
    print(
        f"admission over TLS ({workers} gunicorn workers, {clients} keep-alive clients on the same 2 cores): "
        f"{len(latencies) / seconds:,.0f} reviews/s  p50 {p50:.2f} ms  p99 {p99:.2f} ms  (target >= 500 reviews/s)"
    )
    print(f"  mean latency {statistics.mean(latencies) * 1000:.2f} ms over {len(latencies)} reviews")


if __name__ == "__main__":
    in_process()
    over_tls()
