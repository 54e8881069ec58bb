"""Why a pod could not be scheduled, in one sentence a person can act on.

Pure; reads the solver's final state (the queue stops only after a full pass without
progress, so it is the state of every failed pod's last attempt). Each provisioner is checked
stage by stage — taints, requirements, topology, instance types (resources and offerings),
limits — and the provisioner(s) with the fewest failing stages explain the failure, naming the
constraint and the provisioner: "provisioner 'gpu' has taint nvidia.com/gpu=true:NoSchedule not
tolerated", "no instance type in provisioner 'default' has 64 GPUs", "topology spread on zone:
maxSkew 1 would be exceeded". Provisioners failing the same way share one clause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.core.labels import CAPACITY_TYPE, PROVISIONER_NAME, WELL_KNOWN_LABELS, ZONE
from controller.core.requirements import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, Requirement, Requirements
from controller.core.resources import ATTACH_PREFIX, CPU, PODS, format_resource
from controller.core.taints import first_untolerated
from controller.scheduling.instancetypes import EXOTIC_RESOURCES, INSTANCE_TYPE_KEYS
from controller.scheduling.podstate import PodState
from controller.scheduling.types import Clause, Reason

if TYPE_CHECKING:
    from controller.scheduling.solver import Solver

_MAX_CLAUSES = 3


def render_requirement(req: Requirement) -> str:
    """`kubernetes.io/arch in [arm64]`, `team exists`, `…/instance-cpu > 4`."""
    op = req.operator
    if req.gt is not None or req.lt is not None:
        bounds = []
        if req.gt is not None:
            bounds.append(f"> {req.gt}")
        if req.lt is not None:
            bounds.append(f"< {req.lt}")
        text = f"{req.key} {' and '.join(bounds)}"
        return text + (f" not in [{', '.join(sorted(req.values))}]" if req.values else "")
    if op == IN:
        return f"{req.key} in [{', '.join(sorted(req.values))}]"
    if op == NOT_IN:
        return f"{req.key} not in [{', '.join(sorted(req.values))}]"
    return f"{req.key} {'exists' if op == EXISTS else 'does not exist'}"


def amount(resource: str, value: int) -> str:
    """`191.45 CPU` (cores, as the dashboard shows them; not `191450m cpu`), `4 GPUs`, `16Gi memory`."""
    if resource.startswith(ATTACH_PREFIX):
        return f"{value} {resource.removeprefix(ATTACH_PREFIX)} volume attachment{'s' if value != 1 else ''}"
    if resource in EXOTIC_RESOURCES:
        noun = "GPU" if "gpu" in resource else resource
        return f"{value} {noun}{'s' if value != 1 and noun == 'GPU' else ''}"
    if resource == CPU:
        return f"{value / 1000:.3f}".rstrip("0").rstrip(".") + " CPU"
    return f"{format_resource(resource, value)} {resource}"


def _requirement_clause(template: Requirements, pod: Requirements) -> str:
    for key, theirs in pod.items():
        mine = template.get(key)
        if mine is None:
            if key not in WELL_KNOWN_LABELS and theirs.operator not in (NOT_IN, DOES_NOT_EXIST):
                return f'{{who}} has no label or requirement "{key}" the pod asks for ({render_requirement(theirs)})'
            continue
        if not mine.intersects(theirs):
            if key == PROVISIONER_NAME:
                return f"the pod selects {render_requirement(theirs)}, not {{who}}"
            return f"pod requires {render_requirement(theirs)} but {{who}} allows {render_requirement(mine)}"
    return "{who} requirements are not compatible with the pod's"


def _type_clause(solver: Solver, i: int, ps: PodState, reqs: Requirements) -> str | None:
    table = solver.tables[i]
    if not len(table):
        return "{who} has no instance types"
    need = solver.daemon_overhead[i] + ps.request
    by_reqs = table.requirement_mask(reqs)
    if not by_reqs.any():
        keys = [k for k in reqs if k in INSTANCE_TYPE_KEYS and k not in (ZONE, CAPACITY_TYPE) and k in ps.requirements]
        keys = keys or [k for k in reqs if k in INSTANCE_TYPE_KEYS and k not in (ZONE, CAPACITY_TYPE)]
        wanted = " and ".join(render_requirement(reqs[k]) for k in keys)
        return f"no instance type in {{who}} matches {wanted}"
    compatible = by_reqs & table.offering_mask(reqs)
    if not compatible.any():
        where = render_requirement(reqs.get_or_exists(ZONE))
        how = render_requirement(reqs.get_or_exists(CAPACITY_TYPE))
        return f"no instance type in {{who}} that matches has an available offering with {where} and {how}"
    fit = compatible & table.fits(need)
    if not fit.any():
        largest = table.alloc[compatible].max(axis=0)
        over = [k for k in range(len(solver.resources)) if need[k] > largest[k]]
        daemon = solver.daemon_overhead[i]
        if over:
            wanted = " and ".join(amount(solver.resources[k], int(need[k])) for k in over)
            if all(largest[k] <= 0 for k in over):
                return f"no instance type in {{who}} has {wanted} (none has any)"
            biggest = ", ".join(amount(solver.resources[k], int(largest[k])) for k in over)
            extra = [
                amount(solver.resources[k], int(daemon[k])) for k in over if daemon[k] and solver.resources[k] != PODS
            ]
            note = f", daemonset overhead of {', '.join(extra)} included" if extra else ""
            return f"no instance type in {{who}} has {wanted} (the largest has {biggest}{note})"
        wanted = ", ".join(amount(solver.resources[k], int(need[k])) for k in range(len(need)) if need[k] > 0)
        return f"no instance type in {{who}} has {wanted} all at once"
    if not (fit & solver.limit_masks[i]).any():
        left = solver.remaining[i]
        names = sorted(left)
        smallest = solver.limit_cap[i][fit].min(axis=0)
        short = [r for r, low in zip(names, smallest, strict=True) if low > left[r]]
        text = ", ".join(
            f"{r}: {format_resource(r, max(left[r], 0))} of {format_resource(r, solver.provisioners[i].limits[r])} left"
            for r in short or names
        )
        return f"{{who}} limits would be exceeded ({text})"
    return None


def _topology_clause(solver: Solver, ps: PodState, reqs: Requirements) -> tuple[str | None, Requirements]:
    topology = solver.topology
    groups = topology.constraining(ps)
    for group in groups:
        if group.host and not topology.host_allows_new(group, ps, solver.table.n):
            return group.describe(), reqs
    tightened = reqs.copy()
    for group, domains in topology.all_domains([g for g in groups if not g.host], ps, reqs):
        tightened.add(domains)
        if domains.is_empty() or tightened[group.key].is_empty():
            return group.describe(), reqs
    return None, tightened


def explain(solver: Solver, ps: PodState) -> Reason:
    """Why `ps` could not be placed: one sentence, and the clauses it is made of."""
    if not solver.provisioners:
        return Reason("no provisioners found")
    candidates: list[tuple[int, int, str, tuple[str, ...]]] = []
    for i, p in enumerate(solver.provisioners):
        failures: list[tuple[str, str]] = []  # (stage, clause)
        weight = 0
        taint = first_untolerated(ps.tolerations, p.taints)
        if taint is not None:
            failures.append(("taints", f"{{who}} has taint {taint} not tolerated"))
        template = solver.templates[i].requirements
        merged = template
        if template.compatible_errors(ps.requirements):
            failures.append(("requirements", _requirement_clause(template, ps.requirements)))
        else:
            merged = template.merged(ps.requirements.values())
        topo_clause, tightened = _topology_clause(solver, ps, merged)
        if topo_clause is not None:
            failures.append(("topology", topo_clause))
        type_clause = _type_clause(solver, i, ps, tightened)
        if type_clause is not None:
            stage = "limits" if type_clause.startswith("{who} limits") else "instance-types"
            failures.append((stage, type_clause))
            # a provisioner whose types have none of a requested resource is the least likely intent
            weight += 2 if type_clause.endswith("(none has any)") else 0
        if failures:
            shown = failures[:2]
            text = ", and ".join(clause for _, clause in shown)
            candidates.append((len(failures) + weight, i, text, tuple(stage for stage, _ in shown)))
    if not candidates:
        return Reason("no existing or new node could take the pod (host ports or capacity of in-flight nodes)")
    fewest = min(c[0] for c in candidates)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for count, i, text, stages in candidates:
        if count == fewest:
            grouped.setdefault((text, stages), []).append(solver.provisioners[i].name)
    clauses = []
    for (text, stages), names in list(grouped.items())[:_MAX_CLAUSES]:
        quoted = ", ".join(f"'{n}'" for n in names)
        who = f"provisioner {quoted}" if len(names) == 1 else f"provisioners {quoted}"
        clauses.append(Clause(tuple(names), stages, text.replace("{who}", who)))
    return Reason("; ".join(c.text for c in clauses), tuple(clauses))
