"""A consolidation pass over ~1,000 karpy nodes / 20,000 pods on the local control plane (issue 21;
`make bench-sweep`, not part of `make test`).

The in-process bench (`bench/consolidation.py`) times the decision on generated state; this one
times the controller's own passes on a real cluster: `karpy controller` on the simulated cloud,
its state from watches, its simulations competing with kube-apiserver, etcd, kube-scheduler,
kube-controller-manager and kwok for the same cores.

How the state is built. Provisioning 20,000 pods through kube-scheduler's one-at-a-time
`Unschedulable` marking takes 5–20 min on this machine (see README, end to end), so the fleet is
launched by karpy's own code from this process instead, and the pods are placed by kube-scheduler:
1. a fresh local control plane (`localcluster.LocalCluster`) and `karpy controller` on the
   simulated cloud (`--simulated-catalog`: Karpenter kwok's 144 instance types as the end-to-end
   harness converts them, `bench.karpenter_e2e.kwok_catalog`), running from the start;
2. the Provisioner `default`: the harness's requirements with the instance type limited to
   `--build-type` (s-16x-amd64-linux: 16 CPU, 64 GiB, 256 pods), consolidation off;
3. the fleet karpy's provisioning launches for `--plan-pods` pending pods of the harness's mix
   (`bench.karpenter_e2e.SHAPES`: five Deployments' shapes, 30 % of the pods spread over zones
   with maxSkew 1): karpy's `schedule()` in one pass over that Provisioner and the cloud's
   instance types, and every planned node launched by karpy's provisioning launcher
   (`controller.provisioning.launcher.Launcher`, as a provisioning pass calls it: limits, an
   instance in the controller's simulated-cloud store under its cluster name, the Node with its
   labels, finalizer, providerID, owner reference and drift hashes). The controller sees the
   Nodes by watch, as after a restart; kwok makes them Ready and the controller initializes them;
   With the defaults (33,000 pods on s-16x-amd64-linux) that is ~1,000 nodes;
4. the five Deployments with `--pods` replicas in all (default 20,000, 60 % of the planned pods),
   created together: kube-controller-manager's ReplicaSets create the pods, kube-scheduler places
   them on those nodes (its default scoring spreads them: every node ~60 % used, as a scale-down
   by 40 % leaves it) and kwok runs them. A pod kube-scheduler finds no room for goes through
   karpy's provisioning as usual.
Nothing makes the measured pass easier than on a fleet provisioned pod by pod: the nodes are
karpy's own (its labels, its cloud's instances), every pod is a ReplicaSet's (evictable) and
was placed by kube-scheduler.

The measurement: the Provisioner is changed to the harness's requirements (every instance type)
with consolidation enabled — a user widening it and turning consolidation on — and each
deprovisioning pass after that is read from the controller's /metrics (a pass ends when
`karpenter_deprovisioning_evaluation_duration_seconds_count` moves; `pass_sample`): its wall
time, the CPU time of its thread (`karpy_deprovisioning_pass_cpu_seconds`), whether it went
through every method it reached or stopped on its budget (`_pass_complete`: an incomplete pass
is resumed by the next, anytime), the consolidation candidates eligible and those each method
covered (multi-node consolidation's binary search covers the longest prefix it simulated: a
longer one is known not to consolidate), the method that ended it and the command started
(`karpenter_deprovisioning_actions_performed`, and the controller's log line); the controller's
RSS and peak; the load average. Until the first command has been started (validated after its
15 s wait, then carried out) and `--follow` seconds more, or `--timeout`.

    python -m bench.sweep_e2e [--pods 20000] [--plan-pods 33000] [--build-type s-16x-amd64-linux]
        [--follow 0] [--timeout 900] [--out DIR] [--py-spy BIN]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.e2e import DEPLOYMENTS, NAMESPACE, PodProgress, deployment, follow, proc_stats
from bench.halving import pods_of
from bench.karpenter_e2e import KWOK_TYPES, REQUIREMENTS, Profiler, kwok_catalog, run_sh, start_karpy, workloads
from bench.sidebyside import machine
from controller.clock import SystemClock
from controller.cloudprovider.base import Instance
from controller.cloudprovider.simulated.catalog import catalog_from_json
from controller.cloudprovider.simulated.provider import SimulatedCloudProvider
from controller.core import labels as L
from controller.kube.client import KubeClient
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.provisioning.launcher import Launcher, LaunchResult
from controller.provisioning.nodetemplates import instance_types_for, node_template
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import NewNode
from controller.state.cluster import ClusterState
from controller.state.schedulinginput import provisionable, provisioning_input
from localcluster import LocalCluster, procs

REPO = Path(__file__).resolve().parents[1]
CLUSTER_NAME = "bench"
BUILD_TYPE = "s-16x-amd64-linux"
EVALUATIONS = "karpenter_deprovisioning_evaluation_duration_seconds_count"
COMMAND_LOG = re.compile(r"deprovisioning via (\S+) (\S+), terminating (\d+) machines")


# What a deprovisioning pass left on /metrics ----------------------------------------------------


@dataclass(frozen=True)
class PassSample:
    """The deprovisioning metrics after some pass (`pass_sample`)."""

    passes: int  # passes so far (the evaluation histogram's counts, over its method labels)
    by_method: dict[str, int]  # those counts per method label (the method that ended each pass)
    seconds: float  # the last pass's wall time
    cpu_seconds: float  # its thread's CPU time
    complete: bool  # it went through every method it reached (else resumed next pass)
    covered: dict[str, int]  # candidates each consolidation method covered (last set)
    eligible: int  # consolidation candidates
    actions: int  # commands started so far


def _samples(text: str, family: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(family):
            continue
        name_labels, _, value = line.rpartition(" ")
        name, _, labels = name_labels.partition("{")
        if name != family:
            continue
        pairs: dict[str, str] = {key: val for key, val in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)}
        out.append((pairs, float(value)))
    return out


def pass_sample(text: str) -> PassSample:
    """The deprovisioning pass metrics in a controller's /metrics text."""

    def one(family: str) -> float:
        found = _samples(text, family)
        return found[0][1] if found else 0.0

    by_method = {labels.get("method", ""): int(v) for labels, v in _samples(text, EVALUATIONS)}
    covered = {
        labels.get("method", ""): int(v) for labels, v in _samples(text, "karpy_deprovisioning_candidates_covered")
    }
    eligible = {
        labels.get("deprovisioner", ""): int(v)
        for labels, v in _samples(text, "karpenter_deprovisioning_eligible_machines")
    }
    actions = sum(v for _, v in _samples(text, "karpenter_deprovisioning_actions_performed"))
    return PassSample(
        passes=sum(by_method.values()),
        by_method=by_method,
        seconds=one("karpy_deprovisioning_pass_seconds"),
        cpu_seconds=one("karpy_deprovisioning_pass_cpu_seconds"),
        complete=one("karpy_deprovisioning_pass_complete") == 1.0,
        covered=covered,
        eligible=eligible.get("consolidation", 0),
        actions=int(actions),
    )


