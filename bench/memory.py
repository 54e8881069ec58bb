"""Where the controller's memory goes at scale (issue 21; `make bench-memory`, not in `make test`).

A fresh local control plane (`localcluster.LocalCluster`), then `karpy controller` on the
simulated cloud, run by this module in a child process (`--child`: the controller's own `run`,
with a thread that answers this process's requests for a measurement). Phases, each measured
once the controller's state holds what was created:
1. `empty`: synced on an empty cluster;
2. `nodes`: `--nodes` kwok Nodes (not karpy's; tainted so no bench pod fits them), seen by watch;
3. `pods`: `--pods` pending pods of the end-to-end bench's five shapes (`bench.karpenter_e2e`,
   one spread over zones), created by parallel POSTs with a scheduler name kube-scheduler
   ignores and marked `PodScheduled=False/Unschedulable` by this process, seen by watch;
4. `relisted`: kube-apiserver restarted, so every informer re-lists (as after a lost watch);
5. `pass-N`: a Provisioner (consolidation enabled) applied, measured after each of `--passes`
   provisioning passes (`karpenter_provisioner_scheduling_duration_seconds_count`).
Each measurement: the process's RSS and peak (VmHWM), threads, glibc's heap (`mallinfo2`: in use
and free-but-held bytes), pymalloc's arenas (`sys._debugmallocstats`: allocated vs. free block
bytes), the objects in cluster state, and with `--tracemalloc` (the child runs under
`-X tracemalloc`, which inflates RSS: use it for where, a run without it for how much) the
allocations still alive by line and by file. Printed: a row per phase, MiB per 1,000 nodes and
per 10,000 pods (RSS growth over the phase before), the top allocations; `--out DIR` keeps every
measurement as JSON and the controller's log.

    python -m bench.memory [--pods 20000] [--nodes 1000] [--passes 3] [--tracemalloc] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.e2e import deployment
from bench.karpenter_e2e import workloads
from controller.core import labels as L
from controller.kube.client import KubeClient
from controller.kube.errors import ConflictError, KubeError
from controller.kube.resources import NODES, PODS, Kind
from controller.state.snapshot import Obj
from localcluster import LocalCluster, procs

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "memory"
SCHEDULER = "karpy-memory-bench"  # no kube-scheduler answers to it: the pods stay pending
NODE_TAINT = {"key": "bench.karpy.sh/memory", "value": "true", "effect": "NoSchedule"}
NAMESPACES = Kind("namespaces", "v1", "namespaces", False)
SERVICEACCOUNTS = Kind("serviceaccounts", "v1", "serviceaccounts", True)
PASS_METRIC = "karpenter_provisioner_scheduling_duration_seconds_count"


# The child: the controller, and a thread that measures it on request ---------------------------


def _status_kib() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "Threads"):
            out[key] = int(value.split()[0])
    return out


def _glibc_heap() -> dict[str, int]:
    """glibc malloc over all its arenas (`malloc_info`): arenas, bytes taken from the system, bytes
    free but held (fast and other free chunks), bytes in mmapped blocks."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return {}
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        if not stream:
            return {}
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        text = Path(out.name).read_text()
    tail = text[text.rfind("</heap>") :]  # the totals over every arena follow the last heap

    def size(tag: str, kind: str) -> int:
        found = re.search(rf'<{tag} type="{kind}"[^>]*size="(\d+)"', tail)
        return int(found.group(1)) if found else 0

    return {
        "arenas": text.count("<heap nr="),
        "system": size("system", "current"),
        "free_held": size("total", "fast") + size("total", "rest"),
        "mmapped": size("total", "mmap"),
    }


