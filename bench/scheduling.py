"""Scheduling throughput, price and memory (`make bench`), modelled on Karpenter's own benchmark.

Karpenter's `scheduling_benchmark_test.go` (spec §10): one provisioner, no existing nodes, no
daemonsets, a few hundred instance types, and pods from a seeded random generator. Here:
- instance types: the whole simulated catalog (442 AWS-shaped types, spot and on-demand in
  three zones); the provisioner `bench` allows linux, spot and on-demand, nothing else;
- `diverse N`: five equal parts — generic pods, zonal topology spread, hostname topology
  spread (both maxSkew 1, DoNotSchedule, selector `my-label` a–g), zonal self-affinity
  (`my-affininity` a–g) and hostname anti-affinity (all `app: nginx`, mutually anti-affine) —
  with cpu from {100m, 250m, 500m, 1, 1500m} and memory from {100Mi … 4Gi}, `random.Random(42)`;
- `preferences 4000`: Karpenter's preference pods (a satisfiable zone preference, an
  unsatisfiable zonal anti-affinity preference and a hostname one);
- `anti-affinity 500`: mutually anti-affine pods (100m / 128Mi), one node each;
- `generic N`: generic pods only — the price target (≤ 1.05 × the LP lower bound).
For each: pods/s (pods ÷ wall time of one `schedule()` call, median of repeats for small N —
repeats reuse the memoised instance-type table, as Karpenter reuses its instance-type cache; and
÷ process CPU time, which other load on the machine does not inflate),
nodes, total $/hour of the launches, the LP lower bound (cover the pods' total cpu and memory
with the allowed instance types' allocatable at their cheapest allowed price, fractionally),
their ratio, and peak RSS of a fresh process that built the pods and scheduled them.

    python -m bench.scheduling                # everything
    python -m bench.scheduling --quick        # smaller sizes
    python -m bench.scheduling --one diverse 5000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.scheduling.packing import lp_cover
from controller.scheduling.pods import pod_request
from controller.scheduling.provisioners import template_requirements
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import PodRequest, ProvisionerSpec, SchedulingInput, SchedulingResult
from controller.scheduling.typetable import TypeTable

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
FULL = [("diverse", n) for n in (1, 100, 1000, 5000, 20000)] + [
    ("preferences", 4000),
    ("anti-affinity", 500),
    ("generic", 1000),
    ("generic", 5000),
    ("generic", 20000),
]
QUICK = [("diverse", 100), ("diverse", 1000), ("anti-affinity", 500), ("generic", 1000)]


class Pods:
    """Karpenter's pod generators, on one seeded random stream."""

    def __init__(self, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.count = 0

    def _value(self) -> str:
        return self.rng.choice("abcdefg")

    def pod(self, labels: dict[str, str], cpu: str | None = None, memory: str | None = None, **spec: Any) -> PodRequest:
        self.count += 1
        cpu = cpu or self.rng.choice(["100m", "250m", "500m", "1000m", "1500m"])
        memory = memory or self.rng.choice(["100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"])
        containers = [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
        meta = {"name": f"pod-{self.count}", "namespace": "default", "labels": labels, "uid": f"uid-{self.count:06d}"}
        return pod_request({"metadata": meta, "spec": {"containers": containers, **spec}})

    def generic(self, n: int) -> list[PodRequest]:
        return [self.pod({"my-label": self._value()}) for _ in range(n)]

    def spread(self, n: int, key: str) -> list[PodRequest]:
        out = []
        for _ in range(n):
            labels = {"my-label": self._value()}
            constraint = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                          "labelSelector": {"matchLabels": {"my-label": self._value()}}}  # fmt: skip
            out.append(self.pod(labels, topologySpreadConstraints=[constraint]))
        return out

    def self_affinity(self, n: int, key: str) -> list[PodRequest]:
        out = []
        for _ in range(n):
            labels = {"my-affininity": self._value()}
            term = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
            out.append(
                self.pod(labels, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
            )
        return out

    def anti_affinity(self, n: int, key: str, cpu: str | None = None, memory: str | None = None) -> list[PodRequest]:
        labels = {"app": "nginx"}
        term = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return [self.pod(labels, cpu, memory, affinity=anti) for _ in range(n)]

    def diverse(self, n: int) -> list[PodRequest]:
        part = n // 5
        pods = self.generic(part) + self.spread(part, ZONE) + self.spread(part, HOSTNAME)
        pods += self.self_affinity(part, ZONE) + self.anti_affinity(part, HOSTNAME)
        return pods + self.generic(n - len(pods))

    def preferences(self, n: int) -> list[PodRequest]:
        labels = {"app": "nginx"}
        affinity = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": ["us-west-2a"]}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"topologyKey": ZONE, "labelSelector": {"matchLabels": labels}}},
                {"weight": 1, "podAffinityTerm": {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": labels}}},
            ]},
        }  # fmt: skip
        return [self.pod(labels, affinity=affinity) for _ in range(n)]


def workload(scenario: str, n: int) -> list[PodRequest]:
    pods = Pods()
    if scenario == "diverse":
        return pods.diverse(n)
    if scenario == "preferences":
        return pods.preferences(n)
    if scenario == "anti-affinity":
        return pods.anti_affinity(n, HOSTNAME, "100m", "128Mi")
    if scenario == "generic":
        return pods.generic(n)
    raise SystemExit(f"unknown scenario {scenario!r}")


def provisioner() -> ProvisionerSpec:
    reqs = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    ]
    return ProvisionerSpec(name="bench", requirements=template_requirements("bench", reqs, {}))