def ended_by(before: PassSample, after: PassSample) -> str:
    """The method label(s) whose pass count moved between two samples ("" when none did)."""
    moved = [m for m, n in sorted(after.by_method.items()) if n > before.by_method.get(m, 0)]
    return "+".join(moved)


def commands(log_lines: Sequence[str]) -> list[str]:
    """The commands the controller started, from its log: 'deprovisioner action, N machines (+R replacements)'."""
    out = []
    for line in log_lines:
        found = COMMAND_LOG.search(line)
        if found:
            replacements = line.count(" and replacing with ")
            out.append(
                f"{found[1]} {found[2]}, {found[3]} machines" + (f" + {replacements} new" if replacements else "")
            )
    return out


@dataclass
class PassRow:
    at: float  # seconds after the Provisioner change when the pass was seen ended
    sample: PassSample
    method: str
    rss_mib: float
    peak_mib: float
    load: str


@dataclass
class Result:
    build: dict[str, Any] = field(default_factory=dict)
    passes: list[PassRow] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


# The state -------------------------------------------------------------------------------------


def build_provisioner(build_type: str | None, consolidation: bool) -> dict[str, Any]:
    """The harness's Provisioner, limited to `build_type` (None: every type), consolidation on or off."""
    reqs: list[dict[str, Any]] = json.loads(json.dumps(REQUIREMENTS))
    if build_type is not None:
        reqs = [r for r in reqs if r["key"] != L.INSTANCE_TYPE]
        reqs.append({"key": L.INSTANCE_TYPE, "operator": "In", "values": [build_type]})
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "default"},
        "spec": {"requirements": reqs, "consolidation": {"enabled": consolidation}},
    }


