"""Karpenter's kwok provider and karpy end to end, same pods (`make bench-karpenter-e2e`).

Each autoscaler in turn gets a fresh local control plane (`localcluster.LocalCluster`: etcd,
kube-apiserver, scheduler, controller manager, kwok) and the same Deployments, created together:
N pods (1,000 / 5,000 / 20,000, `--pods`) of five shapes, one spread over zones (maxSkew 1,
DoNotSchedule) — the shapes of `bench.e2e`'s 5,000-pod scenario, scaled. Then every Deployment
is scaled to half, and then to zero.
- Karpenter: the controller binary of `sigs.k8s.io/karpenter/kwok` at the version pinned in
  `bench/karpenter/` (built once by `run.sh --build-kwok`), out of cluster with the cluster's
  kubeconfig, after its CRDs (NodePool, NodeClaim, KWOKNodeClass, from the pinned module) are
  applied; a KWOKNodeClass and a NodePool (amd64, linux, on-demand, WhenEmptyOrUnderutilized
  after 0 s, Karpenter's default disruption budget of 10 % of the nodes).
- karpy: `karpy controller` on the simulated cloud with `--simulated-catalog` set to the same
  instance types (the pinned module's `kwok/cloudprovider/instance_types.json`, converted as
  Karpenter's kwok provider reads it: 100m CPU / 10Mi kube-reserved, 110 pods unless given) and
  a Provisioner with the same requirements and consolidation enabled.
Both make nodes labelled `kwok.x-k8s.io/node: fake`, which the cluster's kwok runs.

Printed per autoscaler: seconds until 50 % / 90 % / 100 % of the pods are Running; nodes, $/h
(each node's offering price in the shared catalog) and CPU/memory packing when all are Running;
the zonal spread's skew (max - min Running pods over the zones of the nodes); after scaling to
half, the seconds until the node set stops changing (`--quiet` seconds without a change), the
nodes and $/h then, and that $/h over karpy's own fresh provisioning of the remaining pods
(`fresh_price`); after scaling to zero, the seconds until no node is left; the controller's
peak memory (VmHWM) and CPU seconds over the whole run; the requests its own client sent
(karpy's `rest_client_requests_total`, Karpenter's `client_go_request_total`) and the
apiserver's `apiserver_request_total` delta (every client: the scheduler, controller manager and
kwok work in proportion to what the autoscaler does).

Where the time to Running goes (`stages`): from the pod watch, when each pod was created (the
ReplicaSets), marked `Unschedulable` by kube-scheduler, bound and Running — per stage the count,
the seconds until half and all of those pods got there, and the rate over the middle 80 % of
them — and the CPU seconds each process (the controller, etcd, kube-apiserver, kube-scheduler,
kube-controller-manager, kwok) spent until all pods were Running. `--running-timeout` caps the
wait for Running (then the Running share reached is reported and the scale-downs are skipped);
`--settle-timeout` caps each scale-down's wait; `--no-scale-down` stops at all Running;
`--webhooks` runs karpy with its webhook server registered as the chart installs it (its pod
webhook gates the zonal-spread pods, which karpy then pins to their zone: issue 17). `--out
DIR` keeps each run's result, stage times, the controller's log, its and the apiserver's /metrics
at all-Running and, with `--py-spy BIN`, a py-spy profile (raw collapsed stacks) of karpy's
controller over the same span.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.e2e import (
    DEPLOYMENTS,
    NAMESPACE,
    STAGES,
    PodProgress,
    client_requests,
    deployment,
    follow,
    metrics_text,
    packing,
    proc_stats,
)
from bench.sidebyside import machine
from controller.cloudprovider.simulated.catalog import catalog_from_json
from controller.core import labels as L
from controller.kube.client import Kube, KubeClient
from controller.kube.resources import NODES, PODS
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput
from controller.simulate.inputs import read_inputs
from localcluster import LocalCluster, probes, procs

REPO = Path(__file__).resolve().parents[1]
RUN_SH = REPO / "bench" / "karpenter" / "run.sh"
KWOK_NODE_LABEL = "kwok.x-k8s.io/node"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
DISRUPTED_TAINT = "karpenter.sh/disrupted"  # Karpenter v1's taint on a node it is disrupting
# name, share of the pods, cpu, memory, zonal spread (bench.e2e's 5,000-pod scenario)
SHAPES = (
    ("bench-web", 0.3, "250m", "512Mi", True),
    ("bench-api", 0.2, "500m", "1Gi", False),
    ("bench-worker", 0.2, "1", "2Gi", False),
    ("bench-cache", 0.1, "500m", "4Gi", False),
    ("bench-batch", 0.2, "100m", "128Mi", False),
)
SIZES = (1000, 5000, 20000, 40000)
REQUIREMENTS = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
    # karpy's (Karpenter AWS v0.31's) defaulting adds instance-category c/m/r and generation > 2
    # to a Provisioner that constrains no instance shape; kwok's types have neither label
    {"key": L.INSTANCE_TYPE, "operator": "Exists"},
]
CRDS = (
    "pkg/apis/crds/karpenter.sh_nodepools.yaml",
    "pkg/apis/crds/karpenter.sh_nodeclaims.yaml",
    "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
)
KWOK_TYPES = "kwok/cloudprovider/instance_types.json"


def kwok_catalog(instance_types: list[dict[str, Any]]) -> dict[str, Any]:
    """Karpenter kwok's instance types (its instance_types.json) in karpy's catalog format, as
    its provider builds them: the resources given (pods 110 when absent), kube-reserved 100m CPU
    and 10Mi memory, one offering per zone and capacity type. Labels: instance type, arch and OS
    (karpy's types carry the well-known keys; no bench pod selects kwok's `karpenter.kwok.sh/*`)."""
    out = []
    for it in instance_types:
        name, resources = it["name"], dict(it["resources"])
        resources.setdefault("pods", "110")
        labels = {L.INSTANCE_TYPE: name, L.ARCH: it["architecture"], L.OS: it["operatingSystems"][0]}
        offerings = []
        for off in it["offerings"]:
            reqs = {r["key"]: r["values"][0] for r in off["Requirements"]}
            offerings.append(
                {"zone": reqs[L.ZONE], "capacityType": reqs[L.CAPACITY_TYPE], "price": off["Price"], "available": True}
            )
        out.append(
            {
                "name": name,
                "capacity": resources,
                "overhead": {"cpu": "100m", "memory": "10Mi"},
                "labels": labels,
                "offerings": offerings,
            }
        )
    return {"instanceTypes": out}


def workloads(pods: int) -> list[tuple[str, int, str, str, bool]]:
    return [(name, round(pods * share), cpu, memory, zonal) for name, share, cpu, memory, zonal in SHAPES]


def apiserver_metrics(cluster: LocalCluster) -> str:
    state = cluster.state
    if state is None:
        raise RuntimeError("the local cluster is not up")
    status, body = probes.get(state.server + "/metrics", probes.admin_context(cluster.pki), timeout=10)
    if status != 200:
        raise RuntimeError(f"apiserver /metrics answered {status}")
    return body.decode()


def apiserver_requests(cluster: LocalCluster) -> int:
    """The apiserver's `apiserver_request_total`, summed (every client, verb and code)."""
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in apiserver_metrics(cluster).splitlines()
            if line.startswith("apiserver_request_total{")
        )
    )


