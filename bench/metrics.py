"""/metrics at 1,000 nodes / 20,000 pods (`make bench-scale`, issue 21): size and CPU per scrape.

In process, from the fleet `bench/consolidation.py` reads (`bench/clusters.py`: `--nodes` karpy
nodes of five types, `--pods` ReplicaSet pods bound to them, 45–85 % full) fed into cluster
state as the informers would, with the simulated catalog's prices. A scrape is what the controller
does for one: a snapshot, the capacity gauges collected and written (`exposition()` of a registry
holding only them: the controller's other series are a few hundred lines), then gzip when asked.
Printed, before (the families as prometheus_client samples, `tests/controller/capacity_reference.py`)
and now (written straight to text, `controller/capacity.py`):

- size plain and gzipped (zlib level 1, karpy's, and 6, Go's default);
- process CPU per scrape (median of `--repeat`): now the first scrape, a scrape of the same
  state (lines kept), and one after `--churn` pods changed (each a new resourceVersion and phase,
  so its line and its node's are written again); and the gzip of the body at each level;
- the lines kept between scrapes (MiB of text), and the wall time of `--flood` scrapes sent at once
  through the controller's HTTP server (one writing shared by the scrapes that arrive together).

    python -m bench.metrics [--nodes 1000] [--pods 20000] [--repeat 5] [--churn 200] [--flood 20]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import random
import statistics
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from bench.clusters import NOW, catalog, consolidation_cluster
from controller.capacity import CapacityCollector
from controller.clock import FakeClock
from controller.decisions import DecisionLog
from controller.exposition import exposition
from controller.httpserver import ControllerHTTPServer
from controller.insight import PriceKey
from controller.kube.resources import WATCHED
from controller.scrape import GZIP_LEVEL
from controller.state.cluster import ClusterState
from controller.state.snapshot import Snapshot
from tests.controller.capacity_reference import reference_families

MiB = 2**20


class Before(Collector):
    """The capacity gauges as they were collected before: one prometheus_client sample a series."""

    def __init__(self, snapshot: Callable[[], Snapshot], prices: Mapping[PriceKey, float]) -> None:
        self._snapshot, self._prices = snapshot, prices

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from reference_families(self._snapshot(), self._prices)


def registry_of(collector: Collector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def cpu_of(scrape: Callable[[], bytes], repeat: int, between: Callable[[], None] = lambda: None) -> tuple[float, bytes]:
    """The median process CPU seconds of `scrape()` over `repeat` runs (`between()` before each, not
    counted), and the last body."""
    spent, body = [], b""
    for _ in range(repeat):
        between()
        started = time.process_time()
        body = scrape()
        spent.append(time.process_time() - started)
    return statistics.median(spent), body


def gzip_cost(body: bytes, level: int) -> tuple[int, float]:
    started = time.process_time()
    packed = gzip.compress(body, compresslevel=level, mtime=0)
    return len(packed), time.process_time() - started


def churn(state: ClusterState, objects: list[dict[str, Any]], count: int, rng: random.Random) -> Callable[[], None]:
    """A step that changes `count` pods (new resourceVersion, phase flipped) before a scrape."""

    def step() -> None:
        for i in rng.sample(range(len(objects)), count):
            obj = copy.copy(objects[i])
            meta, status = dict(obj["metadata"]), dict(obj["status"])
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
            status["phase"] = "Succeeded" if status.get("phase") == "Running" else "Running"
            obj["metadata"], obj["status"] = meta, status
            objects[i] = obj
            state.apply("pods", "MODIFIED", obj)

    return step


def kept_mib(state: ClusterState, prices: Mapping[PriceKey, float]) -> float:
    """What a collector holds after a scrape, its body dropped (MiB, traced; the views it refers
    to are cluster state's own)."""
    state.snapshot()
    collector = CapacityCollector(state.snapshot, lambda: prices)
    tracemalloc.start()
    try:
        list(collector.collect())
        return tracemalloc.get_traced_memory()[0] / MiB
    finally:
        tracemalloc.stop()


def flood(text: Callable[[], bytes], count: int) -> tuple[float, int]:
    """`count` gzip scrapes sent at once through the controller's HTTP server: wall seconds until all
    are answered, and how many bodies were written for them."""
    writings = [0]

    def counted() -> bytes:
        writings[0] += 1
        return text()

    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {"synced": True}, metrics=counted)
    srv.start()
    codes: list[int] = []

    def scrape() -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{srv.port}/metrics", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()
            codes.append(resp.status)

    threads = [threading.Thread(target=scrape) for _ in range(count)]
    started = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        wall = time.monotonic() - started
    finally:
        srv.stop()
    if codes != [200] * count:
        raise RuntimeError(f"flood answered {sorted(codes)}")
    return wall, writings[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--churn", type=int, default=200, help="pods changed between the churn scrapes")
    parser.add_argument("--flood", type=int, default=20, help="scrapes sent at once through the HTTP server")
    args = parser.parse_args()

    objects = consolidation_cluster(args.nodes, args.pods, fill=(0.45, 0.85))
    pods = list(objects["pods"])
    state = ClusterState(FakeClock(NOW))
    for kind in WATCHED:
        state.replace(kind.name, objects.pop(kind.name, []))
    prices = {(it.name, o.zone, o.capacity_type): o.price for it in catalog() for o in it.offerings}
    print(f"{args.nodes} nodes, {len(pods)} pods; CPU seconds per scrape are the median of {args.repeat}")

    before = registry_of(Before(state.snapshot, prices))
    cpu_before, text_before = cpu_of(lambda: exposition(before), args.repeat)
    collector = CapacityCollector(state.snapshot, lambda: prices)
    now = registry_of(collector)
    cpu_first, text_now = cpu_of(lambda: exposition(registry_of(CapacityCollector(state.snapshot, lambda: prices))),
                                 args.repeat)  # fmt: skip
    if text_now != text_before:
        raise RuntimeError("the text differs from the families' text")
    exposition(now)  # the lines kept from here on
    cpu_kept, _ = cpu_of(lambda: exposition(now), args.repeat)
    step = churn(state, pods, args.churn, random.Random(1))
    cpu_churn, text_churn = cpu_of(lambda: exposition(now), args.repeat, step)
    if text_churn != exposition(registry_of(Before(state.snapshot, prices))):
        raise RuntimeError("after churn, the text differs from the families' text")
    kept = kept_mib(state, prices)
    size = len(text_now)
    print(f"  size: {size / MiB:.1f} MiB plain")
    for level in sorted({GZIP_LEVEL, 6}):
        packed, cpu = gzip_cost(text_now, level)
        print(f"        {packed / MiB:.2f} MiB gzipped at level {level} ({size / packed:.0f}x), {cpu:.3f} s CPU")
    print(f"  before (prometheus_client samples):  {cpu_before:.3f} s CPU a scrape")
    print(f"  now, first scrape (no lines kept):    {cpu_first:.3f} s")
    print(f"  now, the same state again:           {cpu_kept:.3f} s")
    print(f"  now, {args.churn} pods changed before each: {cpu_churn:.3f} s")
    print(f"  lines kept between scrapes: {kept:.1f} MiB (traced)")
    wall, writings = flood(lambda: exposition(now), args.flood)
    print(f"  {args.flood} gzip scrapes at once through the HTTP server: all answered in {wall:.2f} s;"
          f" bodies written for them: {writings}")  # fmt: skip


if __name__ == "__main__":
    main()