def plan(kube: KubeClient, cloud: SimulatedCloudProvider, pods: int) -> tuple[ClusterState, list[NewNode]]:
    """The nodes karpy's provisioning launches for `pods` pending pods of the harness's mix on an
    empty cluster with the Provisioner as the API server has it (one `schedule()`)."""
    state = ClusterState(SystemClock())
    prov = kube.get(PROVISIONERS, "default")
    for kind in WATCHED:
        items = [prov] if kind.name == PROVISIONERS.name else pods_of(pods) if kind.name == PODS.name else []
        state.replace(kind.name, items)
    snap = state.snapshot()
    result = schedule(provisioning_input(snap, provisionable(snap), instance_types_for(snap, cloud).types))
    if result.unschedulable:
        raise RuntimeError(f"the plan left {len(result.unschedulable)} pods unschedulable")
    return state, list(result.new_nodes)


def launch(kube: KubeClient, cloud: SimulatedCloudProvider, state: ClusterState, nodes: Sequence[NewNode],
           workers: int = 16) -> list[str]:  # fmt: skip
    """Every node launched as a provisioning pass launches it (`Launcher.create_instance`, then
    `register` with the Provisioner as owner), the cloud calls first; their names."""
    snap = state.snapshot()
    view = snap.provisioners["default"]
    assert view.spec is not None
    spec = view.spec
    template = node_template(view, snap, cloud)
    launcher = Launcher(kube, cloud, state, SystemClock())
    usage = dict(snap.provisioner_usage("default"))

    def create(node: NewNode) -> Instance:
        return launcher.create_instance(node, spec, usage, node_template=template)

    def register(pair: tuple[NewNode, Instance]) -> LaunchResult:
        return launcher.register(pair[0], pair[1], spec, usage, owner=view.obj, node_template=template)

    with ThreadPoolExecutor(workers) as pool:
        made = list(pool.map(create, nodes))
        results = list(pool.map(register, zip(nodes, made, strict=True)))
    return [r.node_name for r in results]


def wait_for(what: str, check: Callable[[], bool], timeout: float, ctrl: procs.Proc, interval: float = 2.0) -> None:
    procs.wait_until(what, check, timeout, [ctrl], interval=interval)


def initialized(kube: KubeClient, names: set[str]) -> int:
    return sum(
        1
        for n in kube.list(NODES).items
        if n["metadata"]["name"] in names and n["metadata"].get("labels", {}).get(L.INITIALIZED) == "true"
    )


def owned_nodes(kube: KubeClient) -> int:
    return sum(1 for n in kube.list(NODES).items if L.PROVISIONER_NAME in n["metadata"].get("labels", {}))


