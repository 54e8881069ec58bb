"""The solve loop of spec §5.4–5.6: queue, existing nodes, in-flight nodes, new nodes, relaxation.

Internal to `scheduler.schedule()`; pure. Set-up follows spec §5.3 (provisioners by weight then
name, daemonset overhead per provisioner, remaining limits counting existing nodes, topology
over the batch). For each pod, in the queue order of spec §5.4 (karpy: pods whose own node
selector fixes a spread's domain first, `_spread_fixed`; pods still bound to a node being deleted
last — pending pods are bound now, those only once evicted — counted on their nodes until the
first of them is placed, `Topology.lift`):
1. existing nodes in their given order (creation time, then name) — first that accepts wins
   (with `SchedulingSettings.least_allocated`, the one kube-scheduler's default scoring
   prefers: most room left, balanced, fewest pods like it — `_existing_choice`);
2. nodes opened earlier in this solve, fewest pods first (ties: oldest) — first that accepts;
3. a new node from the first provisioner (weight order) whose template, topology, limits and
   instance types accept it.
Failing pods are relaxed one preference at a time and re-queued until a full pass makes no
progress. Fit checks are vectorised: one pod against every node, one node against every type.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from controller.core.labels import HOSTNAME, ZONE
from controller.core.requirements import Requirement
from controller.core.resources import CPU, MEMORY, PODS
from controller.core.taints import PREFER_NO_SCHEDULE, first_untolerated
from controller.scheduling import existing
from controller.scheduling import topology as topo
from controller.scheduling.instancetypes import INSTANCE_TYPE_KEYS
from controller.scheduling.nodetable import NodeClass, NodeTable
from controller.scheduling.podstate import PodState, RequirementCache, requirements_of
from controller.scheduling.provisioners import by_weight
from controller.scheduling.types import InstanceType, PodRequest, ProvisionerSpec, SchedulingInput
from controller.scheduling.typetable import TypeTable

_NEVER = np.iinfo(np.int64).max


@functools.lru_cache(maxsize=8)
def type_table(types: tuple[InstanceType, ...], resources: tuple[str, ...]) -> TypeTable:
    """Memoised: a TypeTable (and every mask it caches) is a pure function of these inputs."""
    return TypeTable(types, resources)


@functools.lru_cache(maxsize=8)
def limit_capacity(table: TypeTable, names: tuple[str, ...]) -> np.ndarray:
    """Each type's capacity of the limited resources `names` (memoised: read-only, per table)."""
    cap = np.array([[it.capacity.get(r, 0) for r in names] for it in table.types], dtype=np.int64)
    cap = cap.reshape(len(table.types), len(names))
    cap.flags.writeable = False
    return cap


def universe(
    provisioners: Sequence[ProvisionerSpec], tables: Sequence[TypeTable], cache: dict[str, set[str]], key: str
) -> set[str]:
    """Every value a topology key can take on nodes the provisioners could launch (spec §5.3)."""
    found = cache.get(key)
    if found is not None:
        return found
    out: set[str] = set()
    for p, table in zip(provisioners, tables, strict=True):
        mine = p.requirements.get(key)
        if mine is not None and not mine.complement:
            out |= mine.values
        if key in INSTANCE_TYPE_KEYS:
            for it in table.types:
                theirs = it.requirements.get(key)
                if theirs is not None:
                    both = theirs if mine is None else theirs.intersection(mine)
                    if not both.complement:
                        out |= both.values
    cache[key] = out
    return out


def _spread_fixed(pod: PodRequest) -> bool:
    """Whether the pod's own node selector fixes the domain of one of its DoNotSchedule spreads
    (e.g. a pod karpy pinned when lifting its topology gate, `provisioning/spreadpin.py`). Such
    pods are placed first, so the pods still choosing a domain count them where they must go
    (karpy decision; Karpenter orders by size only)."""
    return any(
        c.when_unsatisfiable == "DoNotSchedule" and c.topology_key in pod.node_selector
        for c in pod.topology_spread
        if c.topology_key != HOSTNAME
    )


