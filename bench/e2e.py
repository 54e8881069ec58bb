"""End-to-end provisioning benchmark on the local control plane (`python -m bench.e2e`).

Modelled on Karpenter's kwok performance suite, against a real kube-apiserver, kube-scheduler,
kube-controller-manager and kwok, with `karpy controller` on the simulated cloud:
- `1000`: 1,000 pods of 2 Deployments (500 × 500m/1Gi and 500 × 1 CPU/2Gi). Targets: < 60 s,
  >= 0.70 CPU / >= 0.75 memory packing, < 200 MB (Karpenter: 2 min, 0.53 / 0.65, 260 MB);
- `5000`: 5,000 pods of 5 Deployments of mixed shapes, one spread over zones (maxSkew 1,
  DoNotSchedule). Targets: < 60 s, >= 0.85 CPU packing, < 300 MB;
- `nodes100`: 100 pods that each need a node of their own (hostname anti-affinity): 100 identical
  launches, more than CreateFleet's burst of 50, to show what batching and throttling cost.
Prints, per scenario: time from creation to all pods Running, CPU and memory packing (pod
requests over the allocatable of karpy's nodes), node count, the controller's peak memory
(VmHWM), CPU seconds, its deprovisioning passes during the scale-up and their seconds (the
evaluation histogram), the requests its Kubernetes client sent to the apiserver (its
`rest_client_requests_total`) and its API economy: the cloud calls per operation
(`karpy_cloudprovider_api_calls_total`; the simulated cloud counts the EC2 calls the AWS provider
would make) per 1,000 pods launched, and what EC2's rate limits (on in the simulated cloud, as
Karpenter's kwok EC2 has them) cost — the calls refused with RequestLimitExceeded and the seconds
of retry-after they asked for. `--scenarios` also takes a pod count (e.g. `200`): the 1,000-pod
mix scaled to it, for a quick check on a shared machine. Progress is followed with a pod watch, not by listing the pods
over and over (which loaded the 2 cores under test). `--dir` reuses a running cluster; otherwise
one is started and stopped. Each scenario gets a fresh controller and simulated cloud, and starts
once the previous scenario's pods are gone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from controller.core import labels as L
from controller.core.resources import parse_resources
from controller.kube.client import KubeClient, ListResult
from controller.kube.errors import GoneError, KubeError
from controller.kube.resources import NODES, PODS, PROVISIONERS, Kind
from controller.scheduling.pods import pod_requests
from localcluster import LocalCluster, procs

REPO = Path(__file__).resolve().parents[1]
DEPLOYMENTS = Kind("deployments", "apps/v1", "deployments", True)
NAMESPACE = "default"
Workload = tuple[str, int, str, str, bool]  # name, replicas, cpu, memory, zonal spread
SCENARIOS: dict[str, tuple[tuple[Workload, ...], dict[str, float]]] = {
    "1000": (
        (("bench-small", 500, "500m", "1Gi", False), ("bench-large", 500, "1", "2Gi", False)),
        {"seconds": 60.0, "cpu_packing": 0.70, "memory_packing": 0.75, "peak_mb": 200.0},
    ),
    "5000": (
        (
            ("bench-web", 1500, "250m", "512Mi", True),
            ("bench-api", 1000, "500m", "1Gi", False),
            ("bench-worker", 1000, "1", "2Gi", False),
            ("bench-cache", 500, "500m", "4Gi", False),
            ("bench-batch", 1000, "100m", "128Mi", False),
        ),
        {"seconds": 60.0, "cpu_packing": 0.85, "memory_packing": 0.0, "peak_mb": 300.0},
    ),
    # 100 pods that each need a node of their own (hostname anti-affinity): 100 identical launches,
    # past CreateFleet's burst of 50 when made one by one (issue 19, part 7: what batching saves)
    "nodes100": (
        (("bench-node", 100, "1", "1Gi", False),),
        {"seconds": 60.0, "cpu_packing": 0.0, "memory_packing": 0.0, "peak_mb": 200.0},
    ),
}
ONE_PER_NODE = frozenset({"bench-node"})  # workloads whose pods each get a node of their own


def deployment(
    name: str, replicas: int, cpu: str, memory: str, zonal: bool = False, one_per_node: bool = False
) -> dict[str, Any]:
    spread: dict[str, Any] = {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": L.ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": name}},
    }]} if zonal else {}  # fmt: skip
    if one_per_node:
        spread["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": L.HOSTNAME, "labelSelector": {"matchLabels": {"app": name}}},
        ]}}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    **spread,
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                    ],
                },
            },
        },
    }


def proc_stats(pid: int) -> tuple[float, float]:
    """(peak resident MB, CPU seconds) of a process, from /proc."""
    peak_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak_kb = int(line.split()[1])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return peak_kb / 1024, cpu


def packing(kube: KubeClient, names: set[str], node_label: str = L.PROVISIONER_NAME) -> dict[str, float]:
    """Node count and pod requests over the allocatable of the nodes carrying `node_label`."""
    nodes = [n for n in kube.list(NODES).items if node_label in n["metadata"].get("labels", {})]
    alloc = {"cpu": 0, "memory": 0}
    for node in nodes:
        parsed = parse_resources(node["status"].get("allocatable", {}))
        for r in alloc:
            alloc[r] += parsed.get(r, 0)
    node_names = {n["metadata"]["name"] for n in nodes}
    used = {"cpu": 0, "memory": 0}
    for pod in kube.list(PODS).items:
        if pod["spec"].get("nodeName") in node_names and pod["metadata"].get("labels", {}).get("app") in names:
            req = pod_requests(pod["spec"])
            for r in used:
                used[r] += req.get(r, 0)
    return {
        "nodes": float(len(nodes)),
        "cpu_packing": used["cpu"] / alloc["cpu"] if alloc["cpu"] else 0.0,
        "memory_packing": used["memory"] / alloc["memory"] if alloc["memory"] else 0.0,
    }


STAGES = ("created", "unschedulable", "bound", "running")


class PodProgress:
    """Counts the bench pods created and Running from a pod watch (one list, then events), so
    that following progress does not load the apiserver and the machine with a full list of
    thousands of pods every half second. Also records when the watch first saw each pod reach
    each stage (`STAGES`: created; marked `Unschedulable` by kube-scheduler; bound, i.e. its
    `spec.nodeName` set; Running), as `time.monotonic()` values, for `stages()`."""

    def __init__(self, kube: KubeClient, apps: set[str]) -> None:
        self._kube, self._apps = kube, apps
        self._phases: dict[str, str] = {}
        self._stages: dict[str, dict[str, float]] = {}  # pod uid -> stage -> first seen
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-pod-watch", daemon=True)

    def start(self) -> None:
        self._seen(self._kube.list(PODS))  # before the Deployments exist: the watch sees every pod
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def counts(self) -> tuple[int, int]:
        """(pods that exist, pods Running)."""
        with self._lock:
            return len(self._phases), sum(1 for phase in self._phases.values() if phase == "Running")

    def _seen(self, listed: ListResult) -> None:
        with self._lock:
            self._phases = {}
            for pod in listed.items:
                self._apply("ADDED", pod)
        self._rv = listed.resource_version

    def stages(self) -> dict[str, dict[str, float]]:
        """Per pod (uid), the monotonic time at which it first reached each stage it reached."""
        with self._lock:
            return {uid: dict(times) for uid, times in self._stages.items()}

    def _stage(self, uid: str, stage: str, now: float) -> None:
        self._stages.setdefault(uid, {}).setdefault(stage, now)

    def _apply(self, event: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get("app") not in self._apps:
            return
        if event == "DELETED":
            self._phases.pop(meta.get("name", ""), None)
            return
        status = pod.get("status") or {}
        self._phases[meta.get("name", "")] = status.get("phase", "")
        uid, now = str(meta.get("uid", meta.get("name", ""))), time.monotonic()
        self._stage(uid, "created", now)
        if any(c.get("reason") == "Unschedulable" for c in status.get("conditions") or []):
            self._stage(uid, "unschedulable", now)
        if (pod.get("spec") or {}).get("nodeName"):
            self._stage(uid, "bound", now)
        if status.get("phase") == "Running":
            self._stage(uid, "running", now)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for event in self._kube.watch(PODS, self._rv, 30):
                    self._rv = str((event.object.get("metadata") or {}).get("resourceVersion") or self._rv)
                    if event.type != "BOOKMARK":
                        with self._lock:
                            self._apply(event.type, event.object)
                    if self._stop.is_set():
                        return
            except GoneError:
                self._seen(self._kube.list(PODS))
            except (KubeError, OSError):
                self._stop.wait(0.5)


def follow(
    progress: PodProgress, total: int, started: float, timeout: float
) -> tuple[int, float | None, dict[str, float]]:
    """Polls `progress` (every 0.1 s, until `total` pods are Running or `timeout` seconds after
    `started`): (pods Running, seconds until all `total` existed or None, seconds until 50 % and
    90 % were Running as `running_50pct_seconds` / `running_90pct_seconds`)."""
    running, all_created = 0, None
    milestones: dict[str, float] = {}
    while time.monotonic() - started < timeout:
        created, running = progress.counts()
        if all_created is None and created >= total:
            all_created = time.monotonic() - started
        for share in (50, 90):
            if running * 100 >= share * total:
                milestones.setdefault(f"running_{share}pct_seconds", round(time.monotonic() - started, 1))
        if running >= total:
            break
        time.sleep(0.1)
    return running, all_created, milestones


def metrics_text(port: int, timeout: float = 60.0) -> str:
    """A controller's /metrics; a busy controller (20,000 pods on a loaded machine) may take a
    while to answer, so up to `timeout` seconds in all, tried again after a failed attempt."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
                text: str = resp.read().decode()
            return text
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)


