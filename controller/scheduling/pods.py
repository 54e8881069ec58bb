"""Pod documents → `PodRequest`: requests, node affinity, tolerations, pod (anti-)affinity, spread.

Pure. `pod_request(obj)` reads one Pod (a plain dict as the API server or a YAML file gives
it). Requests follow Karpenter's Ceiling (spec §5.4): per resource, the larger of the summed
containers (request, else limit) and the largest init container; plus `pods: 1`. A pod whose
node affinity Karpenter would refuse (matchFields, an unsupported operator, a restricted key,
`karpenter.sh/provisioner-name DoesNotExist`; spec §5.2) gets an `ignore_reason` instead of
an exception. Malformed documents raise `PodSpecError`, whose text names the field.
Workload expansion (Deployment → pods) lives in `workloads.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.apis.errors import clip, render
from controller.apis.validation import requirement_errors
from controller.core.labels import PROVISIONER_NAME
from controller.core.quantity import QuantityError
from controller.core.requirements import Requirement
from controller.core.resources import PODS, parse_resource
from controller.core.taints import toleration_from_wire
from controller.scheduling.types import (
    ClaimRef,
    HostPort,
    LabelSelector,
    PodAffinityTerm,
    PodRequest,
    TopologySpreadConstraint,
)


class PodSpecError(ValueError):
    """A pod (or pod template) that cannot be read; the message names the field."""


def pod_request(obj: Mapping[str, Any]) -> PodRequest:
    """Read one Pod document (raises PodSpecError when a field is malformed)."""
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    namespace = str(meta.get("namespace") or "default")
    affinity = _mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = _mapping(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    ignore: list[str] = []
    required_terms = _required_terms(node_affinity, ignore)
    preferred_terms = _preferred_terms(node_affinity, ignore)
    pod_aff = _mapping(affinity.get("podAffinity"), "spec.affinity.podAffinity")
    pod_anti = _mapping(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    owner_kind = ""
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and (ref.get("controller") or not owner_kind):
            owner_kind = str(ref.get("kind") or "")
    node_selector = {str(k): str(v) for k, v in _mapping(spec.get("nodeSelector"), "spec.nodeSelector").items()}
    _check_provisioner_name(node_selector, required_terms, preferred_terms, ignore)
    return PodRequest(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        labels={str(k): str(v) for k, v in _mapping(meta.get("labels"), "metadata.labels").items()},
        requests=pod_requests(spec),
        node_selector=node_selector,
        required_terms=required_terms,
        preferred_terms=preferred_terms,
        tolerations=tuple(toleration_from_wire(t) for t in _list(spec.get("tolerations"), "spec.tolerations")),
        pod_affinity=_affinity_terms(pod_aff, "required", "spec.affinity.podAffinity", namespace),
        preferred_pod_affinity=_affinity_terms(pod_aff, "preferred", "spec.affinity.podAffinity", namespace),
        pod_anti_affinity=_affinity_terms(pod_anti, "required", "spec.affinity.podAntiAffinity", namespace),
        preferred_pod_anti_affinity=_affinity_terms(pod_anti, "preferred", "spec.affinity.podAntiAffinity", namespace),
        topology_spread=_spread(spec),
        host_ports=_host_ports(spec),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        node_name=str(spec.get("nodeName") or ""),
        owner_kind=owner_kind,
        terminal=_terminal(obj),
        ignore_reason=_ignore_reason(ignore),
        claims=_claims(spec, str(meta.get("name") or "")),
    )


REQUEST_METADATA = ("namespace", "name", "uid", "labels", "ownerReferences", "creationTimestamp")
"""The metadata fields `pod_request` reads (besides them: the whole `spec`, and whether the phase is terminal)."""


def same_request(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether `pod_request` reads the same from both Pod documents, told without reading them: the
    very same `spec` object (cluster state keeps an unchanged spec as the one it held,
    `state/trim.py`), equal `REQUEST_METADATA` fields, and a phase as terminal. Keep it in step
    with `pod_request`."""
    spec = before.get("spec")
    if spec is None or spec is not after.get("spec"):
        return False
    meta_before, meta_after = before.get("metadata"), after.get("metadata")
    if not isinstance(meta_before, Mapping) or not isinstance(meta_after, Mapping):
        return False
    if any(meta_before.get(k) != meta_after.get(k) for k in REQUEST_METADATA):
        return False
    return _terminal(before) == _terminal(after)


