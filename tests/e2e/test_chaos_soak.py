"""Chaos soak (issue 20): an hour of chaos loses nothing — `make soak`, never the default suite.

On a control plane of its own (its kube-apiserver is restarted) with the simulated cloud, two
controller replicas (leader election, consolidation on) face, for `KARPY_SOAK_MINUTES` (30 by
default), one random action every 2–6 s:
- scale: a Deployment (`web` 500m/512Mi, `batch` 1 CPU/2Gi, `spread` 250m with a hostname
  topology spread, `zonal` 250m with a zonal `DoNotSchedule` spread of maxSkew 1, gated by karpy's
  pod webhook as in `controller/provisioning/spreadpin.py`) or the StatefulSet `db` (500m/512Mi,
  a dynamic `WaitForFirstConsumer` claim per pod, served by the fake CSI external provisioner of
  `tests/support/csiprovisioner.py`) to a random size, including 0;
- delete-node: `kubectl delete` a random karpy node (termination drains it);
- kill: SIGKILL a random controller replica (the leader half the time), restarted 2–10 s later;
- apiserver: stop kube-apiserver, 1–4 s down, start it again;
- fault: the next 1–3 launches fail (insufficient capacity, or a plain cloud error), or an
  offering (type, zone, capacity type) goes into an outage for 60 s, or the cloud's API misbehaves
  (`store.fail_next_calls`): the next 1–5 calls of CreateFleet, TerminateInstances or
  DescribeInstances are throttled (RequestLimitExceeded), or one times out after 1–5 s with
  nothing done, or a CreateFleet/TerminateInstances takes effect and its answer is lost after
  1–3 s (a launched instance karpy never hears of: garbage collection's). The controllers run
  with the simulated cloud's EC2 rate limits on (the default).
Between actions the invariants are checked on the live cluster:
- placement: no bound pod breaks kube-scheduler's order-independent rules (resources, taints,
  selectors, affinity; `tests/support/placement.py`, independent of karpy);
- volumes: every claim of a bound pod Bound, its volume allowing the pod's node (the volume's
  zone is the node's zone), attach limits kept (`placement.volume_violations`);
- the instance ledger: every simulated instance has a Node and every karpy Node an instance,
  allowing `LEDGER_GRACE` seconds for launches, terminations and garbage collection in flight
  (a mismatch that outlives it is a leaked or lost instance);
- pending: no pod stays Pending longer than `PENDING_LIMIT` (the cloud always has capacity left:
  a fault blocks a few launches or one offering at a time);
- memory: each controller process's peak RSS stays under `MEMORY_LIMIT_MB`.
At the end the chaos stops (controllers up, outages over), `zonal` goes to 0 and back to
its largest size (a scale-down removes pods whatever their zone, so only a fresh scale-up says
where karpy put them), and once every workload is Running at its size the zonal spread must be
within maxSkew over the provisioner's three zones (`placement.spread_skew_violations`) and the
volume and placement rules hold. Then every workload goes to 0 and the cluster must settle: no
karpy node, no instance. The counts and every violation are printed; the test fails on any violation.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.cloudprovider.simulated.provider import provider_id
from controller.cloudprovider.simulated.store import (
    FAULT_ANSWER_LOST,
    FAULT_ERROR,
    FAULT_INSUFFICIENT_CAPACITY,
    FAULT_THROTTLE,
    FAULT_TIMEOUT,
)
from controller.core import labels as L
from localcluster import LocalCluster, procs
from tests.e2e.controller.test_volumes import STATEFULSETS, cluster_volumes, statefulset, storage_class
from tests.e2e.env import Controller, KarpyEnv, karpy_env, webhook_server_on
from tests.support.csiprovisioner import DRIVER, FakeProvisioner
from tests.support.placement import final_violations, spread_skew_violations, volume_violations
from tests.support.poll import settled, until

MINUTES = float(os.environ.get("KARPY_SOAK_MINUTES", "30"))
# the suite's 900 s per-test timeout would end it: the chaos, then up to 15 min to set up and settle
pytestmark = [pytest.mark.e2e, pytest.mark.soak, pytest.mark.timeout(MINUTES * 60 + 900)]
SEED = int(os.environ.get("KARPY_SOAK_SEED", str(int(time.time()))))
LEDGER_GRACE = 120.0  # launch → Node, Node deleted → instance terminated, a leak → collected (gc 5 s)
PENDING_LIMIT = 300.0  # batch windows (≤ 10 s) + launch + kwok, with kills, restarts and faults in the way
MEMORY_LIMIT_MB = 400.0
FLAGS = (
    "--gc-leak-seconds", "5", "--gc-interval-seconds", "2",
    "--batch-idle-seconds", "1", "--batch-max-seconds", "10",
    "--deprovisioning-interval-seconds", "1", "--validation-wait-seconds", "2",
    "--poll-period-seconds", "2", "--consolidated-reset-seconds", "10",
    "--replacement-timeout-seconds", "120", "--lease-duration-seconds", "5",
)  # fmt: skip
TYPES = ["m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "c5.2xlarge", "r5.large", "r5.xlarge"]
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
API_CALLS = ("create_fleet", "terminate_instances", "describe_instances")  # the simulated cloud's EC2 calls
ZONE = "topology.kubernetes.io/zone"
WORKLOADS = {
    "web": (20, "500m", "512Mi"), "batch": (10, "1", "2Gi"),
    "spread": (12, "250m", "256Mi"), "zonal": (9, "250m", "256Mi"),
}  # fmt: skip
SPREADS = {"spread": L.HOSTNAME, "zonal": ZONE}
STATEFUL, STATEFUL_MAX, STORAGE_CLASS = "db", 6, "soak-csi"
SETTLE_LIMIT = 300.0  # the end: every workload Running at its size


@dataclass
class Tally:
    actions: dict[str, int] = field(default_factory=dict)
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)

    def count(self, action: str) -> None:
        self.actions[action] = self.actions.get(action, 0) + 1

    def violate(self, what: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')} {what}"
        print(f"VIOLATION {stamped}", flush=True)
        self.violations.append(stamped)


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("soak-cluster"))
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def rss_mb(ctrl: Controller) -> float:
    try:
        with open(f"/proc/{ctrl.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def instance_ids(karpy: KarpyEnv) -> list[str]:
    """The running instances' provider IDs, read from the cloud's store: not through an API call,
    which would spend a fault queued for the controllers."""
    return [provider_id(r.zone, r.instance_id) for r in karpy.cloud.store.running(karpy.namespace)]


class Soak:
    def __init__(self, karpy: KarpyEnv, cluster: LocalCluster, rng: random.Random, tally: Tally) -> None:
        self.karpy, self.cluster, self.rng, self.tally = karpy, cluster, rng, tally
        self.replicas: dict[str, Controller | None] = {"replica-a": None, "replica-b": None}
        self.down_since: dict[str, float] = {}
        self.mismatch_since: dict[str, float] = {}
        self.pending_since: dict[str, float] = {}
        self.outages: list[tuple[float, tuple[str, str, str]]] = []
        self.sizes: dict[str, int] = {**dict.fromkeys(WORKLOADS, 2), STATEFUL: 2}

    # actions --------------------------------------------------------------------------------

    def start(self, identity: str) -> None:
        self.replicas[identity] = self.karpy.start(identity, *FLAGS, wait_ready=False)
        self.down_since.pop(identity, None)

    def act(self) -> None:
        now = time.monotonic()
        for identity, since in list(self.down_since.items()):
            if now >= since:
                self.start(identity)
        action = self.rng.choices(["scale", "delete-node", "kill", "apiserver", "fault"], weights=[50, 12, 14, 6, 18])[
            0
        ]
        getattr(self, action.replace("-", "_"))()
        self.tally.count(action)

    def scale(self) -> None:
        name = self.rng.choice([*WORKLOADS, STATEFUL])
        self.resize(name, self.rng.randint(0, STATEFUL_MAX if name == STATEFUL else WORKLOADS[name][0]))

    def resize(self, name: str, replicas: int) -> None:
        if name == STATEFUL:
            self.karpy.kube.patch(STATEFULSETS, name, {"spec": {"replicas": replicas}}, self.karpy.namespace)
        else:
            self.karpy.scale(name, replicas)
        self.sizes[name] = replicas

    def delete_node(self) -> None:
        nodes = [n["metadata"]["name"] for n in self.karpy.nodes() if not n["metadata"].get("deletionTimestamp")]
        if nodes:
            self.cluster.kubectl("delete", "node", self.rng.choice(nodes), "--wait=false", check=False)

    def kill(self) -> None:
        alive = [i for i, c in self.replicas.items() if c is not None and i not in self.down_since]
        if not alive:
            return
        running = {i: c for i, c in self.replicas.items() if c is not None and i in alive}
        leaders = [i for i, c in running.items() if c.status().get("leader")]
        identity = self.rng.choice(leaders if leaders and self.rng.random() < 0.5 else alive)
        ctrl = running[identity]
        self.tally.peak_rss_mb[identity] = max(self.tally.peak_rss_mb.get(identity, 0.0), rss_mb(ctrl))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(ctrl.proc.pid, signal.SIGKILL)  # no SIGTERM first: nothing gets to finish
        procs.wait_until(f"{identity} gone", lambda: not procs.alive(ctrl.proc), 10)
        self.down_since[identity] = time.monotonic() + self.rng.uniform(2, 10)

    def apiserver(self) -> None:
        self.cluster.restart("kube-apiserver", downtime=self.rng.uniform(1, 4))

    def fault(self) -> None:
        store = self.karpy.cloud.store
        draw = self.rng.random()
        if draw < 0.35:
            kind = self.rng.choice([FAULT_INSUFFICIENT_CAPACITY, FAULT_ERROR])
            store.fail_next_creates(self.rng.randint(1, 3), kind)
        elif draw < 0.55:
            offering = (self.rng.choice(TYPES), self.rng.choice(ZONES), self.rng.choice(["spot", "on-demand"]))
            store.set_outage(*offering)
            self.outages.append((time.monotonic() + 60, offering))
            kind = "outage"
        elif draw < 0.75:
            kind = FAULT_THROTTLE
            store.fail_next_calls(self.rng.choice(API_CALLS), self.rng.randint(1, 5), kind)
        elif draw < 0.9:
            kind = FAULT_TIMEOUT
            store.fail_next_calls(self.rng.choice(API_CALLS), 1, kind, self.rng.uniform(1, 5))
        else:
            kind = FAULT_ANSWER_LOST
            store.fail_next_calls(self.rng.choice(API_CALLS[:2]), 1, kind, self.rng.uniform(1, 3))
        self.tally.count(f"fault:{kind}")

    # invariants -----------------------------------------------------------------------------

    def check(self) -> None:
        now = time.monotonic()
        for until_, offering in list(self.outages):
            if now >= until_:
                self.karpy.cloud.store.set_outage(*offering, on=False)
                self.outages.remove((until_, offering))
        nodes, pods = self.karpy.nodes(), self.karpy.pods()
        for problem in final_violations(nodes, pods):
            self.tally.violate(f"placement: {problem}")
        # claims and volumes read after the pods: kube-scheduler binds a pod once its claims are Bound
        for problem in volume_violations(nodes, pods, cluster_volumes(self.karpy)):
            self.tally.violate(f"volumes: {problem}")
        self._ledger(nodes, now)
        self._pending(pods, now)
        for identity, ctrl in self.replicas.items():
            if ctrl is not None and identity not in self.down_since:
                rss = rss_mb(ctrl)
                self.tally.peak_rss_mb[identity] = max(self.tally.peak_rss_mb.get(identity, 0.0), rss)
                if rss > MEMORY_LIMIT_MB:
                    self.tally.violate(f"memory: {identity} at {rss:.0f} MB")
        self.tally.checks += 1

    def _ledger(self, nodes: list[dict[str, Any]], now: float) -> None:
        instances = set(instance_ids(self.karpy))
        provider_ids = {str(n["spec"].get("providerID")) for n in nodes if n["spec"].get("providerID")}
        current = {f"instance without a Node: {p}" for p in instances - provider_ids}
        current |= {f"Node without an instance: {p}" for p in provider_ids - instances}
        for gone in set(self.mismatch_since) - current:
            del self.mismatch_since[gone]
        for what in current:
            since = self.mismatch_since.setdefault(what, now)
            if now - since > LEDGER_GRACE:
                self.tally.violate(f"ledger: {what} for {now - since:.0f}s")
                self.mismatch_since[what] = now  # report again only after another grace period

    def _pending(self, pods: list[dict[str, Any]], now: float) -> None:
        pending = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in pods
            if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        }
        for gone in set(self.pending_since) - pending:
            del self.pending_since[gone]
        for key in pending:
            since = self.pending_since.setdefault(key, now)
            if now - since > PENDING_LIMIT:
                self.tally.violate(f"pending: {key} for {now - since:.0f}s")
                self.pending_since[key] = now

    # the end ---------------------------------------------------------------------------------

    def all_running(self) -> bool:
        return all(len(self.karpy.running(name)) == size for name, size in self.sizes.items())

    def end_state(self) -> None:
        """Every workload Running at its size, `zonal` freshly scaled up: spread, volumes, placement."""
        self.resize("zonal", 0)
        until(lambda: not self.karpy.pods("zonal"), 120, "the zonal spread's pods gone")
        self.resize("zonal", WORKLOADS["zonal"][0])
        until(self.all_running, SETTLE_LIMIT, f"every workload Running at its size {self.sizes}", interval=1)
        nodes, pods = self.karpy.nodes(), self.karpy.pods()
        for problem in spread_skew_violations(nodes, pods, ZONE, ZONES):
            self.tally.violate(f"end state: {problem}")
        for problem in volume_violations(nodes, pods, cluster_volumes(self.karpy)) + final_violations(nodes, pods):
            self.tally.violate(f"end state: {problem}")


def test_chaos_soak(own_cluster: LocalCluster, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tally = Tally()
    print(f"\nchaos soak: {MINUTES:g} min, seed {SEED}", flush=True)
    webhook = tmp_path / "webhook"
    webhook.mkdir()
    with (
        webhook_server_on(own_cluster, webhook),
        karpy_env(own_cluster, tmp_path) as karpy,
        FakeProvisioner(karpy.kube) as csi,
    ):
        karpy.provisioner(
            consolidation={"enabled": True},
            requirements=[
                {"key": L.INSTANCE_TYPE, "operator": "In", "values": TYPES},
                {"key": ZONE, "operator": "In", "values": ZONES},
            ],
            limits={"resources": {"cpu": "400"}},
        )
        soak = Soak(karpy, own_cluster, rng, tally)
        for identity in soak.replicas:
            soak.start(identity)
        for name, (_, cpu, memory) in WORKLOADS.items():
            extra: dict[str, Any] = {}
            if name in SPREADS:
                extra["topologySpreadConstraints"] = [
                    {"maxSkew": 1, "topologyKey": SPREADS[name], "whenUnsatisfiable": "DoNotSchedule",
                     "labelSelector": {"matchLabels": {"app": name}}}]  # fmt: skip
            karpy.deployment(name, 2, cpu=cpu, memory=memory, **extra)
        karpy.apply(storage_class(STORAGE_CLASS, DRIVER))
        karpy.apply(statefulset(karpy.namespace, STATEFUL, 2, STORAGE_CLASS))
        started = time.monotonic()
        deadline = started + MINUTES * 60
        while time.monotonic() < deadline:
            try:
                soak.act()
                pause = time.monotonic() + rng.uniform(2, 6)
                while time.monotonic() < pause:
                    soak.check()
                    time.sleep(1)  # the checks' own pace, not a synchronisation
            except Exception as err:  # an action or a check that met the chaos: counted, the soak goes on
                tally.count(f"error:{type(err).__name__}")
        # the end: the controllers up, faults cleared, the end state checked, then everything scaled to 0
        for identity in list(soak.down_since):
            soak.start(identity)
        for _, offering in soak.outages:
            karpy.cloud.store.set_outage(*offering, on=False)
        final_started = time.monotonic()
        soak.end_state()
        settled_in, end_sizes = time.monotonic() - final_started, dict(soak.sizes)
        for name in [*WORKLOADS, STATEFUL]:
            soak.resize(name, 0)
        final = time.monotonic()

        def leftovers() -> str:
            nodes, instances = karpy.nodes(), instance_ids(karpy)
            return f"{len(nodes)} nodes, {len(instances)} instances" if nodes or instances else ""

        settled(leftovers, 300, "every node and instance gone after scaling to 0")
        for ctrl in soak.replicas.values():
            if ctrl is not None:
                assert procs.alive(ctrl.proc), "a controller exited by itself"
        print(
            f"chaos soak done: {(final_started - started) / 60:.1f} min of chaos, every workload Running at its size "
            f"{end_sizes} {settled_in:.0f}s after it; {len(csi.provisioned)} volumes provisioned; "
            f"emptied in {time.monotonic() - final:.0f}s; "
            f"actions {dict(sorted(tally.actions.items()))}; {tally.checks} invariant checks; "
            f"controller peak RSS {', '.join(f'{k} {v:.0f} MB' for k, v in sorted(tally.peak_rss_mb.items()))}; "
            f"violations {len(tally.violations)}",
            flush=True,
        )
    assert tally.violations == []