def client_requests(port: int, metric: str = "rest_client_requests_total") -> int:
    """The controller's requests to the apiserver (its client's counter `metric`), summed over
    codes and methods."""
    return requests_total(metrics_text(port), metric)


def requests_total(text: str, metric: str = "rest_client_requests_total") -> int:
    """A client's request counter `metric` in a /metrics text, summed over codes and methods."""
    return int(summed(text, metric))


def summed(text: str, metric: str) -> float:
    """A labelled metric's samples in a /metrics text, summed over its labels."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(metric + "{"))


def deprovisioning_passes(text: str) -> dict[str, Any]:
    """How many deprovisioning passes ran during the scale-up and their seconds in all (its
    evaluation histogram): what consolidation took from the controller meanwhile."""
    family = "karpenter_deprovisioning_evaluation_duration_seconds"
    return {
        "deprovisioning_passes": int(summed(text, family + "_count")),
        "deprovisioning_pass_seconds": round(summed(text, family + "_sum"), 1),
    }


def by_operation(text: str, family: str) -> dict[str, float]:
    """A `karpy_cloudprovider_api_*_total{provider,operation}` family as operation → value."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(family + "{"):
            labels, value = line[len(family) + 1 :].rsplit("} ", 1)
            operation = next(p.split("=", 1)[1].strip('"') for p in labels.split(",") if p.startswith("operation="))
            out[operation] = out.get(operation, 0.0) + float(value)
    return out


def api_economy(text: str, pods: int) -> dict[str, Any]:
    """Cloud calls per 1,000 pods launched, and what throttling cost."""
    calls = by_operation(text, "karpy_cloudprovider_api_calls_total")
    throttled = by_operation(text, "karpy_cloudprovider_api_throttled_total")
    seconds = by_operation(text, "karpy_cloudprovider_api_throttle_seconds_total")
    per_1000 = {op: round(n * 1000 / pods, 1) for op, n in sorted(calls.items())} if pods else {}
    return {
        "cloud_calls": {op: int(n) for op, n in sorted(calls.items())},
        "cloud_calls_per_1000_pods": per_1000,
        "cloud_calls_per_1000_pods_total": round(sum(calls.values()) * 1000 / pods, 1) if pods else 0.0,
        "cloud_throttled": {op: int(n) for op, n in sorted(throttled.items())},
        "cloud_throttle_seconds": round(sum(seconds.values()), 1),
    }


def workloads_of(scenario: str) -> tuple[Workload, ...]:
    """A named scenario's workloads, or the 1,000-pod mix scaled to `scenario` pods."""
    if scenario in SCENARIOS:
        return SCENARIOS[scenario][0]
    total = int(scenario)
    small = total // 2
    return (("bench-small", small, "500m", "1Gi", False), ("bench-large", total - small, "1", "2Gi", False))


def scenario_arg(value: str) -> str:
    if value in SCENARIOS or (value.isdigit() and 1 <= int(value) <= 5000):
        return value
    raise argparse.ArgumentTypeError(f"{value!r}: one of {', '.join(sorted(SCENARIOS))} or a pod count 1-5000")


def run(cluster: LocalCluster, work: Path, scenario: str) -> dict[str, Any]:
    workloads = workloads_of(scenario)
    kube = KubeClient(str(cluster.kubeconfig))
    port = procs.free_port()
    argv = [
        sys.executable, "-m", "karpy", "controller", "--kubeconfig", str(cluster.kubeconfig),
        "--simulated-db", str(work / f"cloud-{scenario}.db"), "--cluster-name", "bench",
        "--leader-election-name", f"karpy-bench-{scenario}",
        "--http-host", "127.0.0.1", "--http-port", str(port), "--log-format", "text",
    ]  # fmt: skip
    ctrl = procs.start(f"controller-{scenario}", argv, work, die_with_parent=True, cwd=REPO)
    names = {w[0] for w in workloads}
    try:
        url = f"http://127.0.0.1:{port}/api/v1/status"

        def ready() -> bool:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    status = json.loads(resp.read())
            except OSError:
                return False
            return bool(status.get("synced") and status.get("leader"))

        procs.wait_until("karpy controller ready", ready, 60, [ctrl])
        prov = {
            "apiVersion": "karpenter.sh/v1alpha5",
            "kind": "Provisioner",
            "metadata": {"name": "default"},
            "spec": {},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(prov))
        progress = PodProgress(kube, names)
        progress.start()
        started = time.monotonic()
        for name, replicas, cpu, memory, zonal in workloads:
            doc = deployment(name, replicas, cpu, memory, zonal, one_per_node=name in ONE_PER_NODE)
            kube.create(DEPLOYMENTS, doc, NAMESPACE)
        total = sum(w[1] for w in workloads)
        running, all_created, milestones = follow(progress, total, started, 300)
        progress.stop()
        elapsed = time.monotonic() - started
        peak_mb, cpu_seconds = proc_stats(ctrl.pid)
        result: dict[str, Any] = {"scenario": scenario, "pods": total, "running": running, "seconds": round(elapsed, 1)}
        # kube-controller-manager's ReplicaSet controller creates the pods (client QPS-limited)
        result["pods_created_seconds"] = round(all_created, 1) if all_created is not None else None
        result.update(milestones)
        result.update({k: round(v, 3) for k, v in packing(kube, names).items()})
        result.update(peak_mb=round(peak_mb, 1), controller_cpu_seconds=round(cpu_seconds, 1))
        text = metrics_text(port)
        result["apiserver_requests"] = requests_total(text)
        result.update(deprovisioning_passes(text))
        result.update(api_economy(text, running))
        return result
    finally:
        for name in names:
            with contextlib.suppress(KubeError):
                kube.delete(DEPLOYMENTS, name, NAMESPACE)
        with contextlib.suppress(KubeError):
            kube.delete(PROVISIONERS, "default")
        procs.stop(ctrl)
        for node in kube.list(NODES).items:
            if L.PROVISIONER_NAME in node["metadata"].get("labels", {}):
                name = node["metadata"]["name"]
                try:
                    kube.patch(NODES, name, {"metadata": {"finalizers": None}})
                    kube.delete(NODES, name)
                except KubeError:
                    pass
        gone_by = time.monotonic() + 120  # the next scenario starts on a quiet cluster
        while time.monotonic() < gone_by and any(
            p["metadata"].get("labels", {}).get("app") in names for p in kube.list(PODS).items
        ):
            time.sleep(2)


def report(result: dict[str, Any]) -> bool:
    targets = SCENARIOS.get(result["scenario"], SCENARIOS["1000"])[1]
    ok = bool(
        result["running"] == result["pods"]
        and result["seconds"] < targets["seconds"]
        and result["cpu_packing"] >= targets["cpu_packing"]
        and result["memory_packing"] >= targets["memory_packing"]
        and result["peak_mb"] < targets["peak_mb"]
    )
    memory_target = f" (>= {targets['memory_packing']})" if targets["memory_packing"] else ""
    print(
        f"e2e provisioning {result['scenario']}: {result['running']}/{result['pods']} pods Running in "
        f"{result['seconds']}s (target < {targets['seconds']:.0f}s) on {int(result['nodes'])} nodes; "
        f"packing cpu {result['cpu_packing']:.2f} (>= {targets['cpu_packing']}), "
        f"memory {result['memory_packing']:.2f}{memory_target}; controller peak {result['peak_mb']} MB "
        f"(< {targets['peak_mb']:.0f}), cpu {result['controller_cpu_seconds']}s, "
        f"{result['apiserver_requests']} apiserver requests, {result['deprovisioning_passes']} deprovisioning "
        f"passes ({result['deprovisioning_pass_seconds']}s); "
        f"cloud calls per 1,000 pods {result['cloud_calls_per_1000_pods_total']} "
        f"({', '.join(f'{op} {n}' for op, n in result['cloud_calls_per_1000_pods'].items()) or 'none'}), "
        f"throttled {sum(result['cloud_throttled'].values())} "
        f"({', '.join(f'{op} {n}' for op, n in result['cloud_throttled'].items()) or 'none'}), "
        f"{result['cloud_throttle_seconds']}s of retry-after"
    )
    print(json.dumps(result), flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="cluster directory of a running `karpy cluster up` to reuse")
    parser.add_argument(
        "--scenarios", nargs="+", type=scenario_arg, default=sorted(SCENARIOS),
        help=f"{', '.join(sorted(SCENARIOS))} or a pod count (the 1,000-pod mix scaled to it)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory(prefix="karpy-bench-") as tmp:
        work = Path(tmp)
        cluster = LocalCluster(Path(args.dir)) if args.dir else LocalCluster(work / "cluster")
        if not args.dir:
            cluster.up(timeout=180)
        try:
            for scenario in args.scenarios:
                ok = report(run(cluster, work, scenario)) and ok
        finally:
            if not args.dir:
                cluster.down()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