def _terminal(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status") or {}
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase in ("Succeeded", "Failed")


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Karpenter's Ceiling of a pod spec's containers, plus `pods: 1`."""
    return _ceiling(spec, _container_requests)


def pod_limits(spec: Mapping[str, Any]) -> dict[str, int]:
    """Karpenter's Ceiling of a pod spec's containers' limits (summed, at least the largest init
    container's), plus `pods: 1` as Karpenter's `LimitsForPods` counts it; raises PodSpecError."""
    return _ceiling(spec, _container_limits)


def _ceiling(spec: Mapping[str, Any], per_container: Callable[[Any, str], dict[str, int]]) -> dict[str, int]:
    """Containers summed, at least the largest init container, plus `pods: 1`."""
    summed: dict[str, int] = {}
    for i, container in enumerate(_list(spec.get("containers"), "spec.containers")):
        for name, value in per_container(container, f"spec.containers[{i}]").items():
            summed[name] = summed.get(name, 0) + value
    for i, container in enumerate(_list(spec.get("initContainers"), "spec.initContainers")):
        for name, value in per_container(container, f"spec.initContainers[{i}]").items():
            summed[name] = max(summed.get(name, 0), value)
    summed[PODS] = 1
    return summed


def _container_limits(container: Any, path: str) -> dict[str, int]:
    resources = _mapping(_mapping(container, path).get("resources"), f"{path}.resources")
    out = {}
    for name, value in _mapping(resources.get("limits"), f"{path}.resources.limits").items():
        try:
            out[str(name)] = parse_resource(str(name), value)
        except QuantityError as err:
            raise PodSpecError(f"{path}.resources.limits.{name}: {err}") from err
    return out


def _container_requests(container: Any, path: str) -> dict[str, int]:
    resources = _mapping(_mapping(container, path).get("resources"), f"{path}.resources")
    requests = _mapping(resources.get("requests"), f"{path}.resources.requests")
    limits = _mapping(resources.get("limits"), f"{path}.resources.limits")
    out = {}
    for source, field in ((limits, "limits"), (requests, "requests")):
        for name, value in source.items():
            try:
                out[str(name)] = parse_resource(str(name), value)
            except QuantityError as err:
                raise PodSpecError(f"{path}.resources.{field}.{name}: {err}") from err
    return out


MAX_IGNORE_REASONS = 5
MAX_IGNORE_CHARS = 4_000


def _ignore_reason(reasons: list[str]) -> str:
    """Why the pod is ignored: the first reasons, then how many more (bounded, issue 14)."""
    text = clip("; ".join(reasons[:MAX_IGNORE_REASONS]), MAX_IGNORE_CHARS)
    return text if len(reasons) <= MAX_IGNORE_REASONS else f"{text}; and {len(reasons) - MAX_IGNORE_REASONS} more"


def _requirements(exprs: Any, path: str, ignore: list[str]) -> tuple[Requirement, ...]:
    out = []
    for i, expr in enumerate(_list(exprs, path)):
        expr = _mapping(expr, f"{path}[{i}]")
        values = [str(v) for v in expr.get("values") or []]
        key, operator = str(expr.get("key") or ""), str(expr.get("operator") or "")
        problems = requirement_errors({"key": key, "operator": operator, "values": values}, f"{path}[{i}]")
        if problems:
            if len(ignore) <= MAX_IGNORE_REASONS:
                ignore.append(render(problems))
            else:
                ignore.append("")  # counted, not rendered
            continue
        out.append(Requirement.new(key, operator, values))
    return tuple(out)


def _required_terms(node_affinity: Mapping[str, Any], ignore: list[str]) -> tuple[tuple[Requirement, ...], ...]:
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = _mapping(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), path)
    terms = []
    for i, term in enumerate(_list(required.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")):
        term = _mapping(term, f"{path}.nodeSelectorTerms[{i}]")
        if term.get("matchFields"):
            ignore.append("node selector term with matchFields is not supported")
        terms.append(_requirements(term.get("matchExpressions"), f"{path}.nodeSelectorTerms[{i}]", ignore))
    return tuple(terms)


def _preferred_terms(
    node_affinity: Mapping[str, Any], ignore: list[str]
) -> tuple[tuple[int, tuple[Requirement, ...]], ...]:
    path = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    terms = []
    for i, item in enumerate(_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), path)):
        item = _mapping(item, f"{path}[{i}]")
        pref = _mapping(item.get("preference"), f"{path}[{i}].preference")
        if pref.get("matchFields"):
            ignore.append("node selector term with matchFields is not supported")
        weight = _int(item.get("weight", 1), f"{path}[{i}].weight")
        terms.append((weight, _requirements(pref.get("matchExpressions"), f"{path}[{i}].preference", ignore)))
    return tuple(terms)


def _check_provisioner_name(
    node_selector: Mapping[str, str],
    required: Sequence[tuple[Requirement, ...]],
    preferred: Sequence[tuple[int, tuple[Requirement, ...]]],
    ignore: list[str],
) -> None:
    heaviest = max(preferred, key=lambda wt: wt[0])[1] if preferred else ()
    for req in (*(required[0] if required else ()), *heaviest):
        if req.key == PROVISIONER_NAME and req.operator == "DoesNotExist":
            ignore.append(
                "configured to not run on a Karpenter provisioned node via "
                "karpenter.sh/provisioner-name DoesNotExist requirement"
            )
            return


def label_selector(obj: Any, path: str) -> LabelSelector | None:
    """A metav1.LabelSelector; None stays None (it selects nothing)."""
    if obj is None:
        return None
    obj = _mapping(obj, path)
    labels = tuple(sorted((str(k), str(v)) for k, v in _mapping(obj.get("matchLabels"), path).items()))
    exprs = []
    for i, expr in enumerate(_list(obj.get("matchExpressions"), f"{path}.matchExpressions")):
        expr = _mapping(expr, f"{path}.matchExpressions[{i}]")
        op = str(expr.get("operator") or "")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise PodSpecError(f"{path}.matchExpressions[{i}].operator: unsupported operator {op!r}")
        exprs.append((str(expr.get("key") or ""), op, tuple(sorted(str(v) for v in expr.get("values") or []))))
    return LabelSelector(labels, tuple(sorted(exprs)))


def _affinity_term(obj: Any, path: str, namespace: str, weight: int) -> PodAffinityTerm:
    obj = _mapping(obj, path)
    namespaces = frozenset(str(n) for n in _list(obj.get("namespaces"), f"{path}.namespaces"))
    ns_selector = label_selector(obj.get("namespaceSelector"), f"{path}.namespaceSelector")
    if not namespaces and ns_selector is None:
        namespaces = frozenset({namespace})
    key = obj.get("topologyKey")
    if not key:
        raise PodSpecError(f"{path}.topologyKey: required")
    return PodAffinityTerm(
        topology_key=str(key),
        selector=label_selector(obj.get("labelSelector"), f"{path}.labelSelector"),
        namespaces=namespaces,
        namespace_selector=ns_selector,
        weight=weight,
    )


def _affinity_terms(obj: Mapping[str, Any], kind: str, path: str, namespace: str) -> tuple[PodAffinityTerm, ...]:
    field = f"{kind}DuringSchedulingIgnoredDuringExecution"
    items = _list(obj.get(field), f"{path}.{field}")
    if kind == "required":
        return tuple(_affinity_term(t, f"{path}.{field}[{i}]", namespace, 0) for i, t in enumerate(items))
    out = []
    for i, item in enumerate(items):
        item = _mapping(item, f"{path}.{field}[{i}]")
        weight = _int(item.get("weight", 1), f"{path}.{field}[{i}].weight")
        out.append(
            _affinity_term(item.get("podAffinityTerm"), f"{path}.{field}[{i}].podAffinityTerm", namespace, weight)
        )
    return tuple(out)


def _spread(spec: Mapping[str, Any]) -> tuple[TopologySpreadConstraint, ...]:
    out = []
    for i, item in enumerate(_list(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")):
        path = f"spec.topologySpreadConstraints[{i}]"
        item = _mapping(item, path)
        if not item.get("topologyKey"):
            raise PodSpecError(f"{path}.topologyKey: required")
        when = str(item.get("whenUnsatisfiable") or "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise PodSpecError(f"{path}.whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, got {when!r}")
        min_domains = item.get("minDomains")
        policy = str(item.get("nodeAffinityPolicy") or "Honor")
        if policy not in ("Honor", "Ignore"):
            raise PodSpecError(f"{path}.nodeAffinityPolicy: must be Honor or Ignore, got {policy!r}")
        out.append(
            TopologySpreadConstraint(
                topology_key=str(item["topologyKey"]),
                max_skew=max(1, _int(item.get("maxSkew", 1), f"{path}.maxSkew")),
                when_unsatisfiable=when,
                selector=label_selector(item.get("labelSelector"), f"{path}.labelSelector"),
                min_domains=None if min_domains is None else _int(min_domains, f"{path}.minDomains"),
                node_affinity_policy=policy,
            )
        )
    return tuple(out)


def _claims(spec: Mapping[str, Any], pod_name: str) -> tuple[ClaimRef, ...]:
    """The claims of `volumes[]`: `persistentVolumeClaim.claimName`, and `<pod>-<volume>` for a
    generic ephemeral volume (the claim the ephemeral volume controller creates for it)."""
    out = []
    for i, volume in enumerate(_list(spec.get("volumes"), "spec.volumes")):
        volume = _mapping(volume, f"spec.volumes[{i}]")
        claim = _mapping(volume.get("persistentVolumeClaim"), f"spec.volumes[{i}].persistentVolumeClaim")
        if claim.get("claimName"):
            out.append(ClaimRef(str(claim["claimName"])))
        elif volume.get("ephemeral") is not None:
            out.append(ClaimRef(f"{pod_name}-{volume.get('name')}", ephemeral=True))
    return tuple(dict.fromkeys(out))


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    out = []
    for i, container in enumerate(_list(spec.get("containers"), "spec.containers")):
        for j, port in enumerate(_list(_mapping(container, "spec.containers").get("ports"), "ports")):
            port = _mapping(port, f"spec.containers[{i}].ports[{j}]")
            if port.get("hostPort"):
                out.append(
                    HostPort(
                        port=_int(port["hostPort"], f"spec.containers[{i}].ports[{j}].hostPort"),
                        protocol=str(port.get("protocol") or "TCP"),
                        ip=str(port.get("hostIP") or "0.0.0.0"),
                    )
                )
    return tuple(out)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodSpecError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PodSpecError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PodSpecError(f"{path}: expected an integer, got {value!r}")
    try:
        return int(value)
    except ValueError as err:
        raise PodSpecError(f"{path}: expected an integer, got {value!r}") from err
