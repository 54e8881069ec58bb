"""The bin-packing scheduler: pending pods → existing nodes first, then new nodes.

Pure (no Kubernetes client, no clock, no randomness). The one entry point, shared by the
provisioning controller, the deprovisioning simulation, `karpy simulate`, the benchmark and the
tests:

    schedule(inp: SchedulingInput) -> SchedulingResult

`SchedulingInput` (see `types.py`) carries the pending pods, the provisioners
(`provisioners.provisioner_spec()` adapts API objects), the instance types (one catalog for all
provisioners, or a mapping per provisioner), the existing and in-flight nodes with their bound
pods, the daemonset pod templates and `SchedulingSettings`. The result lists the nodes to launch
(each with up to `max_instance_types` options, cheapest first, and the offering a launch would
take), the pods placed on existing nodes, and one reason per unschedulable pod.

Rules (spec §5.3–5.7, Karpenter v0.27): pods sorted by cpu, then memory, descending; each goes to
the first existing node that accepts it, else to a node opened earlier in this solve (fewest pods
first), else to a new node from the first provisioner in weight order that can take it (taints
tolerated, requirements compatible, topology satisfied, limits respected, an instance type that
fits with an available offering). Preferences are relaxed one at a time when a pod fails.
The machinery lives in `solver.py`; then `repack.py` re-packs pods no topology rule involves
when that lowers the price, and `exact.py` re-packs small such pools near-optimally with a
time-bounded MILP (both karpy's additions); reasons come from `reasons.py`. Before and after the
solve, `volumes.py` applies the pods' volumes (node requirements, attach limits, waiting pods).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from controller.core.labels import CAPACITY_TYPE, HOSTNAME, INSTANCE_TYPE, PROVISIONER_NAME, ZONE, is_restricted_label
from controller.core.requirements import Requirement, Requirements
from controller.scheduling import exact, volumes
from controller.scheduling.reasons import explain
from controller.scheduling.repack import improve
from controller.scheduling.solver import Solver
from controller.scheduling.types import (
    InstanceType,
    Launch,
    NewNode,
    SchedulingInput,
    SchedulingResult,
)


def schedule(inp: SchedulingInput) -> SchedulingResult:
    """Decide where every pod of `inp.pods` goes (see the module docstring)."""
    prepared = volumes.prepare(inp)
    solver = Solver(prepared.inp)
    solver.solve()
    improve(solver)
    exact.refine(solver)
    return volumes.finish(prepared, _result(solver))


def _result(solver: Solver) -> SchedulingResult:
    table = solver.table
    new_nodes = []
    existing: dict[str, tuple[str, ...]] = {}
    limit = solver.inp.settings.max_instance_types
    # nodes with the same class and options launch the same way: compute that once
    launches: dict[tuple[int, bytes], tuple[tuple[InstanceType, ...], Launch | None, Requirements]] = {}
    labels_of: dict[int, dict[str, str]] = {}
    for j in range(table.n):
        if not table.pods[j]:
            continue
        if not table.new[j]:
            existing[table.names[j]] = tuple(ps.key for ps in table.pods[j])
            continue
        cls = table.classes[int(table.cls[j])]
        i = cls.provisioner
        options = table.options[j]
        assert options is not None
        key = (cls.id, options.tobytes())
        if key not in launches:
            launches[key] = _launch(solver, cls.provisioner, cls.requirements, options, limit)
        option_types, launch, requirements = launches[key]
        provisioner = solver.provisioners[i]
        if cls.id not in labels_of:
            labels_of[cls.id] = {**provisioner.labels, **cls.requirements.labels(), PROVISIONER_NAME: provisioner.name}
        new_nodes.append(
            NewNode(
                name=table.names[j],
                provisioner=provisioner.name,
                requirements=requirements.copy(),
                labels=dict(labels_of[cls.id]),
                taints=provisioner.taints,
                startup_taints=provisioner.startup_taints,
                instance_type_options=option_types,
                pods=tuple(ps.pod for ps in table.pods[j]),
                requests={r: int(v) for r, v in zip(solver.resources, table.used[j], strict=True) if v},
                daemon_requests={
                    r: int(v) for r, v in zip(solver.resources, solver.daemon_overhead[i], strict=True) if v
                },
                launch=launch,
            )
        )
    unschedulable = dict(solver.unschedulable)
    reasons = {}
    for ps in solver.failed:
        reason = explain(solver, ps)
        unschedulable[ps.key], reasons[ps.key] = reason.text, reason
    return SchedulingResult(tuple(new_nodes), existing, unschedulable, reasons)


def _launch(
    solver: Solver, provisioner: int, requirements: Requirements, options: np.ndarray, limit: int
) -> tuple[tuple[InstanceType, ...], Launch | None, Requirements]:
    """The options (cheapest first, capped), the launch they lead to, and the node's requirements."""
    types = solver.tables[provisioner]
    order = types.ordered(options, requirements, limit)
    chosen = types.launch(order, requirements)
    launch = None
    if chosen is not None:
        index, zone, capacity_type, price = chosen
        launch = Launch(types.types[index], zone, capacity_type, price)
    option_types = tuple(types.types[k] for k in order)
    node_requirements = requirements.copy()
    node_requirements.add(Requirement(INSTANCE_TYPE, False, frozenset(it.name for it in option_types)))
    return option_types, launch, node_requirements


def launch_labels(node: NewNode, instance_labels: Mapping[str, str], hostname: str = "") -> dict[str, str]:
    """The labels a launched node carries (spec §5.9 step 10, §8.2): the new node's own
    (provisioner labels, single-valued requirements; never a restricted key), overlaid by the
    instance's (instance-type labels, actual zone and capacity type — the cloud's keys win), the
    provisioner name, and `kubernetes.io/hostname` once the node has a name. The one rule, for
    the Node object provisioning creates (`provisioning/nodes.py`) and for a plan (`planned_labels`)."""
    labels = {k: v for k, v in node.labels.items() if not is_restricted_label(k)}
    labels.update(instance_labels)
    labels[PROVISIONER_NAME] = node.provisioner
    if hostname:
        # What the kubelet sets on registration. kube-scheduler keys hostname anti-affinity and spread
        # on this label and ignores a node without it, so it must be there before any pod is bound.
        labels[HOSTNAME] = hostname
    return dict(sorted(labels.items()))


def planned_labels(node: NewNode) -> dict[str, str]:
    """`launch_labels` of a node launched as planned (its launch's type, zone and capacity type)."""
    planned: dict[str, str] = {}
    if node.launch is not None:
        planned = {**node.launch.instance_type.labels, ZONE: node.launch.zone, CAPACITY_TYPE: node.launch.capacity_type}
    return launch_labels(node, planned)
