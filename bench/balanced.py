"""Consolidation quality on Karpenter's Balanced-consolidation workload (`make bench-balanced`, issue 21).

Karpenter's RFC `designs/balanced-consolidation.md` ranks consolidation moves with a simulation,
`designs/scripts/balanced-consolidation-ranking.py` (kubernetes-sigs/karpenter, `KARPENTER_COMMIT`).
This bench regenerates that workload with our own code — the same distributions, parameters,
seed and random-number stream (numpy's PCG64, seed 42), so the same cluster, pod for pod:

- 5,000 pods, CPU ~ log-normal(0, 1) rounded to 0.5 and clipped to [0.25, 16] vCPU, memory ~
  log-normal(1.5, 1.2) rounded to 1 GiB and clipped to [1, 120] GiB, a disruption cost drawn
  from {0, 1, 1, 1, 1, 1, 10};
- packed first-fit-decreasing (by CPU × memory) onto the c7i / m7i / r7i on-demand types of the
  script (`TYPES`: its vCPUs, GiB and us-east-1 prices), a new node being the cheapest type that
  holds the pod;
- 10 churn rounds: on each node holding more than one pod, kill ⌊n × U(0, 0.8)⌋ of its pods,
  then try to add 0–3 new pods of the same distributions where they fit.

After each round the script lists its candidate moves (`moves`): REPLACE a node by the cheapest
type holding its pods, and DELETE a node whose pods fit, best-fit, into the others' free room —
each move judged alone against the round's cluster — and ranks them four ways (`STRATEGIES`):
score = (savings / pool cost) / (disruption / pool disruption), savings only, disruption only
(ascending), random (seed 43). A node's disruption is 1 + Σ max(0, pod cost).

Each round's cluster (exactly the script's, whatever was decided in earlier rounds: the script
never executes a move) is then consolidated three ways, and each gives a curve of cumulative
savings ($/h) against cumulative pods moved:

- *as the script counts*: every candidate move in rank order, each saving what it saves alone —
  moves that cannot all happen (two DELETEs counting on the same free room) are all counted;
- *executed*: the same rank order, each move carried out only if it still holds on the cluster the
  moves before it left (a DELETE's pods re-fitted best-fit into the room left, a REPLACE re-priced
  for the pods its node holds then);
- *karpy*: the controller's own deprovisioning pass (`deprovisioning/decide.py`, the real
  scheduler, no validation wait) run again and again on that cluster — one Provisioner,
  consolidation enabled, the same 26 types and prices as instance types with no overhead, one zone,
  each pod's cost as its `pod-deletion-cost` (cost 0 → −2^27, 10 → 9 × 2^27), pod i owned by
  ReplicaSet i mod 50 — every command applied as on a cluster (`halving.apply`: its replacements up, its
  candidates gone, each moving pod's successor where kube-scheduler's default scoring puts it —
  the accepting node with the most room left, not the plan's first fit — and those it finds no
  room for provisioned on new nodes, whose price counts against the command's saving) until no
  method acts. The executed rankings place pods best-fit, which kube-scheduler does not: their
  curves are a bound karpy's real placement does not promise.

Each round says whether, after every one of karpy's commands, its cumulative savings are at or
above the best ranking curve's at the same pods moved (a curve linear between its moves; past its
last move it saves no more), with the lowest margin; and the lowest margin at every breakpoint of
either curve up to karpy's last command, karpy's curve also taken as linear between its commands
(as if a command's saving came pod by pod), and every run of those levels where it is below the best
executed ranking. `--detail` prints every command (the nodes it removes, the nodes provisioning launched for its
spilled pods); `--order value`
consolidates by value (the `consolidation_order` setting, `deprovisioning/bestvalue.py`) instead of
Karpenter v0.31's order.

    python -m bench.balanced [--rounds 10] [--pods 5000] [--order first|value] [--detail]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.clusters import LAUNCHED, ready_node
from bench.halving import Cluster, apply
from controller.clock import FakeClock
from controller.core import labels as L
from controller.core.resources import parse_resources
from controller.deprovisioning.decide import decide
from controller.deprovisioning.types import (
    CONSOLIDATION_FIRST,
    CONSOLIDATION_ORDERS,
    DeprovisioningSettings,
    Inputs,
)
from controller.kube.resources import NODES, PODS, PROVISIONERS, WATCHED
from controller.scheduling.instancetypes import new_instance_type
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import InstanceType, Offering
from controller.state.cluster import ClusterState

KARPENTER_COMMIT = "0de9964bc2ff44edb950925c137ddee972098e0e"  # the script's last change (kubernetes-sigs/karpenter)
SEED = 42
PODS_TOTAL = 5000
ROUNDS = 10
DISRUPTION_COSTS = (0, 1, 1, 1, 1, 1, 10)
NODE_DISRUPTION = 1.0  # the script's fixed cost of disrupting any node

# (name, vCPUs, GiB, on-demand $/h): the script's table (us-east-1, Linux), in its order
TYPES: tuple[tuple[str, int, int, float], ...] = (
    ("c7i.large", 2, 4, 0.0893), ("c7i.xlarge", 4, 8, 0.1785), ("c7i.2xlarge", 8, 16, 0.3570),
    ("c7i.4xlarge", 16, 32, 0.7140), ("c7i.8xlarge", 32, 64, 1.4280), ("c7i.12xlarge", 48, 96, 2.1420),
    ("c7i.16xlarge", 64, 128, 2.8560), ("c7i.24xlarge", 96, 192, 4.2840),
    ("m7i.large", 2, 8, 0.1008), ("m7i.xlarge", 4, 16, 0.2016), ("m7i.2xlarge", 8, 32, 0.4032),
    ("m7i.4xlarge", 16, 64, 0.8064), ("m7i.8xlarge", 32, 128, 1.6128), ("m7i.12xlarge", 48, 192, 2.4190),
    ("m7i.16xlarge", 64, 256, 3.2260), ("m7i.24xlarge", 96, 384, 4.8384), ("m7i.48xlarge", 192, 768, 9.6768),
    ("r7i.large", 2, 16, 0.1323), ("r7i.xlarge", 4, 32, 0.2646), ("r7i.2xlarge", 8, 64, 0.5292),
    ("r7i.4xlarge", 16, 128, 1.0584), ("r7i.8xlarge", 32, 256, 2.1168), ("r7i.12xlarge", 48, 384, 3.1750),
    ("r7i.16xlarge", 64, 512, 4.2336), ("r7i.24xlarge", 96, 768, 6.3500), ("r7i.48xlarge", 192, 1536, 12.7008),
)  # fmt: skip


# The workload ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pod:
    cpu: float  # vCPU
    mem: float  # GiB
    cost: float  # disruption cost


@dataclass
class Node:
    type: str
    cpu: float
    mem: float
    price: float
    pods: list[Pod] = field(default_factory=list)

    @property
    def cpu_free(self) -> float:
        return self.cpu - sum(p.cpu for p in self.pods)  # exact: multiples of 0.25 and whole GiB

    @property
    def mem_free(self) -> float:
        return self.mem - sum(p.mem for p in self.pods)

    def fits(self, pod: Pod) -> bool:
        return pod.cpu <= self.cpu_free and pod.mem <= self.mem_free

    @property
    def disruption(self) -> float:
        return NODE_DISRUPTION + sum(max(0.0, p.cost) for p in self.pods)


def pod_size(cpu: float, mem: float) -> tuple[float, float]:
    """A raw log-normal draw as a request: CPU to 0.5 within [0.25, 16], memory to 1 GiB within [1, 120]."""
    return min(max(round(cpu * 2) / 2, 0.25), 16.0), min(max(float(round(mem)), 1.0), 120.0)


def cheapest_type(cpu: float, mem: float) -> tuple[str, int, int, float] | None:
    """The cheapest type holding `cpu` and `mem` (the first in `TYPES` on a tie), or None."""
    best = None
    for t in TYPES:
        if t[1] >= cpu and t[2] >= mem and (best is None or t[3] < best[3]):
            best = t
    return best


def new_node(cpu: float, mem: float) -> Node:
    t = cheapest_type(cpu, mem)
    if t is None:
        raise ValueError(f"no type holds {cpu} vCPU and {mem} GiB")
    return Node(t[0], t[1], t[2], t[3])


def build_cluster(rng: np.random.Generator, pods: int = PODS_TOTAL) -> list[Node]:
    """`pods` pods packed first-fit-decreasing by CPU × memory (module docstring)."""
    cpus, mems = rng.lognormal(0.0, 1.0, pods), rng.lognormal(1.5, 1.2, pods)
    drawn = []
    for c, m in zip(cpus, mems, strict=True):
        cpu, mem = pod_size(float(c), float(m))
        drawn.append(Pod(cpu, mem, float(rng.choice(DISRUPTION_COSTS))))
    drawn.sort(key=lambda p: p.cpu * p.mem, reverse=True)  # stable: equal footprints keep their draw order
    nodes: list[Node] = []
    free = np.zeros((len(drawn), 2))  # each node's free (vCPU, GiB), in creation order
    for pod in drawn:
        fits = (free[: len(nodes), 0] >= pod.cpu) & (free[: len(nodes), 1] >= pod.mem)
        if fits.any():
            j = int(fits.argmax())  # the first node it fits on
        else:
            j = len(nodes)
            nodes.append(new_node(pod.cpu, pod.mem))
            free[j] = nodes[j].cpu, nodes[j].mem
        nodes[j].pods.append(pod)
        free[j] -= pod.cpu, pod.mem
    return nodes


def churn(rng: np.random.Generator, nodes: list[Node]) -> list[Node]:
    """One churn round (module docstring); the nodes left holding pods."""
    for node in nodes:
        if len(node.pods) > 1:
            kill = int(len(node.pods) * rng.uniform(0.0, 0.8))
            if kill > 0:
                gone = {int(i) for i in rng.choice(len(node.pods), size=kill, replace=False)}
                node.pods = [p for i, p in enumerate(node.pods) if i not in gone]
        for _ in range(int(rng.integers(0, 4))):
            cpu, mem = pod_size(float(rng.lognormal(0.0, 1.0)), float(rng.lognormal(1.5, 1.2)))
            pod = Pod(cpu, mem, float(rng.choice(DISRUPTION_COSTS)))
            if node.fits(pod):
                node.pods.append(pod)
    return [n for n in nodes if n.pods]


def rounds(rounds: int = ROUNDS, pods: int = PODS_TOTAL, seed: int = SEED) -> Iterable[list[Node]]:
    """The cluster after each churn round (the same `Node` objects, churned in place)."""
    rng = np.random.default_rng(seed)
    nodes = build_cluster(rng, pods)
    for _ in range(rounds):
        nodes = churn(rng, nodes)
        yield nodes


# The script's moves and rankings -------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    node: int  # index into the round's nodes
    delete: bool  # DELETE (pods to the others' free room), else REPLACE
    savings: float  # $/h
    disruption: float  # the node's disruption cost
    pods: int  # pods moved
    score: float


def best_fit(pods: Sequence[Pod], free: np.ndarray, allowed: np.ndarray) -> list[int] | None:
    """Each pod (largest (CPU, memory) first) to the allowed row of `free` (vCPU, GiB) it leaves
    the least room in (the first on a tie), `free` updated; None when one fits nowhere."""
    placed = []
    for pod in sorted(pods, key=lambda p: (p.cpu, p.mem), reverse=True):
        fits = allowed & (free[:, 0] >= pod.cpu) & (free[:, 1] >= pod.mem)
        if not fits.any():
            return None
        waste = np.where(fits, free[:, 0] - pod.cpu + free[:, 1] - pod.mem, np.inf)
        j = int(np.argmin(waste))
        free[j, 0] -= pod.cpu
        free[j, 1] -= pod.mem
        placed.append(j)
    return placed


def moves(nodes: Sequence[Node]) -> list[Move]:
    """The script's REPLACE then DELETE moves of one round, each judged alone."""
    cost = sum(n.price for n in nodes)
    disruption = sum(n.disruption for n in nodes)
    free = np.array([(n.cpu_free, n.mem_free) for n in nodes], dtype=float).reshape(len(nodes), 2)
    replaces, deletes = [], []
    for i, node in enumerate(nodes):
        t = cheapest_type(sum(p.cpu for p in node.pods), sum(p.mem for p in node.pods))
        if t is not None and node.price - t[3] > 0:
            replaces.append((i, False, node.price - t[3]))
        others = np.ones(len(nodes), dtype=bool)
        others[i] = False
        if best_fit(node.pods, free.copy(), others) is not None and node.price > 0:
            deletes.append((i, True, node.price))
    return [
        Move(i, delete, saved, nodes[i].disruption, len(nodes[i].pods),
             (saved / cost) / (nodes[i].disruption / disruption))
        for i, delete, saved in (*replaces, *deletes)
    ]  # fmt: skip