def process_cpu(cluster: LocalCluster, ctrl: procs.Proc) -> dict[str, float]:
    """CPU seconds so far of the controller and of each control-plane process."""
    state = cluster.state
    out = {"controller": proc_stats(ctrl.pid)[1]}
    for proc in state.procs if state is not None else []:
        try:
            out[proc.name] = proc_stats(proc.pid)[1]
        except OSError:
            continue
    return out


def stage_summary(stages: dict[str, dict[str, float]], started: float, total: int) -> dict[str, dict[str, Any]]:
    """Per stage: pods that reached it, seconds from `started` until the first, half (of `total`)
    and all of `total` did (None: not reached), and pods/s over the middle 80 % of them; then,
    per step between two stages, the median / 90th percentile / worst seconds a pod took
    (`created→unschedulable`: kube-scheduler's queue and first attempt; `unschedulable→bound`:
    the autoscaler's batch, decision, node and binding (or kube-scheduler's next attempt);
    `bound→running`: kwok)."""
    out: dict[str, dict[str, Any]] = {}
    for stage in STAGES:
        ts = sorted(t[stage] - started for t in stages.values() if stage in t)
        row: dict[str, Any] = {"pods": len(ts), "first": round(ts[0], 1) if ts else None}
        row["half"] = round(ts[total // 2 - 1], 1) if total and len(ts) >= total // 2 > 0 else None
        row["all"] = round(ts[total - 1], 1) if total and len(ts) >= total else None
        lo, hi = int(len(ts) * 0.1), int(len(ts) * 0.9) - 1
        row["rate"] = round((hi - lo) / (ts[hi] - ts[lo]), 1) if hi > lo and ts[hi] > ts[lo] else None
        out[stage] = row
    for a, b in (("created", "unschedulable"), ("unschedulable", "bound"), ("created", "bound"), ("bound", "running")):
        gaps = sorted(t[b] - t[a] for t in stages.values() if a in t and b in t)
        out[f"{a}→{b}"] = {
            "pods": len(gaps),
            "p50": round(gaps[len(gaps) // 2], 1) if gaps else None,
            "p90": round(gaps[int(len(gaps) * 0.9) - 1], 1) if len(gaps) >= 10 else None,
            "max": round(gaps[-1], 1) if gaps else None,
        }
    return out


def scheduler_metrics(cluster: LocalCluster) -> dict[str, float]:
    """kube-scheduler's attempts by result and the seconds its attempts took (summed), from its
    /metrics (client certificate of the cluster's admin)."""
    state = cluster.state
    if state is None:
        raise RuntimeError("the local cluster is not up")
    url = f"https://127.0.0.1:{state.ports['kube-scheduler']}/metrics"
    ctx = probes.insecure_context()  # its serving certificate is self-signed
    ctx.load_cert_chain(str(cluster.pki.admin_crt), str(cluster.pki.admin_key))
    try:
        status, body = probes.get(url, ctx, timeout=10)
    except OSError:
        return {}
    if status != 200:
        return {}
    out: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line.startswith("scheduler_schedule_attempts_total{"):
            result = line.split('result="', 1)[1].split('"', 1)[0]
            out[f"attempts_{result}"] = out.get(f"attempts_{result}", 0.0) + float(line.rsplit(" ", 1)[1])
        elif line.startswith("scheduler_scheduling_attempt_duration_seconds_sum"):
            out["attempt_seconds"] = out.get("attempt_seconds", 0.0) + float(line.rsplit(" ", 1)[1])
    return {k: round(v, 1) for k, v in out.items()}


class Profiler:
    """py-spy recording a process until `stop()` (SIGINT: py-spy writes its output then)."""

    def __init__(self, binary: str, pid: int, out: Path) -> None:
        argv = [binary, "record", "-p", str(pid), "-r", "50", "--nonblocking", "-f", "raw", "-o", str(out)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@dataclass
class Catalog:
    prices: dict[tuple[str, str, str], float]  # (instance type, zone, capacity type) -> $/h

    @staticmethod
    def of(catalog: dict[str, Any]) -> Catalog:
        return Catalog(
            {
                (it["name"], off["zone"], off["capacityType"]): float(off["price"])
                for it in catalog["instanceTypes"]
                for off in it["offerings"]
            }
        )

    def fleet(self, kube: KubeClient, node_label: str) -> tuple[int, float, set[str]]:
        """(nodes, $/h, their names) of the autoscaler's nodes."""
        nodes = [n for n in kube.list(NODES).items if node_label in n["metadata"].get("labels", {})]
        price = 0.0
        for node in nodes:
            labels = node["metadata"]["labels"]
            key = (labels.get(L.INSTANCE_TYPE, ""), labels.get(L.ZONE, ""), labels.get(L.CAPACITY_TYPE, ""))
            price += self.prices.get(key, 0.0)
        return len(nodes), price, {n["metadata"]["name"] for n in nodes}


def start_karpy(
    cluster: LocalCluster, work: Path, catalog_file: Path, cluster_name: str, election_name: str
) -> tuple[procs.Proc, int]:
    """`karpy controller` on the simulated cloud (`work/cloud.db`, `catalog_file`) against `cluster`,
    once synced and leading: (its process, its HTTP port)."""
    port = procs.free_port()
    argv = [
        sys.executable, "-m", "karpy", "controller", "--kubeconfig", str(cluster.kubeconfig),
        "--simulated-db", str(work / "cloud.db"), "--simulated-catalog", str(catalog_file),
        "--cluster-name", cluster_name, "--leader-election-name", election_name,
        "--http-host", "127.0.0.1", "--http-port", str(port), "--log-format", "text",
    ]  # fmt: skip
    ctrl = procs.start("karpy-controller", argv, work, die_with_parent=True, cwd=REPO)

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=2) as resp:
                status = json.loads(resp.read())
        except OSError:
            return False
        return bool(status.get("synced") and status.get("leader"))

    procs.wait_until("karpy controller ready", ready, 120, [ctrl])
    return ctrl, port


def spread_skew(kube: Kube, app: str, node_label: str) -> int:
    """max - min Running pods of `app` over the zones of the autoscaler's nodes; a pod being
    deleted (evicted from a node being consolidated, still Running until it goes) is not counted,
    as kube-scheduler does not count it."""
    zones = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(L.ZONE, "")
        for n in kube.list(NODES).items
        if node_label in n["metadata"].get("labels", {})
    }
    counts = dict.fromkeys(set(zones.values()), 0)
    for pod in kube.list(PODS).items:
        node = pod["spec"].get("nodeName")
        running = pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
        if running and node in zones and pod["metadata"].get("labels", {}).get("app") == app:
            counts[zones[node]] += 1
    return max(counts.values()) - min(counts.values()) if counts else 0


def fleet_state(nodes: list[dict[str, Any]], node_label: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names, names of those being disrupted) of the autoscaler's nodes: a node being deleted,
    cordoned or tainted by Karpenter's disruption is still in the set while it drains, but the
    fleet is not settled."""
    names, busy = set(), set()
    for node in nodes:
        meta = node["metadata"]
        if node_label not in meta.get("labels", {}):
            continue
        names.add(meta["name"])
        spec = node.get("spec") or {}
        taints = {t.get("key") for t in spec.get("taints") or []}
        if meta.get("deletionTimestamp") or spec.get("unschedulable") or DISRUPTED_TAINT in taints:
            busy.add(meta["name"])
    return frozenset(names), frozenset(busy)


def settle(
    kube: KubeClient, node_label: str, started: float, quiet: float, timeout: float, done: Callable[[set[str]], bool]
) -> float | None:
    """Seconds from `started` until the last change of the autoscaler's node set, once it has not
    changed for `quiet` seconds, no node of it is being disrupted (`fleet_state`: a replacement
    draining its candidates is not settled however long the drain) and `done(names)` holds
    (None: not within `timeout`)."""
    last = fleet_state(kube.list(NODES).items, node_label)
    changed = started
    while time.monotonic() - started < timeout:
        time.sleep(2)
        state = fleet_state(kube.list(NODES).items, node_label)
        if state != last:
            last, changed = state, time.monotonic()
        elif not state[1] and done(set(state[0])) and time.monotonic() - changed >= quiet:
            return round(changed - started, 1)
    return None


def fresh_price(catalog: dict[str, Any], replicas: dict[str, int], work: Path) -> float:
    """$/h of karpy's own fresh provisioning of `replicas` (Deployment name → pods) on an empty
    cluster, decided in process as `karpy simulate` reads its inputs (the harness's Provisioner
    and Deployments, the shared catalog as exported): one batch, every pod at once."""
    shapes = {name: (cpu, memory, zonal) for name, _, cpu, memory, zonal in SHAPES}
    docs: list[dict[str, Any]] = [
        {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "default"},
         "spec": {"requirements": REQUIREMENTS}},
    ]  # fmt: skip
    docs += [deployment(name, n, *shapes[name]) for name, n in replicas.items() if n]
    path = work / "fresh-inputs.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    inputs = read_inputs([str(path)])
    inp = SchedulingInput(pods=inputs.pods, provisioners=inputs.provisioners, instance_types=catalog_from_json(catalog))
    result = schedule(inp)
    if result.unschedulable:
        raise RuntimeError(f"fresh provisioning left {len(result.unschedulable)} pods unschedulable")
    return sum(node.launch.price for node in result.new_nodes if node.launch is not None)


class Karpy:
    name = "karpy"
    node_label = L.PROVISIONER_NAME
    requests_metric = "rest_client_requests_total"

    def __init__(self, catalog_file: Path, webhooks: bool = False) -> None:
        self.catalog_file, self.webhooks = catalog_file, webhooks
        self.webapp: procs.Proc | None = None

    def start_webhooks(self, cluster: LocalCluster, work: Path) -> None:
        """`karpy webapp` over TLS with karpy's webhooks registered, as the Helm chart installs
        them (the pod webhook gates the zonal-spread pods: `controller/apis/podgate.py`)."""
        certs, karpy = work / "certs", [sys.executable, "-m", "karpy"]
        subprocess.run([*karpy, "certs", "generate", "--dir", str(certs), "--host", "127.0.0.1"],
                       check=True, capture_output=True, cwd=REPO)  # fmt: skip
        port = procs.free_port()
        argv = [*karpy, "webapp", "--cert-dir", str(certs), "--port", str(port), "--host", "127.0.0.1"]
        self.webapp = procs.start("karpy-webapp", argv, work, die_with_parent=True, cwd=REPO)
        url = f"https://127.0.0.1:{port}"
        ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        procs.wait_until("karpy webapp /healthz", lambda: probes.ok(url + "/healthz", ctx), 60, [self.webapp])
        cluster.install_webhooks(url, (certs / "ca.crt").read_bytes())

    def stop(self) -> None:
        if self.webapp is not None:
            procs.stop(self.webapp)
            self.webapp = None

    def start(self, cluster: LocalCluster, work: Path) -> tuple[procs.Proc, int]:
        if self.webhooks:
            self.start_webhooks(cluster, work)
        ctrl, port = start_karpy(cluster, work, self.catalog_file, "bench", "karpy-bench")
        provisioner = {
            "apiVersion": "karpenter.sh/v1alpha5",
            "kind": "Provisioner",
            "metadata": {"name": "default"},
            "spec": {"requirements": REQUIREMENTS, "consolidation": {"enabled": True}},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(provisioner))
        return ctrl, port


class Karpenter:
    name = "Karpenter"
    node_label = NODEPOOL_LABEL
    requests_metric = "client_go_request_total"  # operatorpkg's client-go adapter

    def __init__(self, binary: Path, module_dir: Path) -> None:
        self.binary, self.module_dir = binary, module_dir

    def start(self, cluster: LocalCluster, work: Path) -> tuple[procs.Proc, int]:
        for crd in CRDS:
            cluster.kubectl("apply", "--server-side", "-f", str(self.module_dir / crd))
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/nodepools.karpenter.sh",
                        "crd/nodeclaims.karpenter.sh", "crd/kwoknodeclasses.karpenter.kwok.sh")  # fmt: skip
        port, health = procs.free_port(), procs.free_port()
        env = {
            "KUBECONFIG": str(cluster.kubeconfig),
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(port),
            "HEALTH_PROBE_PORT": str(health),
            "INSTANCE_TYPES_FILE_PATH": str(self.module_dir / KWOK_TYPES),
            "SYSTEM_NAMESPACE": "kube-system",
            "LOG_LEVEL": "info",
        }
        ctrl = procs.start("karpenter-kwok", [str(self.binary)], work, die_with_parent=True, cwd=work, env=env)
        procs.wait_until("Karpenter ready", lambda: probes.ok(f"http://127.0.0.1:{health}/readyz"), 120, [ctrl])
        nodeclass = {
            "apiVersion": "karpenter.kwok.sh/v1alpha1",
            "kind": "KWOKNodeClass",
            "metadata": {"name": "default"},
        }
        nodepool = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": REQUIREMENTS,
                        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
                        "expireAfter": "Never",
                    }
                },
                "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"},
            },
        }
        cluster.kubectl(
            "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [nodeclass, nodepool]})
        )
        return ctrl, port


Autoscaler = Karpy | Karpenter


def scale(kube: KubeClient, replicas: dict[str, int]) -> None:
    for name, n in replicas.items():
        kube.patch(DEPLOYMENTS, name, {"spec": {"replicas": n}}, NAMESPACE)


@dataclass
class Options:
    quiet: float
    running_timeout: float | None
    settle_timeout: float | None
    out: Path | None
    py_spy: str | None
    scale_down: bool = True


def run(
    auto: Autoscaler, work: Path, pods: int, catalog: Catalog, opts: Options, catalog_json: dict[str, Any]
) -> dict[str, Any]:
    """One autoscaler on a fresh cluster: create, then half, then zero (if all got Running)."""
    loads = workloads(pods)
    total = sum(w[1] for w in loads)
    names = {w[0] for w in loads}
    spread = next(w[0] for w in loads if w[4])
    cluster = LocalCluster(work / "cluster")
    cluster.up(timeout=180)
    try:
        kube = KubeClient(str(cluster.kubeconfig))
        ctrl, port = auto.start(cluster, work)
        try:
            result: dict[str, Any] = {"autoscaler": auto.name, "pods": total}
            if isinstance(auto, Karpy) and auto.webhooks:
                result["webhooks"] = True  # zonal-spread pods gated and pinned by karpy's pod webhook
            requests0 = apiserver_requests(cluster)
            cpu0 = process_cpu(cluster, ctrl)
            progress = PodProgress(kube, names)
            progress.start()
            tag = f"{auto.name.lower()}-{pods}"
            profiler = None
            if opts.py_spy and opts.out and isinstance(auto, Karpy):
                profiler = Profiler(opts.py_spy, ctrl.pid, opts.out / f"{tag}.pyspy.txt")
            started = time.monotonic()
            for name, replicas, cpu, memory, zonal in loads:
                kube.create(DEPLOYMENTS, deployment(name, replicas, cpu, memory, zonal), NAMESPACE)
            timeout = opts.running_timeout or 120 + pods * 0.3
            running, all_created, milestones = follow(progress, total, started, timeout)
            if profiler is not None:
                profiler.stop()
            result["running"] = running
            result["running_pct"] = round(100 * running / total, 1)
            result.update(milestones)
            result["running_100pct_seconds"] = round(time.monotonic() - started, 1) if running >= total else None
            result["pods_created_seconds"] = round(all_created, 1) if all_created is not None else None
            cpu1 = process_cpu(cluster, ctrl)
            result["cpu_seconds_to_running"] = {k: round(v - cpu0.get(k, 0.0), 1) for k, v in cpu1.items()}
            stages = progress.stages()
            result["stages"] = stage_summary(stages, started, total)
            result["scheduler"] = scheduler_metrics(cluster)
            if opts.out:  # what is known so far, kept should a later step fail
                (opts.out / f"{tag}.result.json").write_text(json.dumps(result, indent=1))
            if opts.out:
                (opts.out / f"{tag}.stages.json").write_text(
                    json.dumps({uid: {k: round(t - started, 3) for k, t in v.items()} for uid, v in stages.items()})
                )
                (opts.out / f"{tag}.controller-metrics.txt").write_text(metrics_text(port))
                (opts.out / f"{tag}.apiserver-metrics.txt").write_text(apiserver_metrics(cluster))
            packed = packing(kube, names, auto.node_label)
            nodes, price, _ = catalog.fleet(kube, auto.node_label)
            result.update(nodes=nodes, price=round(price, 3), cpu_packing=round(packed["cpu_packing"], 3))
            result.update(
                memory_packing=round(packed["memory_packing"], 3),
                spread_skew=spread_skew(kube, spread, auto.node_label),
            )
            if opts.out:
                (opts.out / f"{tag}.result.json").write_text(json.dumps(result, indent=1))

            if running >= total and opts.scale_down:
                half = {name: replicas // 2 for name, replicas, *_ in loads}
                scaled = time.monotonic()
                scale(kube, half)
                remaining = sum(half.values())
                result["half_settled_seconds"] = settle(
                    kube, auto.node_label, scaled, opts.quiet, opts.settle_timeout or 120 + pods * 0.6,
                    lambda _names: progress.counts() == (remaining, remaining),
                )  # fmt: skip
                nodes, price, _ = catalog.fleet(kube, auto.node_label)
                packed = packing(kube, names, auto.node_label)
                result.update(
                    half_nodes=nodes, half_price=round(price, 3), half_cpu_packing=round(packed["cpu_packing"], 3)
                )
                fresh = fresh_price(catalog_json, half, work)
                result.update(half_fresh_price=round(fresh, 3), half_price_ratio=round(price / fresh, 3))

                scaled = time.monotonic()
                scale(kube, dict.fromkeys(half, 0))
                result["zero_settled_seconds"] = settle(
                    kube,
                    auto.node_label,
                    scaled,
                    0,
                    opts.settle_timeout or 120 + pods * 0.3,
                    lambda names_left: not names_left,
                )
            progress.stop()
            peak_mb, cpu_seconds = proc_stats(ctrl.pid)
            result.update(peak_mb=round(peak_mb, 1), cpu_seconds=round(cpu_seconds, 1))
            result["controller_requests"] = client_requests(port, auto.requests_metric)
            result["apiserver_requests"] = apiserver_requests(cluster) - requests0
            if opts.out:
                (opts.out / f"{tag}.result.json").write_text(json.dumps(result, indent=1))
            return result
        finally:
            procs.stop(ctrl)
            if isinstance(auto, Karpy):
                auto.stop()
            if opts.out:  # the controller's log, kept with the run's figures
                shutil.copyfile(ctrl.log, opts.out / f"{auto.name.lower()}-{pods}.controller.log")
    finally:
        cluster.down()


def run_sh(*args: str) -> str:
    out = subprocess.run([str(RUN_SH), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"bench/karpenter/run.sh {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def kwok_binary() -> Path:
    """Karpenter's kwok provider, built once (`run.sh --build-kwok`)."""
    found = dict(line.split("=", 1) for line in run_sh("--build-kwok").splitlines() if "=" in line)
    return Path(found["KARPENTER_KWOK_BIN"])


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(results: list[dict[str, Any]]) -> list[str]:
    header = (
        f"{'':<10}{'pods':>6} | {'50%':>5}{'90%':>5}{'100%':>6} | {'nodes':>5}{'$/h':>8}{'cpu':>6}{'mem':>6}"
        f"{'skew':>5} | {'½ settle':>9}{'nodes':>6}{'$/h':>8} | {'0 settle':>9} | {'MiB':>5}{'cpu s':>7}"
        f" | {'own req':>8}{'apiserver':>10}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r['autoscaler']:<10}{r['pods']:>6} | {_s(r.get('running_50pct_seconds')):>5}"
            f"{_s(r.get('running_90pct_seconds')):>5}{_s(r['running_100pct_seconds']):>6} | {r['nodes']:>5}"
            f"{r['price']:>8.2f}{r['cpu_packing']:>6.2f}{r['memory_packing']:>6.2f}{r['spread_skew']:>5} | "
            f"{_s(r.get('half_settled_seconds')):>9}{_s(r.get('half_nodes')):>6}{_f(r.get('half_price')):>8} | "
            f"{_s(r.get('zero_settled_seconds')):>9} | {r['peak_mb']:>5.0f}{r['cpu_seconds']:>7.0f} | "
            f"{r['controller_requests']:>8}{r['apiserver_requests']:>10}"
        )
    return lines


def stages_table(results: list[dict[str, Any]]) -> list[str]:
    """Where the time to Running went: per stage, when half and all pods got there and the rate,
    and each process's CPU seconds until all were Running."""
    lines = []
    for r in results:
        lines.append(f"{r['autoscaler']} {r['pods']} pods ({r['running_pct']} % Running):")
        for stage, row in r["stages"].items():
            if "rate" in row:
                lines.append(
                    f"  {stage:<14}{row['pods']:>7} pods  first {_s(row['first']):>5} s  half {_s(row['half']):>5} s"
                    f"  all {_s(row['all']):>5} s  {_s(row['rate']):>6} pods/s (middle 80 %)"
                )
            else:
                lines.append(
                    f"  {stage:<24}{row['pods']:>7} pods  p50 {_s(row['p50']):>5} s  p90 {_s(row['p90']):>5} s"
                    f"  max {_s(row['max']):>5} s"
                )
        lines.append(f"  kube-scheduler: {r.get('scheduler')}")
        cpu = ", ".join(f"{name} {seconds:.0f}" for name, seconds in r["cpu_seconds_to_running"].items())
        lines.append(f"  CPU seconds until all Running (or the cap): {cpu}")
    return lines


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.karpenter_e2e", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, choices=SIZES, default=1000)
    parser.add_argument("--only", choices=("karpy", "karpenter"), help="run one autoscaler")
    parser.add_argument("--quiet", type=float, default=60.0, help="seconds without a node change that count as settled")
    parser.add_argument("--running-timeout", type=float, help="seconds to wait for all Running (120 + 0.3/pod)")
    parser.add_argument("--settle-timeout", type=float, help="seconds to wait for each scale-down (120 + 0.6/pod)")
    parser.add_argument("--no-scale-down", action="store_true", help="stop once all are Running (or the cap)")
    parser.add_argument("--out", type=Path, help="directory for each run's result, stage times and /metrics")
    parser.add_argument("--py-spy", help="py-spy binary: profile karpy's controller until all Running (needs --out)")
    parser.add_argument(
        "--webhooks", action="store_true", help="karpy with its webhooks registered, as the chart installs it"
    )
    args = parser.parse_args(argv)
    opts = Options(args.quiet, args.running_timeout, args.settle_timeout, args.out, args.py_spy, not args.no_scale_down)
    if opts.out:
        opts.out.mkdir(parents=True, exist_ok=True)
    version = run_sh("--version").strip()
    module_dir = Path(run_sh("--module-dir").strip().splitlines()[-1])
    with tempfile.TemporaryDirectory(prefix="karpy-kbench-") as tmp:
        work = Path(tmp)
        catalog = kwok_catalog(json.loads((module_dir / KWOK_TYPES).read_text()))
        catalog_file = work / "catalog.json"
        catalog_file.write_text(json.dumps(catalog))
        autos: list[Autoscaler] = []
        if args.only in (None, "karpy"):
            autos.append(Karpy(catalog_file, args.webhooks))
        if args.only in (None, "karpenter"):
            autos.append(Karpenter(kwok_binary(), module_dir))
        results = []
        for auto in autos:
            auto_work = work / auto.name.lower()
            auto_work.mkdir()
            result = run(auto, auto_work, args.pods, Catalog.of(catalog), opts, catalog)
            print(json.dumps(result), flush=True)
            results.append(result)
    print(f"karpy vs Karpenter {version} (kwok provider), end to end on the local control plane — {machine()}")
    print("\n".join(table(results)))
    print("\n".join(stages_table(results)))
    print(
        "seconds from creating the Deployments; nodes/$/h/packing/skew when all are Running; ½ settle: seconds "
        f"after scaling to half until the last node change ({args.quiet:.0f} s quiet), then nodes and $/h; 0 settle: "
        "seconds after scaling to zero until no node is left; MiB/cpu s: controller peak RSS and CPU seconds; "
        "own req: the controller's requests; apiserver: apiserver_request_total delta (all clients)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