def _pymalloc() -> dict[str, int]:
    """pymalloc's arenas from `sys._debugmallocstats` (written to the C stderr: caught in a file;
    nothing under tracemalloc, whose hooks replace pymalloc's entry points)."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    wanted = {
        "# arenas allocated current": "arenas",
        "# bytes in allocated blocks": "allocated_blocks",
        "# bytes in available blocks": "free_blocks",
        "# bytes in unused pools": "unused_pools",
    }
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in wanted:
            found[wanted[key.strip()]] = int(value.strip().replace(",", ""))
    return found


def _top(snapshot: tracemalloc.Snapshot, key: str, limit: int) -> list[tuple[str, float, int]]:
    stats = snapshot.statistics(key)
    out = []
    for stat in stats[:limit]:
        frame = stat.traceback[0]
        where = frame.filename.replace(str(REPO) + "/", "")
        out.append((f"{where}:{frame.lineno}" if key == "lineno" else where, stat.size / 2**20, stat.count))
    return out


def measure(states: list[Any], top: int, light: bool = False, trim: bool = False) -> dict[str, Any]:
    """What the process holds now (see the module docstring); `light`: RSS and state only; `trim`:
    then glibc's free memory given back (`malloc_trim`) and the RSS after."""
    status = _status_kib()
    if light:
        snap = states[0].snapshot() if states else None
        return {
            "rss_mib": status.get("VmRSS", 0) / 1024,
            "state": {"pods": len(snap.pods), "nodes": len(snap.nodes), "relists": dict(states[0].relists)}
            if snap is not None
            else {},
        }
    out: dict[str, Any] = {
        "rss_mib": status.get("VmRSS", 0) / 1024,
        "peak_mib": status.get("VmHWM", 0) / 1024,
        "threads": status.get("Threads", 0),
        "glibc": _glibc_heap(),
        "pymalloc": _pymalloc(),
        "gc_objects": len(gc.get_objects()),
    }
    if states:
        snap = states[0].snapshot()
        out["state"] = {"pods": len(snap.pods), "nodes": len(snap.nodes), "relists": dict(states[0].relists)}
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        out["rss_trimmed_mib"] = _status_kib().get("VmRSS", 0) / 1024
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            )
        )
        out["traced_mib"], out["traced_peak_mib"] = current / 2**20, peak / 2**20
        out["top_lines"] = _top(snapshot, "lineno", top)
        out["top_files"] = _top(snapshot, "filename", top)
    return out