def _order(values: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(values)]


STRATEGIES: dict[str, Callable[[Sequence[Move]], list[int]]] = {
    "score": lambda ms: _order(-np.array([m.score for m in ms])),
    "savings": lambda ms: _order(-np.array([m.savings for m in ms])),
    "disruption": lambda ms: _order(np.array([m.disruption for m in ms])),
    "random": lambda ms: [int(i) for i in np.random.default_rng(SEED + 1).permutation(len(ms))],
}


Curve = list[tuple[float, float]]  # (cumulative pods moved, cumulative $/h saved), from (0, 0)


def counted(ms: Sequence[Move], order: Sequence[int]) -> Curve:
    """The curve as the script draws it: every move in `order`, each saving what it saves alone."""
    curve, pods, saved = [(0.0, 0.0)], 0.0, 0.0
    for k in order:
        pods, saved = pods + ms[k].pods, saved + ms[k].savings
        curve.append((pods, saved))
    return curve


def executed(nodes: Sequence[Node], ms: Sequence[Move], order: Sequence[int]) -> Curve:
    """The moves in `order`, each carried out only if it still holds where the moves before it
    left the cluster (module docstring); the nodes are not changed."""
    held = [list(n.pods) for n in nodes]
    caps = np.array([(n.cpu, n.mem) for n in nodes], dtype=float).reshape(len(nodes), 2)
    prices = [n.price for n in nodes]
    free = np.array([(n.cpu_free, n.mem_free) for n in nodes], dtype=float).reshape(len(nodes), 2)
    alive = np.ones(len(nodes), dtype=bool)
    curve, pods, saved = [(0.0, 0.0)], 0.0, 0.0
    for k in order:
        move, i = ms[k], ms[k].node
        if not alive[i]:
            continue
        if move.delete:
            others = alive.copy()
            others[i] = False
            trial = free.copy()
            homes = best_fit(held[i], trial, others)
            if homes is None:
                continue
            for pod, j in zip(sorted(held[i], key=lambda p: (p.cpu, p.mem), reverse=True), homes, strict=True):
                held[j].append(pod)
            free, alive[i], gain, moved = trial, False, prices[i], len(held[i])
            held[i] = []
        else:
            t = cheapest_type(sum(p.cpu for p in held[i]), sum(p.mem for p in held[i]))
            if t is None or prices[i] - t[3] <= 0:
                continue
            gain, moved = prices[i] - t[3], len(held[i])
            free[i] = (t[1] - (caps[i, 0] - free[i, 0]), t[2] - (caps[i, 1] - free[i, 1]))
            caps[i], prices[i] = (t[1], t[2]), t[3]
        pods, saved = pods + moved, saved + gain
        curve.append((pods, saved))
    return curve