def lower_bound(pods: list[PodRequest], spec: ProvisionerSpec) -> float:
    catalog = simulated_catalog()
    table = TypeTable(catalog, ["cpu", "memory", "pods"])
    reqs = spec.requirements
    price = table.prices(reqs)
    ok = table.compatible(reqs, frozenset(reqs.values())) & np.isfinite(price)
    need = np.array([sum(p.requests.get("cpu", 0) for p in pods), sum(p.requests.get("memory", 0) for p in pods), 0])
    cost, _ = lp_cover(table.alloc[ok], price[ok], need)
    return cost


def run_one(scenario: str, n: int) -> dict[str, Any]:
    pods = workload(scenario, n)
    spec = provisioner()
    inp = SchedulingInput(pods=pods, provisioners=[spec], instance_types=simulated_catalog())
    times: list[float] = []
    cpu_times: list[float] = []
    result: SchedulingResult | None = None
    budget = time.perf_counter() + (2.0 if n < 1000 else 0.0)
    while result is None or (time.perf_counter() < budget and len(times) < 50):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = schedule(inp)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    price = sum(node.launch.price for node in result.new_nodes if node.launch is not None)
    bound = lower_bound(pods, spec)
    return {
        "scenario": scenario,
        "pods": n,
        "pods_per_second": n / statistics.median(times),
        "pods_per_cpu_second": n / max(statistics.median(cpu_times), 1e-9),
        "nodes": len(result.new_nodes),
        "price": price,
        "bound": bound,
        "ratio": price / bound if bound else float("nan"),
        "unschedulable": len(result.unschedulable),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scheduling", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes only")
    parser.add_argument("--one", nargs=2, metavar=("SCENARIO", "PODS"), help="run one scenario, print JSON")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return 0
    print(f"scheduling benchmark: {len(simulated_catalog())} instance types, one provisioner, seed 42")
    header = (
        f"{'scenario':<14}{'pods':>7}{'pods/s':>9}{'(cpu)':>8}{'nodes':>7}{'$/hour':>10}{'LP bound':>10}{'ratio':>7}"
    )
    print(header + f"{'peak MiB':>10}{'unsched':>9}")
    for scenario, n in QUICK if args.quick else FULL:
        child = subprocess.run(
            [sys.executable, "-m", "bench.scheduling", "--one", scenario, str(n)],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            print(f"{scenario} {n}: failed\n{child.stderr}", file=sys.stderr)
            return 1
        r = json.loads(child.stdout)
        print(
            f"{r['scenario']:<14}{r['pods']:>7}{r['pods_per_second']:>9.0f}{r['pods_per_cpu_second']:>8.0f}"
            f"{r['nodes']:>7}{r['price']:>10.2f}{r['bound']:>10.2f}{r['ratio']:>7.3f}{r['peak_mib']:>10.0f}"
            f"{r['unschedulable']:>9}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
