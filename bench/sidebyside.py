"""Side by side with Karpenter (`make bench-karpenter`): same machine, identical inputs, one table.

For each scenario (defined in `bench/karpenter/overlay/karpy_scenario_test.go`: Karpenter's own
benchmark cases — 1k/5k/20k diverse pods, the two preference cases — plus 500 mutually
anti-affine pods and 5,000 generic pods, all from Karpenter's generators on its seed 42):
1. `bench/karpenter/run.sh SCENARIO DIR` (a fresh Go process) generates the pods, writes them,
   Karpenter's 400 fake instance types with every offering and price, and its NodePool as a
   Provisioner to DIR, runs Karpenter's own `benchmarkScheduler` on exactly those pods (pods/sec),
   prices its NodeClaims (cheapest compatible offering of their options) and reports its peak RSS;
2. `python -m bench.sidebyside --karpy DIR` (a fresh Python process) reads DIR with the readers
   of `karpy simulate --catalog DIR/catalog.json --provisioners DIR/provisioners.yaml --pods
   DIR/pods.json` and schedules on the catalog exactly as exported (`karpy simulate` itself
   would also reshape it for an AWS node template — AL2 defaults — changing the allocatable of
   Karpenter's fake types, so the harness calls the scheduler directly), times `schedule()` —
   the first (cold) call, then repeats for up to 3 s, reporting the median of the repeats,
   which reuse the memoised instance-type table as Karpenter's timed Solve runs after its
   untimed set-up — and reports nodes, $/hour of the launches and its peak RSS.
The inputs stay in DIR (under ~/.cache/karpy/karpenter-bench/inputs/) for a look with `karpy simulate`.

    python -m bench.sidebyside                      # every scenario
    python -m bench.sidebyside --scenarios diverse-1000 anti-affinity-500
    python -m bench.sidebyside --karpy DIR          # karpy on exported inputs, one JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput
from controller.simulate.inputs import read_catalog, read_inputs

RUN_SH = Path(__file__).resolve().parent / "karpenter" / "run.sh"
SCENARIOS = (
    "diverse-1000",
    "diverse-5000",
    "diverse-20000",
    "preferences-respect-4000",
    "preferences-ignore-4000",
    "anti-affinity-500",
    "generic-5000",
)


def inputs_root() -> Path:
    return Path(os.environ.get("KARPY_CACHE", Path.home() / ".cache" / "karpy")) / "karpenter-bench" / "inputs"


def run_karpy(directory: Path) -> dict[str, Any]:
    """karpy on one exported scenario: `karpy simulate`'s readers, the catalog as exported."""
    inputs = read_inputs([str(directory / "provisioners.yaml"), str(directory / "pods.json")])
    catalog = read_catalog(str(directory / "catalog.json"))
    inp = SchedulingInput(
        pods=inputs.pods, provisioners=inputs.provisioners, instance_types=catalog, daemonsets=inputs.daemonsets
    )
    walls: list[float] = []
    cpus: list[float] = []
    budget = time.perf_counter() + 3.0
    while not walls or (len(walls) < 11 and time.perf_counter() < budget):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = schedule(inp)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    n = len(inputs.pods)
    warm = walls[1:] or walls
    return {
        "pods": n,
        "pods_per_sec_cold": n / walls[0],
        "pods_per_sec": n / statistics.median(warm),
        "pods_per_cpu_sec": n / max(statistics.median(cpus[1:] or cpus), 1e-9),
        "runs": len(walls),
        "nodes": len(result.new_nodes),
        "price": sum(node.launch.price for node in result.new_nodes if node.launch is not None),
        "unschedulable": len(result.unschedulable),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def run_karpenter(scenario: str, directory: Path) -> dict[str, Any]:
    child = subprocess.run([str(RUN_SH), scenario, str(directory)], capture_output=True, text=True, check=False)
    for line in child.stdout.splitlines():
        if line.startswith("KARPY_RESULT "):
            found: dict[str, Any] = json.loads(line.removeprefix("KARPY_RESULT "))
            return found
    raise RuntimeError(f"Karpenter's benchmark failed on {scenario}:\n{child.stdout[-3000:]}\n{child.stderr[-3000:]}")


def _karpy_child(directory: Path) -> dict[str, Any]:
    child = subprocess.run(
        [sys.executable, "-m", "bench.sidebyside", "--karpy", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"karpy failed on {directory}:\n{child.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    return found


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.system()} {platform.machine()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--karpy", metavar="DIR", help="run karpy on one exported scenario, print JSON")
    args = parser.parse_args(argv)
    if args.karpy:
        print(json.dumps(run_karpy(Path(args.karpy))))
        return 0
    build = subprocess.run([str(RUN_SH), "--build"], text=True, check=False)
    if build.returncode != 0:
        return 1
    version = subprocess.run([str(RUN_SH), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    root = inputs_root() / version
    print(f"karpy vs Karpenter {version} scheduling benchmark — {machine()}")
    print(f"identical inputs (Karpenter's 400 fake instance types, its NodePool, its pods, seed 42) in {root}/")
    header = (
        f"{'scenario':<25}{'pods':>6} | {'pods/s K':>9}{'karpy':>9}{'ratio':>7}{'(cold)':>8}"
        f" | {'nodes K':>8}{'karpy':>7} | {'$/h K':>9}{'karpy':>9}{'ratio':>7} | {'MiB K':>6}{'karpy':>6}"
    )
    print(header)
    print("-" * len(header))
    for scenario in args.scenarios:
        directory = root / scenario
        k = run_karpenter(scenario, directory)
        p = _karpy_child(directory)
        note = ""
        if k["unschedulable"] or p["unschedulable"]:
            note = f"  unschedulable K={k['unschedulable']} karpy={p['unschedulable']}"
        print(
            f"{scenario:<25}{k['pods']:>6} | {k['pods_per_sec']:>9.0f}{p['pods_per_sec']:>9.0f}"
            f"{_ratio(p['pods_per_sec'], k['pods_per_sec']):>7}{p['pods_per_sec_cold']:>8.0f}"
            f" | {k['nodes']:>8}{p['nodes']:>7}"
            f" | {k['price']:>9.2f}{p['price']:>9.2f}{_ratio(p['price'], k['price']):>7}"
            f" | {k['peak_rss_bytes'] / 2**20:>6.0f}{p['peak_rss_bytes'] / 2**20:>6.0f}{note}",
            flush=True,
        )
    print("K = Karpenter (its benchmarkScheduler: one timed Solve after set-up); karpy = median schedule() of")
    print("repeats (cold = the first call); $/h = sum of launch prices; MiB = peak RSS of the process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