def at(curve: Curve, pods: float) -> float:
    """The curve's savings at `pods` moved: linear between its points, its total past the last."""
    xs, ys = zip(*curve, strict=True)
    return float(np.interp(pods, xs, ys))


def margins(karpy: Curve, references: Mapping[str, Curve]) -> list[tuple[float, float, str, float]]:
    """At each of karpy's commands: (pods moved, karpy's savings, the best ranking there, its savings)."""
    out = []
    for pods, saved in karpy[1:]:
        name = max(references, key=lambda n: at(references[n], pods))
        out.append((pods, saved, name, at(references[name], pods)))
    return out


def level_margins(karpy: Curve, references: Iterable[Curve]) -> list[tuple[float, float]]:
    """(pods, margin) at every breakpoint of any curve up to karpy's last command: karpy's savings
    less the best reference's, karpy's curve too taken as linear between its commands (as if a
    command's saving came pod by pod)."""
    refs = list(references)
    top = karpy[-1][0]
    levels = sorted({x for x, _ in karpy} | {x for c in refs for x, _ in c if x <= top})
    return [(x, at(karpy, x) - max(at(c, x) for c in refs)) for x in levels]


def lowest_margin(karpy: Curve, references: Iterable[Curve]) -> tuple[float, float]:
    """(margin, pods) where `level_margins` is least (the first such level)."""
    worst = (np.inf, 0.0)
    for x, margin in level_margins(karpy, references):
        if margin < worst[0]:
            worst = (margin, x)
    return float(worst[0]), worst[1]


