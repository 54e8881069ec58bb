"""A deprovisioning controller on the shared test world: the acting edge's tests and the savings
ledger's (which watches the commands it carries out) start from here.

`World` is `tests/fakes/world.py`'s world with a `DeprovisioningController` wired as
`controller/main.py` wires it; `node()`/`pod()` put sized nodes and pods, `reconcile(step)` steps the
clock, syncs and runs one pass; `metric()` reads a metric's growth since `remember()`.
`consolidating`, `replacing_big` (a replace in progress) and `restarted` (a controller that
starts over on the same cluster) are the scenarios several tests share.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from controller.core import labels as L
from controller.core.labels import DEPROVISIONING_CORDON
from controller.deprovisioning.controller import DeprovisioningController
from controller.deprovisioning.launcher import ProvisioningLauncher
from controller.deprovisioning.types import DeprovisioningSettings
from controller.kube.resources import NODES, PODS, PROVISIONERS
from controller.provisioning.launcher import Launcher
from controller.scheduling.scheduler import schedule
from tests.builders.deprovisioning import CATALOG
from tests.builders.wire import make_node, make_pod, make_provisioner
from tests.fakes.world import World as Cluster

SIZES = {"small": "2", "medium": "4", "large": "8"}


class World(Cluster):
    """The shared test world (`tests/fakes/world.py`) with a deprovisioning controller on it."""

    def __init__(self, **settings: Any) -> None:
        base = Cluster.make(CATALOG)
        super().__init__(base.clock, base.kube, base.cloud, base.state, base.recorder, base.decisions)
        launcher = ProvisioningLauncher(Launcher(self.kube, self.cloud, self.state, self.clock), self.state)
        self.controller = DeprovisioningController(
            self.state, self.kube, self.cloud, launcher, self.clock, DeprovisioningSettings(**settings), schedule,
            recorder=self.recorder, decisions=self.decisions,
        )  # fmt: skip
        self.baseline: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def node(self, name: str, size: str = "medium", **kw: Any) -> None:
        labels = {L.ZONE: "zone-a", L.INITIALIZED: "true", **kw.pop("labels", {})}
        obj = make_node(name, cpu=SIZES[size], memory="4Gi", pods="110", instance_type=size, labels=labels, **kw)
        obj["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z"  # FakeClock's start
        self.kube.put(NODES, obj)

    def pod(self, name: str, node: str, cpu: str = "1", **kw: Any) -> None:
        self.kube.put(PODS, make_pod(name, node=node, cpu=cpu, memory="1Mi", **kw))

    def reconcile(self, step: float = 0.0) -> None:
        self.clock.step(step)
        self.sync()
        self.controller.reconcile()
        self.sync()

    def unschedulable(self, name: str) -> bool:
        return bool(self.kube.objects["nodes"][name]["spec"].get("unschedulable"))

    def metric(self, name: str, **labels: str) -> float:
        """The metric's growth since this world was made (metrics are process-wide)."""
        value = REGISTRY.get_sample_value(name, labels) or 0.0
        return value - self.baseline.setdefault((name, tuple(sorted(labels.items()))), 0.0)

    def remember(self, name: str, **labels: str) -> None:
        self.baseline[(name, tuple(sorted(labels.items())))] = REGISTRY.get_sample_value(name, labels) or 0.0


def consolidating(world: World) -> None:
    world.kube.put(PROVISIONERS, make_provisioner(consolidation={"enabled": True}))


def marked(world: World, name: str) -> bool:
    return DEPROVISIONING_CORDON in (world.kube.objects["nodes"][name]["metadata"].get("annotations") or {})


def restarted(world: World, **settings: Any) -> DeprovisioningController:
    """A new controller on the same cluster: what a killed and restarted process starts with."""
    launcher = ProvisioningLauncher(Launcher(world.kube, world.cloud, world.state, world.clock), world.state)
    return DeprovisioningController(
        world.state, world.kube, world.cloud, launcher, world.clock, DeprovisioningSettings(**settings), schedule
    )


def replacing_big(world: World) -> str:
    """`big` cordoned for a replace whose replacement is not initialized yet; the replacement's name."""
    consolidating(world)
    world.node("big", "large")
    world.pod("a", "big", cpu="1.5")
    world.reconcile()
    assert world.unschedulable("big") and marked(world, "big")
    return str(next(n["metadata"]["name"] for n in world.kube.items(NODES) if n["metadata"]["name"] != "big"))