class Solver:
    """One scheduling decision's working state."""

    def __init__(self, inp: SchedulingInput) -> None:
        self.inp = inp
        self.provisioners: list[ProvisionerSpec] = by_weight(inp.provisioners)
        self.batch = [p for p in inp.pods if p.owner_kind != "DaemonSet" and not p.terminal]
        self.resources = self._resources()
        self.tables = [type_table(tuple(types), tuple(self.resources)) for types in self._instance_types()]
        self.daemons = [(d, requirements_of(d)) for d in inp.daemonsets]
        self.context = existing.Context(
            tuple(self.resources), tuple(self.provisioners), tuple(self.tables), inp.daemonsets, self.daemons
        )
        self.daemon_overhead = [self._template_daemons(p) for p in self.provisioners]
        self.tolerate_prefer_no_schedule = any(
            t.effect == PREFER_NO_SCHEDULE for p in self.provisioners for t in p.taints
        )
        self.table = NodeTable(len(self.resources), max(64, 2 * len(inp.nodes)))
        self.templates = [self.table.node_class(i, p.taints, p.requirements) for i, p in enumerate(self.provisioners)]
        self._universe_cache: dict[str, set[str]] = {}
        # not the bound method `self._universe`: a cycle through it would keep every solve's
        # state alive until the garbage collector's next full pass
        self.topology = topo.Topology(
            functools.partial(universe, self.provisioners, self.tables, self._universe_cache), self.table.capacity
        )
        self.remaining, self.limit_cap, self.limit_masks = self._limits()
        self.states: list[PodState] = []
        self.unschedulable: dict[str, str] = {}
        self.failed: list[PodState] = []
        self._static: dict[tuple[object, int], int] = {}
        self._fails: set[tuple[object, ...]] = set()  # keys of pods that failed at `_fails_version`
        self._fails_version = -1
        self._class_mask: tuple[object, np.ndarray] = ((), np.zeros(0, dtype=bool))
        self._interchangeable: dict[int, bool] = {}  # by pod index, asked after the solve only
        # by pod signature: (table layout, `_classes_after` then) for pods without zone-like topology
        self._after: dict[object, tuple[int, dict[int, int], np.ndarray | None]] = {}
        self._topology_cache: dict[tuple[object, ...], int] = {}
        self._tightened_cache: dict[tuple[int, tuple[Requirement, ...]], int] = {}
        self.version = 0
        self._like: dict[frozenset[tuple[str, str]], np.ndarray] = {}  # `_default_spread`'s counts
        self._zone_index: np.ndarray | None = None
        self._name_counters: dict[str, int] = {}
        self._taken_names = {n.name for n in inp.nodes}
        self._existing_nodes()
        self._pods()

    # -- set-up ------------------------------------------------------------------------------

    def _resources(self) -> list[str]:
        names = {CPU, MEMORY, PODS}
        for pod in (*self.batch, *self.inp.daemonsets):
            names.update(k for k, v in pod.requests.items() if v > 0)
        return [CPU, MEMORY, PODS, *sorted(names - {CPU, MEMORY, PODS})]

    def _instance_types(self) -> list[Sequence[InstanceType]]:
        given = self.inp.instance_types
        if isinstance(given, Mapping):
            return [list(given.get(p.name, ())) for p in self.provisioners]
        # one catalog for every provisioner, as given: capacity and overhead (kubelet settings,
        # node template) are the cloud provider's to compute (`get_instance_types`)
        catalog = list(given)
        return [catalog for _ in self.provisioners]

    def vector(self, resources: Mapping[str, int]) -> np.ndarray:
        return np.array([resources.get(r, 0) for r in self.resources], dtype=np.int64)

    def _template_daemons(self, p: ProvisionerSpec) -> np.ndarray:
        return self.context.daemons_for(p.taints, p.requirements)

    def _limits(self) -> tuple[list[dict[str, int]], list[np.ndarray], list[np.ndarray]]:
        remaining, caps, masks = [], [], []
        for p, table in zip(self.provisioners, self.tables, strict=True):
            left = dict(p.limits)
            for node in self.inp.nodes if left else ():
                if node.provisioner_name == p.name and not node.marked_for_deletion:
                    capacity = node.capacity or node.allocatable
                    for r in left:
                        left[r] -= capacity.get(r, 0)
            names = sorted(left)
            cap = limit_capacity(table, tuple(names))
            remaining.append(left)
            caps.append(cap)
            masks.append(self._limit_mask(cap, left, names))
        return remaining, caps, masks

    @staticmethod
    def _limit_mask(cap: np.ndarray, left: Mapping[str, int], names: Sequence[str]) -> np.ndarray:
        if not names:
            return np.ones(cap.shape[0], dtype=bool)
        return np.asarray((cap <= np.array([left[r] for r in names], dtype=np.int64)).all(axis=1))

    def _existing_nodes(self) -> None:
        """The existing nodes' rows (`existing.py`: from the input's node source when it covers
        them) and their bound pods for topology."""
        batch_keys = {p.key for p in self.batch} if self.inp.nodes else set()
        rows, idx = existing.rows_for(self.inp, self.context, batch_keys)
        existing.install(self.table, self.topology, rows, idx)

    def _pods(self) -> None:
        batch = self.batch
        moving = self.topology.moving
        keys = [(moving(p.key), not _spread_fixed(p), -p.requests.get(CPU, 0), -p.requests.get(MEMORY, 0),
                 p.creation_timestamp, p.uid, i) for i, p in enumerate(batch)]  # fmt: skip
        keys.sort()
        resources = self.resources
        # every request vector at once (one array, a row view per pod)
        requests = np.array([[batch[k[-1]].requests.get(r, 0) for r in resources] for k in keys], dtype=np.int64)
        requests = requests.reshape(len(keys), len(resources))
        requirement_cache: RequirementCache = {}
        for row, key in enumerate(keys):
            pod = batch[key[-1]]
            if pod.ignore_reason:
                self.unschedulable[pod.key] = f"ignored: {pod.ignore_reason}"
                continue
            ps = PodState(len(self.states), pod, requests[row], requirement_cache)
            self.states.append(ps)
            self.topology.update(ps, first=True)

    # -- solve ----------------------------------------------------------------------------------

    def solve(self) -> None:
        queue = deque(self.states)
        last_len: dict[int, int] = {}
        failed: dict[int, PodState] = {}
        while queue:
            ps = queue[0]
            if last_len.get(ps.index) == len(queue):
                break
            queue.popleft()
            if self.add(ps):
                failed.pop(ps.index, None)
                continue
            failed[ps.index] = ps
            relaxed = ps.relax(self.tolerate_prefer_no_schedule) is not None
            queue.append(ps)
            if relaxed:
                last_len.clear()
                self.topology.update(ps)
            else:
                last_len[ps.index] = len(queue)
        self.failed = sorted(failed.values(), key=lambda s: s.index)

    def add(self, ps: PodState) -> bool:
        if self.topology.moving(ps.pod.key) and self.topology.lift():  # the first pod of a node being deleted
            self.version += 1
        groups = self.topology.constraining(ps)
        host = [g for g in groups if g.host] if groups else groups
        other = [g for g in groups if not g.host] if groups else groups
        # pods like one that failed since the last placement fail too; the key is built only then
        fail_key = None
        if self._fails_version == self.version:
            fail_key = self._fail_key(ps, groups)
            if fail_key in self._fails:
                return False
        if self._place_on_nodes(ps, host, other) or self._place_on_new_node(ps, host, other):
            self.version += 1
            return True
        if self._fails_version != self.version:
            self._fails_version = self.version
            self._fails = set()
        self._fails.add(fail_key or self._fail_key(ps, groups))
        return False

    @staticmethod
    def _fail_key(ps: PodState, groups: Sequence[topo.Group]) -> tuple[object, ...]:
        return (ps.signature, ps.selector_key, tuple(ps.request.tolist()), tuple(g.id for g in groups),
                ps.pod.host_ports)  # fmt: skip

    def class_after(self, ps: PodState, cid: int) -> int:
        """The class a node of class `cid` becomes with this pod, or -1 (taints or requirements)."""
        key = (ps.signature, cid)
        found = self._static.get(key)
        if found is None:
            cls = self.table.classes[cid]
            if first_untolerated(ps.tolerations, cls.taints) is not None or not cls.requirements.compatible(
                ps.requirements
            ):
                found = -1
            else:
                merged = cls.requirements.merged(ps.requirements.values())
                found = self.table.node_class(cls.provisioner, cls.taints, merged).id
            self._static[key] = found
        return found

    def class_with_topology(self, ps: PodState, cid: int, groups: Sequence[topo.Group]) -> int:
        """The class after intersecting every zone-like topology domain, or -1."""
        if not groups:
            return cid
        key = (cid, ps.signature, ps.selector_key, tuple((g.id, g.version) for g in groups))
        found = self._topology_cache.get(key)
        if found is not None:
            return found
        reqs = self.table.classes[cid].requirements
        domains = tuple(d for _, d in self.topology.all_domains(groups, ps, reqs))
        found = self._tightened(cid, domains)
        self._topology_cache[key] = found
        return found

    def _tightened(self, cid: int, domains: tuple[Requirement, ...]) -> int:
        key = (cid, domains)
        found = self._tightened_cache.get(key)
        if found is None:
            cls = self.table.classes[cid]
            tightened = cls.requirements.copy()
            found = -1
            for domain in domains:
                tightened.add(domain)
                if domain.is_empty() or tightened[domain.key].is_empty():
                    break
            else:
                found = self.table.node_class(cls.provisioner, cls.taints, tightened).id
            self._tightened_cache[key] = found
        return found

    def interchangeable(self, ps: PodState) -> bool:
        """Whether moving the pod between new nodes of one class changes no other pod's
        constraints: it has no host ports and no topology group owns, selects or counts it."""
        found = self._interchangeable.get(ps.index)
        if found is None:
            found = not ps.pod.host_ports and not self.topology.involves(ps)
            self._interchangeable[ps.index] = found
        return found

    def class_types(self, cls: NodeClass) -> np.ndarray:
        if cls.types is None:
            cls.types = self.tables[cls.provisioner].compatible(cls.requirements, cls.signature)
        return cls.types

    def _place_on_nodes(self, ps: PodState, host: Sequence[topo.Group], other: Sequence[topo.Group]) -> bool:
        t = self.table
        n = t.n
        if n == 0 or not t.present:
            return False
        # without zone-like topology, the classes a pod may join depend on its signature alone
        cached = None if other else self._after.get(ps.signature)
        if cached is not None and cached[0] == t.layout:
            after, base = cached[1], cached[2]
        else:
            after, base = self._classes_after(ps, other)
            if not other:
                self._after[ps.signature] = (t.layout, after, base)
        if base is None:
            return False
        mask = base & t.fits(ps.request, n)
        for group in host:
            mask &= self.topology.host_mask(group, ps, n)
        if ps.pod.host_ports:
            for row in np.flatnonzero(mask):
                mask[row] = t.ports_free(int(row), ps.pod.host_ports)
        existing = t.existing
        if existing:
            if mask[:existing].any():
                j = self._existing_choice(mask[:existing], ps)
                self._accept(ps, j, after[int(t.cls[j])], None)
                return True
            mask = mask[existing:]
        if not mask.any():
            return False
        # in-flight nodes of this solve: fewest pods first, then oldest (spec §5.5 step 2)
        order = np.where(mask, t.npods[existing:n], _NEVER)
        while True:
            k = int(np.argmin(order))
            if order[k] == _NEVER:
                return False
            j = existing + k
            cid = int(t.cls[j])
            node_cls = self.table.classes[after[cid]]
            table = self.tables[node_cls.provisioner]
            options = t.options[j]
            assert options is not None
            keep = options & table.fits(t.used[j] + ps.request)
            if node_cls.id != cid:  # the options are within the node's class's types already
                keep &= self.class_types(node_cls)
            if keep.any():
                self._accept(ps, j, node_cls.id, keep)
                return True
            order[k] = _NEVER

    def _existing_choice(self, mask: np.ndarray, ps: PodState) -> int:
        """The existing node a pod goes to among those that accept it (`mask`): the first, or with
        `least_allocated` the one kube-scheduler's default profile scores highest (ties to the first):
        NodeResourcesFit `LeastAllocated` (CPU and memory left after the pod, as fractions of what the
        node allocates, averaged), `NodeResourcesBalancedAllocation` (those fractions alike) and,
        weighted 2, `PodTopologySpread`'s system default constraints for a controller's pod without
        constraints of its own (fewest pods like it on the node, weight ln(nodes + 2), and in its
        zone, weight ln(zones + 2); normalised over the accepting nodes) — which sends a
        ReplicaSet's pods to an empty node first."""
        if not self.inp.settings.least_allocated:
            return int(np.argmax(mask))
        t = self.table
        rows = np.flatnonzero(mask)
        bound = np.maximum(t.bound[rows, :2], 1)  # CPU, memory: the solve's first two resources
        used = (t.used[rows, :2] + ps.request[:2]) / bound
        score = (1.0 - used).mean(axis=1) + 1.0 - np.abs(used[:, 0] - used[:, 1]) / 2
        pod = ps.pod
        if not pod.topology_spread and pod.owner_kind and pod.labels:
            raw = self._default_spread(ps)[rows]
            low, high = raw.min(), raw.max()
            score += 2.0 * ((high - raw) / (high - low) if high > low else 1.0)
        return int(rows[int(np.argmax(score))])

    def _default_spread(self, ps: PodState) -> np.ndarray:
        """Per existing node, kube-scheduler's raw default-spread count for pods labelled like `ps`
        (the pods like it on the node, and in its zone, weighted as `_existing_choice` says)."""
        t = self.table
        key = frozenset(ps.pod.labels.items())
        found = self._like.get(key)
        if found is None:
            like = dict(key)  # compared with each placed pod's labels as they are: no set built per pod
            found = np.zeros(t.existing, dtype=np.float64)
            for j in range(t.existing):
                node = t.state[j]
                found[j] = node.label_sets.get(key, 0) if node is not None else 0
                found[j] += sum(1 for q in t.pods[j] if q.pod.labels == like)
            self._like[key] = found
        zones = self._zones()
        per_zone = np.bincount(zones, weights=found, minlength=int(zones.max()) + 1 if len(zones) else 0)
        weight_node = np.log(t.existing + 2)
        weight_zone = np.log(per_zone.shape[0] + 2)
        return np.asarray(weight_node * found + weight_zone * per_zone[zones])

    def _zones(self) -> np.ndarray:
        """Each existing node's zone, as an index."""
        if self._zone_index is None:
            names: dict[str, int] = {}
            t = self.table
            self._zone_index = np.array(
                [names.setdefault((n.labels.get(ZONE, "") if n is not None else ""), len(names)) for n in
                 t.state[: t.existing]], dtype=np.int64,
            )  # fmt: skip
        return self._zone_index

    def _classes_after(self, ps: PodState, other: Sequence[topo.Group]) -> tuple[dict[int, int], np.ndarray | None]:
        """For each class of target nodes the pod may join, the class the node becomes; and the
        rows of those nodes (None when there are none)."""
        t = self.table
        after: dict[int, int] = {}
        for cid in t.present:
            c1 = self.class_after(ps, cid)
            if c1 >= 0:
                c2 = self.class_with_topology(ps, c1, other)
                if c2 >= 0:
                    after[cid] = c2
        if not after:
            return after, None
        key = (tuple(after), t.layout)
        if self._class_mask[0] != key:
            ok = np.zeros(len(t.classes), dtype=bool)
            ok[list(after)] = True
            self._class_mask = (key, ok[t.cls[: t.n]] & t.target[: t.n])
        return after, self._class_mask[1]

    def _place_on_new_node(self, ps: PodState, host: Sequence[topo.Group], other: Sequence[topo.Group]) -> bool:
        n = self.table.n
        if not all(self.topology.host_allows_new(g, ps, n) for g in host):
            return False
        for i, template in enumerate(self.templates):
            c1 = self.class_after(ps, template.id)
            if c1 < 0:
                continue
            c2 = self.class_with_topology(ps, c1, other)
            if c2 < 0:
                continue
            cls = self.table.classes[c2]
            table = self.tables[i]
            keep = self.class_types(cls) & self.limit_masks[i] & table.fits(self.daemon_overhead[i] + ps.request)
            if not keep.any():
                continue
            j = self.table.add(self.new_name(i), cls, self.daemon_overhead[i], self.daemon_overhead[i],
                               target=True, new=True)  # fmt: skip
            self.table.narrow(j, keep, table.alloc)
            self.topology.grow(self.table.capacity)
            self._take_limits(i, keep)
            self._accept(ps, j, c2, keep)
            return True
        return False

    def new_name(self, i: int) -> str:
        name = self.provisioners[i].name
        count = self._name_counters.get(name, 0) + 1
        while f"{name}-{count}" in self._taken_names:
            count += 1
        self._name_counters[name] = count
        return f"{name}-{count}"

    def _take_limits(self, i: int, keep: np.ndarray) -> None:
        names = sorted(self.remaining[i])
        if not names:
            return
        largest = self.limit_cap[i][keep].max(axis=0)
        for r, amount in zip(names, largest, strict=True):
            self.remaining[i][r] -= int(amount)
        self.limit_masks[i] = self._limit_mask(self.limit_cap[i], self.remaining[i], names)

    def _accept(self, ps: PodState, j: int, cid: int, options: np.ndarray | None) -> None:
        t = self.table
        if self._like and j < t.existing:
            like = self._like.get(frozenset(ps.pod.labels.items()))
            if like is not None:
                like[j] += 1
        t.charge(j, ps.request)
        t.npods[j] += 1
        t.set_class(j, t.classes[cid])
        if options is not None:
            t.narrow(j, options, self.tables[t.classes[cid].provisioner].alloc)
        t.add_pod(j, ps)
        if ps.pod.host_ports:
            t.take_ports(j, ps.pod.host_ports)
        self.topology.record(ps, j, t.classes[cid].requirements)