def shortfalls(karpy: Curve, references: Iterable[Curve]) -> list[tuple[float, float, float, float]]:
    """Every run of consecutive levels (`level_margins`) where karpy is below the best reference:
    (its first and last level in pods, the lowest margin, the level of that margin)."""
    runs: list[tuple[float, float, float, float]] = []
    inside = False
    for x, margin in level_margins(karpy, references):
        if margin >= -1e-9:
            inside = False
            continue
        if not inside:
            runs.append((x, x, margin, x))
        else:
            first, _, worst, where = runs[-1]
            runs[-1] = (first, x, *((margin, x) if margin < worst else (worst, where)))
        inside = True
    return runs


# karpy on the same cluster -----------------------------------------------------------------

NOW = 1_704_067_200.0 + 3600
ZONE = "us-east-1a"
GIB = 2**30
NO_WAIT = DeprovisioningSettings(validation_wait_seconds=0.0)
Obj = dict[str, Any]


def catalog() -> tuple[InstanceType, ...]:
    """The script's types as instance types: its vCPUs and GiB allocatable (no overhead, room for
    1,000 pods), on-demand in one zone at its prices."""
    out = []
    for name, cpu, mem, price in TYPES:
        family, size = name.split(".")
        labels = {
            L.INSTANCE_TYPE: name, L.ARCH: "amd64", L.OS: "linux", L.REGION: "us-east-1",
            L.INSTANCE_CATEGORY: family[0], L.INSTANCE_FAMILY: family, L.INSTANCE_GENERATION: family[1],
            L.INSTANCE_SIZE: size,
            L.INSTANCE_CPU: str(cpu), L.INSTANCE_MEMORY: str(mem * 1024),
        }  # fmt: skip
        capacity = parse_resources({"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "1000"})
        out.append(new_instance_type(name, labels, capacity, {}, [Offering(ZONE, L.CAPACITY_TYPE_ON_DEMAND, price)]))
    return tuple(out)


PRICES = {name: price for name, _, _, price in TYPES}


def node_object(name: str, it: InstanceType) -> Obj:
    labels = {
        **it.labels, L.PROVISIONER_NAME: "default", L.ZONE: ZONE, L.CAPACITY_TYPE: L.CAPACITY_TYPE_ON_DEMAND,
        L.HOSTNAME: name, L.INITIALIZED: "true",
    }  # fmt: skip
    return ready_node(name, it, labels)


def deletion_cost(cost: float) -> str:
    """The `pod-deletion-cost` that gives a pod this disruption cost (1 + deletion cost / 2^27)."""
    return str(int((cost - 1) * 2**27))


def pod_object(i: int, pod: Pod, node_name: str) -> Obj:
    cpu = f"{int(pod.cpu * 1000)}m"
    annotations = {} if pod.cost == 1 else {L.POD_DELETION_COST: deletion_cost(pod.cost)}
    owner = f"app-{i % 50}"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": "default", "uid": f"uid-pod-{i}", "resourceVersion": "1",
                     "labels": {"app": owner}, "annotations": annotations, "creationTimestamp": LAUNCHED,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                          "uid": f"uid-{owner}", "controller": True}]},
        "spec": {"nodeName": node_name, "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": f"{int(pod.mem)}Gi"}}}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