def child(directory: Path, controller_args: list[str], top: int, trim: bool) -> int:
    """Run the controller; answer `DIR/request` (a label) with `DIR/<label>.json`."""
    import controller.main as main
    from controller.settings import Settings
    from controller.state.cluster import ClusterState

    states: list[ClusterState] = []

    class CountingState(ClusterState):
        """Cluster state that counts its re-lists (`replace`) per kind, for the bench only."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.relists: dict[str, int] = {}
            states.append(self)

        def replace(self, kind: str, items: Iterable[Obj]) -> None:
            super().replace(kind, items)
            self.relists[kind] = self.relists.get(kind, 0) + 1

    vars(main)["ClusterState"] = CountingState  # what `main.build` makes its state of

    def answer() -> None:
        request = directory / "request"
        while True:
            if request.exists():
                label = request.read_text().strip()
                result = measure(states, top, light=label.startswith("check-"), trim=trim)
                (directory / f"{label}.json.tmp").write_text(json.dumps(result))
                (directory / f"{label}.json.tmp").rename(directory / f"{label}.json")
                request.unlink()
            time.sleep(0.2)

    threading.Thread(target=answer, name="bench-memory", daemon=True).start()
    parser = argparse.ArgumentParser()
    Settings.add_arguments(parser)
    return main.run(Settings.from_args(parser.parse_args(controller_args)))


# The parent: cluster, objects, phases ----------------------------------------------------------


class Controller:
    def __init__(self, cluster: LocalCluster, work: Path, args: argparse.Namespace) -> None:
        self.port = procs.free_port()
        self.dir = work / "measurements"
        self.dir.mkdir(parents=True, exist_ok=True)
        python = [sys.executable, "-X", "tracemalloc=1"] if args.tracemalloc else [sys.executable]
        env = dict(item.split("=", 1) for item in args.env)
        argv = [
            *python, "-m", "bench.memory", "--child", str(self.dir), "--top", str(args.top),
            *(["--trim"] if args.trim else []), "--",
            "--kubeconfig", str(cluster.kubeconfig), "--simulated-db", str(work / "cloud.db"),
            "--cluster-name", "bench", "--leader-election-name", "karpy-memory",
            "--http-host", "127.0.0.1", "--http-port", str(self.port), "--log-format", "text",
        ]  # fmt: skip
        self.proc = procs.start("karpy-controller", argv, work, die_with_parent=True, cwd=REPO, env=env)

    def get(self, path: str, timeout: float = 60.0) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as resp:
            return bytes(resp.read())

    def ready(self) -> bool:
        try:
            status = json.loads(self.get("/api/v1/status", 2.0))
        except OSError:
            return False
        return bool(status.get("synced") and status.get("leader"))

    def passes(self) -> float:
        for line in self.get("/metrics").decode().splitlines():
            if line.startswith(PASS_METRIC):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def measure(self, label: str, timeout: float = 300.0) -> dict[str, Any]:
        out = self.dir / f"{label}.json"
        (self.dir / "request").write_text(label)
        procs.wait_until(f"measurement {label}", out.exists, timeout, [self.proc])
        result: dict[str, Any] = json.loads(out.read_text())
        if label.startswith("check-"):
            out.unlink()
        return result


def wait(what: str, check: Callable[[], bool], timeout: float, ctrl: Controller) -> None:
    procs.wait_until(what, check, timeout, [ctrl.proc], interval=1.0)


def kwok_node(i: int) -> dict[str, Any]:
    name = f"memory-node-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kwok.x-k8s.io/node": "fake",
                L.HOSTNAME: name,
                L.ZONE: f"test-zone-{'abc'[i % 3]}",
                L.INSTANCE_TYPE: "m5.4xlarge",
                L.ARCH: "amd64",
                L.OS: "linux",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"taints": [NODE_TAINT]},
        "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    }


def pending_pods(count: int) -> list[dict[str, Any]]:
    """`count` pods of the end-to-end bench's shapes, as their Deployments' pods would be."""
    out = []
    for name, replicas, cpu, memory, zonal in workloads(count):
        template = deployment(name, replicas, cpu, memory, zonal)["spec"]["template"]
        for i in range(replicas):
            pod = json.loads(json.dumps(template))
            pod["metadata"]["name"] = f"{name}-{i:05d}"
            pod["metadata"]["namespace"] = NAMESPACE
            pod["spec"]["schedulerName"] = SCHEDULER
            out.append({"apiVersion": "v1", "kind": "Pod", **pod})
    return out


UNSCHEDULABLE = {
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/0 nodes are available"}
        ]
    }
}


def create_all(kube: KubeClient, workers: int, pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
    def node(obj: dict[str, Any]) -> None:
        with contextlib.suppress(ConflictError):
            kube.create(NODES, obj)

    def pod(obj: dict[str, Any]) -> None:
        with contextlib.suppress(ConflictError):
            kube.create(PODS, obj, NAMESPACE)
        kube.patch(PODS, obj["metadata"]["name"], UNSCHEDULABLE, NAMESPACE, subresource="status")

    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(node, nodes):
            pass
        for _ in pool.map(pod, pods):
            pass


def provisioner() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "default"},
        "spec": {"consolidation": {"enabled": True}},
    }


def row(label: str, m: dict[str, Any]) -> str:
    glibc, pym = m.get("glibc", {}), m.get("pymalloc", {})
    state = m.get("state", {})
    traced = f" traced {m['traced_mib']:7.1f}" if "traced_mib" in m else ""
    traced += f" trimmed {m['rss_trimmed_mib']:7.1f}" if "rss_trimmed_mib" in m else ""
    return (
        f"{label:<10} RSS {m['rss_mib']:7.1f} MiB (peak {m['peak_mib']:7.1f}){traced};"
        f" glibc {glibc.get('arenas', 0)} arenas: {glibc.get('system', 0) / 2**20:6.1f} MiB, free-held"
        f" {glibc.get('free_held', 0) / 2**20:6.1f}, mmapped {glibc.get('mmapped', 0) / 2**20:6.1f};"
        f" pymalloc {pym.get('arenas', 0):4d} MiB arenas, blocks used {pym.get('allocated_blocks', 0) / 2**20:6.1f}"
        f" free {(pym.get('free_blocks', 0) + pym.get('unused_pools', 0)) / 2**20:6.1f};"
        f" threads {m['threads']}; state {state.get('nodes', 0):,} nodes {state.get('pods', 0):,} pods"
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(args: argparse.Namespace, work: Path, results: dict[str, dict[str, Any]]) -> None:
    """The phases, each measurement added to `results` as it is taken (kept if a later one fails
    or the run is interrupted)."""
    cluster = LocalCluster(work / "cluster")
    cluster.up()
    ctrl: Controller | None = None
    try:
        kube = KubeClient(str(cluster.kubeconfig))
        kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})

        def has_service_account() -> bool:
            try:
                kube.get(SERVICEACCOUNTS, "default", NAMESPACE)
            except KubeError:
                return False
            return True

        procs.wait_until("the namespace's default ServiceAccount", has_service_account, 60, [])
        ctrl = Controller(cluster, work, args)
        controller = ctrl
        wait("controller synced and leading", ctrl.ready, 120, ctrl)

        def phase(label: str) -> None:
            results[label] = controller.measure(label)
            results[label]["load"] = load_average()
            print(row(label, results[label]), f"(load {results[label]['load']})", flush=True)

        def state_has(nodes: int, pods: int) -> Callable[[], bool]:
            def check() -> bool:
                state = controller.measure(f"check-{time.monotonic_ns()}").get("state", {})
                return bool(state.get("nodes", 0) >= nodes and state.get("pods", 0) >= pods)

            return check

        phase("empty")
        started = time.monotonic()
        create_all(kube, args.workers, [], [kwok_node(i) for i in range(args.nodes)])
        wait("the nodes in state", state_has(args.nodes, 0), 300, ctrl)
        print(f"  {args.nodes:,} nodes created in {time.monotonic() - started:.0f} s", flush=True)
        phase("nodes")
        started = time.monotonic()
        create_all(kube, args.workers, pending_pods(args.pods), [])
        wait("the pods in state", state_has(args.nodes, args.pods), 300, ctrl)
        print(f"  {args.pods:,} pods created and marked in {time.monotonic() - started:.0f} s", flush=True)
        phase("pods")
        before = dict(ctrl.measure(f"check-{time.monotonic_ns()}").get("state", {}).get("relists", {}))
        cluster.restart("kube-apiserver")

        def relisted() -> bool:
            now = controller.measure(f"check-{time.monotonic_ns()}").get("state", {}).get("relists", {})
            return now.get("pods", 0) > before.get("pods", 0) and controller.ready()

        wait("every kind re-listed", relisted, 300, ctrl)
        phase("relisted")
        cluster.kubectl("apply", "-f", "-", input=json.dumps(provisioner()))
        done = ctrl.passes()

        def passes_done(target: float) -> Callable[[], bool]:
            return lambda: controller.passes() >= target

        for n in range(1, args.passes + 1):
            wait(f"provisioning pass {n}", passes_done(done + n), 600, ctrl)
            phase(f"pass-{n}")
    finally:
        if ctrl is not None:
            procs.stop(ctrl.proc, grace_seconds=20)
            if args.out:
                shutil.copy(ctrl.proc.log, args.out / "controller.log")
        cluster.down()


def report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    def grew(a: str, b: str) -> float:
        return float(results[b]["rss_mib"] - results[a]["rss_mib"]) if a in results and b in results else 0.0

    if args.nodes and "nodes" in results:
        print(f"per 1,000 nodes (watch): {grew('empty', 'nodes') / args.nodes * 1000:.1f} MiB RSS")
    if args.pods and "pods" in results:
        per = 10_000 / args.pods
        print(f"per 10,000 pods (watch): {grew('nodes', 'pods') * per:.1f} MiB RSS;", end="")
        print(f" after the re-list {grew('nodes', 'relisted') * per:.1f} MiB;", end="")
        last = f"pass-{args.passes}"
        print(f" after {args.passes} passes {grew('nodes', last) * per:.1f} MiB" if last in results else "")
    peak = max((m["peak_mib"] for m in results.values()), default=0.0)
    print(f"controller peak RSS {peak:.1f} MiB")
    for label, m in results.items():
        if "top_lines" not in m:
            continue
        print(f"\n{label}: traced {m['traced_mib']:.1f} MiB (peak {m['traced_peak_mib']:.1f}); by line:")
        for where, mib, count in m["top_lines"]:
            print(f"  {mib:8.1f} MiB {count:>9,}  {where}")
        print("  by file:")
        for where, mib, count in m["top_files"][: max(5, args.top // 2)]:
            print(f"  {mib:8.1f} MiB {count:>9,}  {where}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--passes", type=int, default=3, help="provisioning passes measured after")
    parser.add_argument("--workers", type=int, default=16, help="parallel requests creating the objects")
    parser.add_argument("--tracemalloc", action="store_true", help="trace allocations (inflates RSS)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the controller (MALLOC_ARENA_MAX=2)")
    parser.add_argument("--trim", action="store_true", help="malloc_trim after each measurement, RSS after")
    parser.add_argument("--top", type=int, default=15, help="allocations shown per measurement")
    parser.add_argument("--out", type=Path, help="keep the measurements and the controller's log here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    if "--" in argv:
        split = argv.index("--")
        argv, rest = argv[:split], argv[split + 1 :]
    else:
        rest = []
    args = parser.parse_args(argv)
    if args.child is not None:
        return child(args.child, rest, args.top, args.trim)
    tracing = "on" if args.tracemalloc else "off"
    print(f"{args.pods:,} pods, {args.nodes:,} nodes, tracemalloc {tracing}, env {args.env}; load {load_average()}")
    with tempfile.TemporaryDirectory(prefix="karpy-memory-") as tmp:
        work = Path(tmp)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        results: dict[str, dict[str, Any]] = {}
        try:
            run(args, work, results)
        finally:
            if args.out:
                (args.out / "measurements.json").write_text(json.dumps(results, indent=1))
            report(args, results)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