def scrape(port: int) -> str | None:
    """The controller's /metrics, or None when this scrape failed: at 1,000 nodes / 20,000 pods it is
    ~15 MB plain (Karpenter's per-pod `karpenter_pods_state` and per-node capacity series; asked
    plain, which costs the controller no compression), and on a machine loaded ~10x its cores
    writing it once outlasted the controller's 10 s connection limit (~0.06 s of CPU now)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as resp:
            text: str = resp.read().decode()
        return text
    except (OSError, http.client.HTTPException):
        return None


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# The run ---------------------------------------------------------------------------------------


def build(args: argparse.Namespace, cluster: LocalCluster, work: Path, catalog: dict[str, Any],
          ctrl: procs.Proc, result: Result) -> None:  # fmt: skip
    """Steps 2–4 of the module docstring."""
    kube = KubeClient(str(cluster.kubeconfig))
    cluster.kubectl("apply", "-f", "-", input=json.dumps(build_provisioner(args.build_type, consolidation=False)))
    cloud = SimulatedCloudProvider(
        work / "cloud.db", SystemClock(), cluster=CLUSTER_NAME, catalog=catalog_from_json(catalog), reshape=False
    )
    started = time.monotonic()
    state, nodes = plan(kube, cloud, args.plan_pods)
    result.build["plan_seconds"] = round(time.monotonic() - started, 1)
    result.build["planned_nodes"] = len(nodes)
    print(f"  planned {len(nodes)} nodes for {args.plan_pods:,} pods in {result.build['plan_seconds']} s", flush=True)
    started = time.monotonic()
    names = set(launch(kube, cloud, state, nodes))
    result.build["launch_seconds"] = round(time.monotonic() - started, 1)
    print(f"  launched {len(names)} nodes in {result.build['launch_seconds']} s", flush=True)
    wait_for("the nodes initialized", lambda: initialized(kube, names) >= len(names), 600, ctrl, 5.0)
    result.build["initialized_seconds"] = round(time.monotonic() - started, 1)
    print(f"  all initialized {result.build['initialized_seconds']} s after the first launch", flush=True)
    loads = workloads(args.pods)
    total = sum(w[1] for w in loads)
    progress = PodProgress(kube, {w[0] for w in loads})
    progress.start()
    started = time.monotonic()
    for name, replicas, cpu, memory, zonal in loads:
        kube.create(DEPLOYMENTS, deployment(name, replicas, cpu, memory, zonal), NAMESPACE)
    running, created, milestones = follow(progress, total, started, args.running_timeout)
    progress.stop()
    result.build.update(pods=total, running=running, pods_created_seconds=created and round(created, 1), **milestones)
    result.build["running_seconds"] = round(time.monotonic() - started, 1)
    if running < total:
        raise RuntimeError(f"only {running} of {total} pods Running after {args.running_timeout:.0f} s")
    result.build["nodes"] = owned_nodes(kube)
    print(
        f"  {total:,} pods Running in {result.build['running_seconds']} s (created in {created or 0:.0f} s);"
        f" {result.build['nodes']} karpy nodes; load {load_average()}",
        flush=True,
    )


def measure(args: argparse.Namespace, cluster: LocalCluster, ctrl: procs.Proc, port: int, result: Result) -> None:
    """Step 5: consolidation on, every pass read until the first command and `--follow` more."""
    text = None
    while text is None:
        text = scrape(port)
    baseline = pass_sample(text)
    log_start = Path(ctrl.log).stat().st_size
    cpu0 = proc_stats(ctrl.pid)[1]
    profiler = Profiler(args.py_spy, ctrl.pid, args.out / "sweep.pyspy.txt") if args.py_spy and args.out else None
    cluster.kubectl("apply", "-f", "-", input=json.dumps(build_provisioner(None, consolidation=True)))
    changed = time.monotonic()
    print(f"consolidation on, every instance type allowed; load {load_average()}", flush=True)
    print(f"  {'at s':>6} {'method':<26} {'wall s':>7} {'CPU s':>6} {'complete':>8} {'eligible':>8}  covered")
    last, first_action, failed = baseline, None, 0
    try:
        while True:
            now = time.monotonic() - changed
            if now > args.timeout or (first_action is not None and now > first_action + args.follow):
                break
            time.sleep(1.0)
            text = scrape(port)
            if text is None:
                failed += 1
                continue
            sample = pass_sample(text)
            if sample.passes == last.passes:
                continue
            row = PassRow(round(time.monotonic() - changed, 1), sample, ended_by(last, sample), rss_mib(ctrl.pid),
                          proc_stats(ctrl.pid)[0], load_average())  # fmt: skip
            result.passes.append(row)
            skipped = sample.passes - last.passes - 1
            covered = ", ".join(f"{m} {n}" for m, n in sorted(sample.covered.items()) if n)
            print(
                f"  {row.at:>6.1f} {row.method:<26} {sample.seconds:>7.2f} {sample.cpu_seconds:>6.2f}"
                f" {sample.complete!s:>8} {sample.eligible:>8}  {covered}"
                + (f"  (+{skipped} pass(es) between two reads)" if skipped > 0 else "")
                + (f"  command started ({sample.actions - last.actions})" if sample.actions > last.actions else "")
                + f"  RSS {row.rss_mib:.0f} MiB, load {row.load}",
                flush=True,
            )
            if sample.actions > baseline.actions and first_action is None:
                first_action = row.at
            last = sample
    finally:
        if profiler is not None:
            profiler.stop()
    with open(ctrl.log, encoding="utf-8", errors="replace") as log:
        log.seek(log_start)
        result.commands = commands(log.read().splitlines())
    result.build["controller_cpu_seconds_measured"] = round(proc_stats(ctrl.pid)[1] - cpu0, 1)
    result.build["failed_scrapes"] = failed


def report(args: argparse.Namespace, result: Result, peak: float) -> None:
    print(f"\nsweep over karpy's kwok fleet — {machine()}; load now {load_average()}")
    print(f"built: {json.dumps(result.build)}")
    consolidating = [r for r in result.passes if r.sample.eligible > 0]
    if consolidating:
        first = consolidating[0]
        s = first.sample
        covered = {m: n for m, n in s.covered.items() if n}
        print(
            f"first consolidation pass: {s.seconds:.2f} s wall, {s.cpu_seconds:.2f} s CPU, ended by {first.method},"
            f" {'complete' if s.complete else 'stopped on its budget (resumed next pass)'};"
            f" {s.eligible} candidates, covered {covered}; RSS {first.rss_mib:.0f} MiB"
        )
    for cmd in result.commands:
        print(f"command: {cmd}")
    print(f"controller peak RSS {peak:.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep_e2e", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000, help="pods of the Deployments (the measured fleet's)")
    parser.add_argument("--plan-pods", type=int, default=33_000, help="pods the fleet is planned for")
    parser.add_argument("--build-type", default=BUILD_TYPE, help="the one instance type the fleet is built of")
    parser.add_argument("--running-timeout", type=float, default=2400.0, help="seconds to wait for all pods Running")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to watch passes at most")
    parser.add_argument("--follow", type=float, default=0.0, help="seconds to watch passes after the first command")
    parser.add_argument("--out", type=Path, help="keep the result, the controller's log and /metrics here")
    parser.add_argument("--py-spy", help="py-spy binary: profile the controller while passes are watched (needs --out)")
    args = parser.parse_args(argv)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    module_dir = Path(run_sh("--module-dir").strip().splitlines()[-1])
    catalog = kwok_catalog(json.loads((module_dir / KWOK_TYPES).read_text()))
    print(f"{args.pods:,} pods on the fleet planned for {args.plan_pods:,} ({args.build_type}); load {load_average()}")
    result = Result()
    peak = 0.0
    with tempfile.TemporaryDirectory(prefix="karpy-sweep-") as tmp:
        work = Path(tmp)
        catalog_file = work / "catalog.json"
        catalog_file.write_text(json.dumps(catalog))
        cluster = LocalCluster(work / "cluster")
        started = time.monotonic()
        cluster.up(timeout=180)
        try:
            ctrl, port = start_karpy(cluster, work, catalog_file, CLUSTER_NAME, "karpy-sweep")
            result.build["cluster_seconds"] = round(time.monotonic() - started, 1)
            try:
                build(args, cluster, work, catalog, ctrl, result)
                measure(args, cluster, ctrl, port, result)
                peak = proc_stats(ctrl.pid)[0]
                final = scrape(port)
                if args.out and final is not None:
                    (args.out / "controller-metrics.txt").write_text(final)
            finally:
                procs.stop(ctrl)
                if args.out:
                    shutil.copyfile(ctrl.log, args.out / "controller.log")
                    rows = [{**vars(r), "sample": vars(r.sample)} for r in result.passes]
                    (args.out / "result.json").write_text(
                        json.dumps({"build": result.build, "passes": rows, "commands": result.commands}, indent=1)
                    )
        finally:
            cluster.down()
    report(args, result, peak)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