def provisioner() -> Obj:
    return {
        "apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner",
        "metadata": {"name": "default", "uid": "uid-default", "resourceVersion": "1", "creationTimestamp": LAUNCHED},
        "spec": {"consolidation": {"enabled": True},
                 "requirements": [{"key": L.CAPACITY_TYPE, "operator": "In", "values": [L.CAPACITY_TYPE_ON_DEMAND]}]},
    }  # fmt: skip


@dataclass(frozen=True)
class Step:
    method: str
    action: str
    nodes: int  # nodes removed
    launched: int  # the command's replacements
    spilled: int  # nodes provisioning launched for moved pods kube-scheduler found no room for
    pods: int  # pods moved
    savings: float  # $/h: the fleet's price before less after (the spilled pods' nodes included)


def wire(nodes: Sequence[Node], types: Mapping[str, InstanceType]) -> dict[str, list[Obj]]:
    node_objs: list[Obj] = []
    pod_objs: list[Obj] = []
    for i, node in enumerate(nodes):
        name = f"node-{i:05d}"
        node_objs.append(node_object(name, types[node.type]))
        pod_objs.extend(pod_object(len(pod_objs), p, name) for p in node.pods)
    return {NODES.name: node_objs, PODS.name: pod_objs, PROVISIONERS.name: [provisioner()]}


