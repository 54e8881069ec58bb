"""Every node of one solve — existing, in-flight and new — as numpy rows, plus node classes.

Internal to the scheduler. Row i holds the node's requests so far (`used`), an upper bound on
what it can hold (`bound`: allocatable for existing nodes, the element-wise maximum over the
remaining instance-type options for new ones), its pod count and its class. A `NodeClass` is
what a node looks like to a pod apart from its hostname — (provisioner, taints, requirements) —
so compatibility and zone-like topology are decided once per class, not once per node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controller.core.labels import HOSTNAME
from controller.core.requirements import Requirement, Requirements
from controller.core.taints import Taint
from controller.scheduling.podstate import PodState
from controller.scheduling.types import HostPort, StateNode


class NodeClass:
    __slots__ = ("id", "provisioner", "requirements", "signature", "taints", "types")

    def __init__(self, cid: int, provisioner: int, taints: tuple[Taint, ...], requirements: Requirements) -> None:
        self.id = cid
        self.provisioner = provisioner  # index into the solve's provisioners, -1 for existing nodes
        self.taints = taints
        self.requirements = requirements
        self.signature: frozenset[Requirement] = frozenset(requirements.values())
        self.types: np.ndarray | None = None  # compatible instance types (new-node classes)


class NodeTable:
    """Growable arrays over node rows, existing nodes first."""

    def __init__(self, resources: int, capacity: int = 64) -> None:
        self.n = 0
        self.capacity = capacity
        self.used = np.zeros((capacity, resources), dtype=np.int64)
        self.bound = np.zeros((capacity, resources), dtype=np.int64)
        self.free = np.zeros((resources, capacity), dtype=np.int64)  # bound - used, one row per resource
        self.existing = 0  # rows [0, existing) are nodes that were there before the solve
        self.npods = np.zeros(capacity, dtype=np.int64)
        self.cls = np.zeros(capacity, dtype=np.int64)
        self.target = np.zeros(capacity, dtype=bool)
        self.new = np.zeros(capacity, dtype=bool)
        self.names: list[str] = []
        self.state: list[StateNode | None] = []
        self.provisioner: list[int] = []
        self.options: list[np.ndarray | None] = []
        self.witness: list[np.ndarray | None] = []  # per resource, an option type whose allocatable is the bound
        self.pods: list[Sequence[PodState]] = []  # a list once a pod is placed (`add_pod`)
        self.ports: list[frozenset[HostPort]] = []  # replaced, never changed in place (shared)
        self.classes: list[NodeClass] = []
        self._class_by_key: dict[tuple[int, tuple[Taint, ...], frozenset[Requirement]], NodeClass] = {}
        self.present: dict[int, int] = {}  # class id -> number of target nodes in it
        self.layout = 0  # changes whenever a row is added or changes class (caches of class masks)

    def node_class(self, provisioner: int, taints: tuple[Taint, ...], requirements: Requirements) -> NodeClass:
        key = (provisioner, taints, frozenset(requirements.values()))
        found = self._class_by_key.get(key)
        if found is None:
            found = NodeClass(len(self.classes), provisioner, taints, requirements)
            self.classes.append(found)
            self._class_by_key[key] = found
        return found

    def _grow(self) -> None:
        capacity = self.capacity * 2
        for name in ("used", "bound", "npods", "cls", "target", "new"):
            old = getattr(self, name)
            grown = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            grown[: self.capacity] = old
            setattr(self, name, grown)
        free = np.zeros((self.free.shape[0], capacity), dtype=np.int64)
        free[:, : self.capacity] = self.free
        self.free = free
        self.capacity = capacity

    def add(self, name: str, cls: NodeClass, used: np.ndarray, bound: np.ndarray, *, target: bool, new: bool) -> int:
        if self.n == self.capacity:
            self._grow()
        self.layout += 1
        i = self.n
        self.n += 1
        self.used[i] = used
        self.bound[i] = bound
        self.free[:, i] = bound - used
        self.cls[i] = cls.id
        self.target[i] = target
        self.new[i] = new
        self.names.append(name)
        self.state.append(None)
        self.provisioner.append(cls.provisioner)
        self.options.append(None)
        self.witness.append(None)
        self.pods.append([])
        self.ports.append(frozenset())
        if target:
            self.present[cls.id] = self.present.get(cls.id, 0) + 1
        if not new:
            self.existing = self.n
        return i

    def add_existing(
        self,
        nodes: list[StateNode],
        cls: np.ndarray,
        used: np.ndarray,
        bound: np.ndarray,
        npods: np.ndarray,
        target: np.ndarray,
        ports: list[frozenset[HostPort]],
    ) -> None:
        """The existing nodes, at once, into an empty table: as `add` of each in turn (classes
        already made, `cls` their ids), with its pod count, state and host ports."""
        assert self.n == 0, "existing nodes come first"
        n = len(nodes)
        while self.capacity < n:
            self._grow()
        self.used[:n] = used
        self.bound[:n] = bound
        self.free[:, :n] = (bound - used).T
        self.npods[:n] = npods
        self.cls[:n] = cls
        self.target[:n] = target
        self.new[:n] = False
        self.names = [node.name for node in nodes]
        self.state = list[StateNode | None](nodes)
        self.provisioner = [self.classes[c].provisioner for c in cls.tolist()]
        self.options = [None] * n
        self.witness = [None] * n
        self.pods = [()] * n
        self.ports = ports
        for c, takes in zip(cls.tolist(), target.tolist(), strict=True):
            if takes:
                self.present[c] = self.present.get(c, 0) + 1
        self.n = self.existing = n
        self.layout += n

    def add_pod(self, i: int, ps: PodState) -> None:
        pods = self.pods[i]
        if isinstance(pods, list):
            pods.append(ps)
        else:
            self.pods[i] = [*pods, ps]

    def charge(self, i: int, request: np.ndarray) -> None:
        self.used[i] += request
        self.free[:, i] -= request

    def set_bound(self, i: int, bound: np.ndarray) -> None:
        self.bound[i] = bound
        self.free[:, i] = bound - self.used[i]

    def narrow(self, i: int, options: np.ndarray, alloc: np.ndarray) -> None:
        """Set a new node's instance-type options (a subset of the ones it had, if any) and its
        bound to their element-wise maximum allocatable (`alloc`: the provisioner's types). The
        bound is recomputed only when an option it came from is gone: options only shrink."""
        self.options[i] = options
        witness = self.witness[i]
        if witness is not None and options[witness].all():
            return
        idx = np.flatnonzero(options)
        sub = alloc[idx]
        arg = sub.argmax(axis=0)
        self.witness[i] = idx[arg]
        self.set_bound(i, sub[arg, np.arange(sub.shape[1])])

    def reset(self, i: int, used: np.ndarray) -> None:
        self.used[i] = used
        self.free[:, i] = self.bound[i] - used

    def fits(self, request: np.ndarray, n: int) -> np.ndarray:
        """Rows [0, n) whose free capacity (upper bound for new nodes) holds the request."""
        return np.asarray((self.free[:, :n] >= request[:, None]).all(axis=0))

    def set_class(self, i: int, cls: NodeClass) -> None:
        old = int(self.cls[i])
        if old == cls.id:
            return
        self.layout += 1
        self.cls[i] = cls.id
        if self.target[i]:
            self.present[old] -= 1
            if not self.present[old]:
                del self.present[old]
            self.present[cls.id] = self.present.get(cls.id, 0) + 1

    def requirements(self, i: int) -> Requirements:
        """The node's requirements including its hostname."""
        reqs = self.classes[int(self.cls[i])].requirements.copy()
        reqs.add(Requirement(HOSTNAME, False, frozenset({self.names[i]})))
        return reqs

    def take_ports(self, i: int, ports: tuple[HostPort, ...]) -> None:
        self.ports[i] = self.ports[i].union(ports)

    def ports_free(self, i: int, ports: tuple[HostPort, ...]) -> bool:
        """No host-port conflict: same protocol and port, and equal or unspecified IPs."""
        for want in ports:
            for have in self.ports[i]:
                if (
                    want.port == have.port
                    and want.protocol == have.protocol
                    and (want.ip == have.ip or "0.0.0.0" in (want.ip, have.ip))
                ):
                    return False
        return True