def consolidate(nodes: Sequence[Node], order: str = CONSOLIDATION_FIRST, limit: int = 10_000) -> list[Step]:
    """karpy's deprovisioning passes on this cluster until none acts, every command applied as it
    goes on a cluster (`halving.apply`: the moving pods' successors placed where kube-scheduler's
    default scoring puts them, not where the command's plan did; those it finds no room for
    provisioned); the consolidation methods chosen among as `order` says
    (`DeprovisioningSettings.consolidation_order`)."""
    settings = dataclasses.replace(NO_WAIT, consolidation_order=order)
    types = {it.name: it for it in catalog()}
    objects = wire(nodes, types)
    state = ClusterState(FakeClock(NOW))
    for kind in WATCHED:
        state.replace(kind.name, objects.get(kind.name, []))
    pods = {f"default/{p['metadata']['name']}": p for p in objects[PODS.name]}
    cluster = Cluster(state, pods, tuple(types.values()), launched=len(nodes))  # new nodes named after the others
    instance_types = {"default": cluster.types}
    steps: list[Step] = []
    while len(steps) < limit:
        decision = decide(Inputs.of(state.snapshot(), instance_types), None, schedule, settings)
        cmd = decision.execute
        if cmd is None:
            return steps
        before = cluster.price()[1]
        moved, spilled = apply(cluster, cmd)
        saved = before - cluster.price()[1]
        steps.append(Step(decision.method, str(cmd.action), len(cmd.candidates), len(cmd.replacements), spilled,
                          moved, saved))  # fmt: skip
    raise RuntimeError(f"still consolidating after {limit} commands")


def karpy_curve(steps: Sequence[Step]) -> Curve:
    curve, pods, saved = [(0.0, 0.0)], 0.0, 0.0
    for s in steps:
        pods, saved = pods + s.pods, saved + s.savings
        curve.append((pods, saved))
    return curve


# The report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    number: int
    nodes: int
    pods: int
    cost: float
    moves: int
    counted: dict[str, Curve]
    executed: dict[str, Curve]
    steps: list[Step]
    seconds: float

    @property
    def karpy(self) -> Curve:
        return karpy_curve(self.steps)


def run_round(number: int, nodes: Sequence[Node], order: str = CONSOLIDATION_FIRST) -> Round:
    ms = moves(nodes)
    orders = {name: rank(ms) for name, rank in STRATEGIES.items()}
    started = time.monotonic()
    steps = consolidate(nodes, order)
    return Round(
        number, len(nodes), sum(len(n.pods) for n in nodes), sum(n.price for n in nodes), len(ms),
        {name: counted(ms, o) for name, o in orders.items()},
        {name: executed(nodes, ms, o) for name, o in orders.items()},
        steps, time.monotonic() - started,
    )  # fmt: skip


def report(r: Round, detail: bool) -> tuple[bool, bool]:
    """Print one round; whether karpy is at or above the best ranking, as counted and executed,
    at each of its commands."""
    karpy = r.karpy
    print(
        f"round {r.number}: {r.nodes} nodes, {r.pods} pods, ${r.cost:.2f}/h; {r.moves} candidate moves;"
        f" karpy {len(r.steps)} commands in {r.seconds:.1f} s"
    )
    for label, curves in (("as the script counts", r.counted), ("executed", r.executed)):
        totals = ", ".join(f"{n} ${c[-1][1]:.2f}/h for {c[-1][0]:.0f} pods" for n, c in curves.items())
        print(f"  rankings {label}: {totals}")
    print(f"  karpy: ${karpy[-1][1]:.2f}/h for {karpy[-1][0]:.0f} pods moved")
    counted_at, executed_at = margins(karpy, r.counted), margins(karpy, r.executed)
    if detail:
        print(
            f"  {'cmd':>4} {'method/action':<34} {'nodes':>5} {'spill':>5} {'pods':>6} {'karpy':>8}"
            f" {'best counted':>20} {'best executed':>20}"
        )
        for n, (step, c, e) in enumerate(zip(r.steps, counted_at, executed_at, strict=True), 1):
            print(
                f"  {n:>4} {step.method + '/' + step.action:<34} {step.nodes:>5} {step.spilled:>5} {c[0]:>6.0f}"
                f" {c[1]:>8.2f} {c[3]:>10.2f} {c[2]:>9} {e[3]:>10.2f} {e[2]:>9}"
            )
    verdicts = []
    for label, curves, at_commands in (("as the script counts", r.counted, counted_at),
                                       ("executed", r.executed, executed_at)):  # fmt: skip
        low = min(at_commands, key=lambda m: m[1] - m[3], default=(0.0, 0.0, "", 0.0))
        ok = low[1] - low[3] >= -1e-9
        between, pods = lowest_margin(karpy, curves.values())
        print(
            f"  vs the best ranking {label}: {'at or above at every command' if ok else 'BELOW at some command'}"
            f" (lowest margin ${low[1] - low[3]:+.2f}/h at {low[0]:.0f} pods, {low[2] or '-'});"
            f" linear between commands: lowest ${between:+.2f}/h at {pods:.0f} pods"
        )
        if label == "executed":
            runs = shortfalls(karpy, curves.values())
            spans = "; ".join(
                f"{a:.0f}{f'-{b:.0f}' if b > a else ''} pods (lowest ${m:+.2f}/h at {x:.0f})" for a, b, m, x in runs
            )
            print(f"  levels below the best executed ranking (linear between commands): {spans or 'none'}")
        verdicts.append(ok)
    return verdicts[0], verdicts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--pods", type=int, default=PODS_TOTAL)
    parser.add_argument(
        "--order", choices=CONSOLIDATION_ORDERS, default=CONSOLIDATION_FIRST,
        help="how karpy chooses among its consolidation methods (--consolidation-order)",
    )  # fmt: skip
    parser.add_argument("--detail", action="store_true", help="every karpy command of every round")
    args = parser.parse_args()
    print(
        f"Karpenter's balanced-consolidation workload (script at {KARPENTER_COMMIT[:12]}): {args.pods} pods,"
        f" seed {SEED}, {args.rounds} churn rounds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    verdicts = [
        report(run_round(number, nodes, args.order), args.detail)
        for number, nodes in enumerate(rounds(args.rounds, args.pods), 1)
    ]
    for k, label in enumerate(("as the script counts", "executed")):
        below = [str(n) for n, v in enumerate(verdicts, 1) if not v[k]]
        print(
            f"karpy vs the best ranking {label}: "
            + ("at or above at every command of every round" if not below else f"below in round(s) {', '.join(below)}")
        )


if __name__ == "__main__":
    main()
