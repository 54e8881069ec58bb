"""An independent checker of pod placements: would kube-scheduler have accepted each binding?

Test code only, and deliberately independent of karpy: it imports nothing from `controller`, parses
quantities, selectors, affinities and taints itself from the wire objects, and follows
kube-scheduler's filter semantics (not karpy's):

- a pod with scheduling gates cannot be bound (the apiserver refuses);
- resources: the requests of the pods on the node (max of the summed containers and each init
  container, plus overhead) fit `status.allocatable`, and the pod count fits `pods`;
- taints: every `NoSchedule`/`NoExecute` taint is tolerated, except the node-lifecycle taints
  `node.kubernetes.io/*` (not-ready, unreachable, unschedulable, …); a cordoned node accepts
  nothing unless it is karpy's own binding hold (annotation `karpy.sh/binding-hold`), and a node
  being deleted accepts nothing;
- `nodeSelector` and required node affinity match the node's labels;
- required pod anti-affinity, both directions (the pod's own terms, and every bound pod's terms
  against the pod);
- required pod affinity (a matching pod in the same domain, or none anywhere and the pod matches
  its own term, as kube-scheduler allows for the first pod of a group);
- `DoNotSchedule` topology spread: domains are the values of the key on the nodes that match the
  pod's node selector and affinity (`nodeAffinityPolicy: Honor`, `nodeTaintsPolicy: Ignore`),
  counting matching pods of the pod's namespace that are not being deleted; `minDomains` makes
  the global minimum 0 when fewer domains exist.

`replay(events)` walks a recorded stream of pod and node watch events in resourceVersion order
(the apiserver's own order of writes) and checks every binding against the cluster as it was
just before it — which is what kube-scheduler's acceptance means for order-dependent rules such
as topology spread, and how a binding made against a stale plan is caught.
`final_violations(nodes, pods)` checks the order-independent rules on a final state.
`volume_violations(nodes, pods, volumes)` checks kube-scheduler's volume rules on a final state
(`Volumes`: the claims, PersistentVolumes and CSINodes as read from the cluster):
- VolumeBinding: every claim a bound pod mounts (`persistentVolumeClaim.claimName`, and
  `<pod>-<volume>` for a generic ephemeral volume) exists, is Bound to an existing volume, and that
  volume's `spec.nodeAffinity` matches the node (`matchFields` on `metadata.name` included);
- VolumeZone: a volume's zone and region labels (several zones joined by `__`) match the node's;
- NodeVolumeLimits: per node and CSI driver (of the bound volume), the distinct claims of its pods
  stay within its CSINode's `allocatable.count`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

Obj = Mapping[str, Any]

BINDING_HOLD = "karpy.sh/binding-hold"
_SUFFIX = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$")


def quantity(value: Any) -> Decimal:
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"bad quantity {value!r}")
    return Decimal(match.group(1)) * Decimal(str(_SUFFIX[match.group(2) or ""]))


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def pod_key(pod: Obj) -> str:
    return f"{_meta(pod).get('namespace', 'default')}/{_meta(pod).get('name')}"


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    spec = pod.get("spec") or {}
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, Decimal(0)) + quantity(value)
    for c in spec.get("initContainers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = max(total.get(name, Decimal(0)), quantity(value))
    for name, value in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, Decimal(0)) + quantity(value)
    return total


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; a missing selector matches nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _node_expr_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_affinity_matches(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = _meta(node).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {})  # fmt: skip
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    for term in terms:
        fields = term.get("matchFields") or []
        name_ok = all(_node_expr_matches(f, {"metadata.name": _meta(node).get("name", "")}) for f in fields)
        if name_ok and all(_node_expr_matches(e, labels) for e in term.get("matchExpressions") or []):
            return True
    return False


def tolerates(pod: Obj, taint: Mapping[str, Any]) -> bool:
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _terms(pod: Obj, kind: str) -> list[Mapping[str, Any]]:
    section = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _term_selects(owner: Obj, term: Mapping[str, Any], other: Obj) -> bool:
    """Whether `term` (declared by `owner`) selects pod `other` (namespace and labels)."""
    ns = _meta(other).get("namespace", "default")
    namespaces = term.get("namespaces") or []
    if term.get("namespaceSelector") is not None:
        if term["namespaceSelector"] not in ({}, None) and ns not in namespaces:
            return False  # a non-empty namespaceSelector is not evaluated here: only listed namespaces
    elif namespaces:
        if ns not in namespaces:
            return False
    elif ns != _meta(owner).get("namespace", "default"):
        return False
    return selector_matches(term.get("labelSelector"), _meta(other).get("labels") or {})


def _domain(node: Obj | None, key: str, view: ClusterView | None = None) -> str | None:
    """The node's value of a topology key. The checker reads a node without a
    `kubernetes.io/hostname` label as its own host (what the user means); kube-scheduler — and so
    a view built `as_kube_scheduler` — reads it as outside every hostname domain."""
    if node is None:
        return None
    labels = _meta(node).get("labels") or {}
    if key == "kubernetes.io/hostname" and key not in labels and not (view is not None and view.as_kube_scheduler):
        return str(_meta(node).get("name"))
    return labels.get(key)


@dataclass
class ClusterView:
    """Nodes by name and bound pods by key, as they were at one moment."""

    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)
    as_kube_scheduler: bool = False

    def bound(self) -> Iterable[Obj]:
        for pod in self.pods.values():
            if (pod.get("spec") or {}).get("nodeName") and not _terminal(pod):
                yield pod

    def node_of(self, pod: Obj) -> Obj | None:
        return self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def placement_violations(pod: Obj, node_name: str, view: ClusterView) -> list[str]:
    """What kube-scheduler would refuse about binding `pod` to `node_name` in `view` ([] = accept)."""
    key = pod_key(pod)
    node = view.nodes.get(node_name)
    where = f"{key} on {node_name}"
    if node is None:
        return [f"{where}: the node does not exist"]
    out: list[str] = []
    meta, spec = _meta(node), node.get("spec") or {}
    if meta.get("deletionTimestamp"):
        out.append(f"{where}: the node is being deleted")
    if (pod.get("spec") or {}).get("schedulingGates"):
        out.append(f"{where}: the pod has scheduling gates (the apiserver refuses to bind it)")
    cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    if spec.get("unschedulable") and BINDING_HOLD not in (meta.get("annotations") or {}) and not tolerates(pod, cordon):
        out.append(f"{where}: the node is cordoned")
    for taint in spec.get("taints") or []:
        lifecycle = str(taint.get("key", "")).startswith("node.kubernetes.io/")
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not lifecycle and not tolerates(pod, taint):
            out.append(f"{where}: taint {taint.get('key')}:{taint.get('effect')} not tolerated")
    if not node_affinity_matches(pod, node):
        out.append(f"{where}: nodeSelector / required node affinity does not match the node's labels")
    others = [p for p in view.bound() if pod_key(p) != key]
    out += _resource_violations(pod, node, [p for p in others if p["spec"]["nodeName"] == node_name], where)
    out += _anti_affinity_violations(pod, node, others, view, where)
    out += _affinity_violations(pod, node, others, view, where)
    out += _spread_violations(pod, node, others, view, where)
    return out


def _resource_violations(pod: Obj, node: Obj, on_node: Sequence[Obj], where: str) -> list[str]:
    allocatable = {k: quantity(v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()}
    used: dict[str, Decimal] = {"pods": Decimal(len(on_node) + 1)}
    for p in (*on_node, pod):
        for name, value in pod_requests(p).items():
            used[name] = used.get(name, Decimal(0)) + value
    out = []
    for name, value in sorted(used.items()):
        if value > 0 and value > allocatable.get(name, Decimal(0)):
            out.append(f"{where}: {name} requests {value} exceed allocatable {allocatable.get(name, 0)}")
    return out


def _anti_affinity_violations(pod: Obj, node: Obj, others: Sequence[Obj], view: ClusterView, where: str) -> list[str]:
    out = []
    for term in _terms(pod, "podAntiAffinity"):
        mine = _domain(node, term["topologyKey"], view)
        if mine is None:
            continue
        for other in others:
            if _term_selects(pod, term, other) and _domain(view.node_of(other), term["topologyKey"], view) == mine:
                out.append(f"{where}: its anti-affinity on {term['topologyKey']} repels {pod_key(other)}")
    for other in others:
        for term in _terms(other, "podAntiAffinity"):
            theirs = _domain(view.node_of(other), term["topologyKey"], view)
            mine = _domain(node, term["topologyKey"], view)
            if theirs is not None and _term_selects(other, term, pod) and mine == theirs:
                out.append(f"{where}: {pod_key(other)}'s anti-affinity on {term['topologyKey']} repels it")
    return out


def _affinity_violations(pod: Obj, node: Obj, others: Sequence[Obj], view: ClusterView, where: str) -> list[str]:
    terms = _terms(pod, "podAffinity")
    if not terms:
        return []
    if not any(_term_selects(pod, t, o) for t in terms for o in others) and all(
        _term_selects(pod, t, pod) for t in terms
    ):
        return []  # the first pod of a self-affine group may go anywhere its node constraints allow
    out = []
    for term in terms:
        mine = _domain(node, term["topologyKey"], view)
        if mine is None or not any(
            _term_selects(pod, term, o) and _domain(view.node_of(o), term["topologyKey"], view) == mine for o in others
        ):
            out.append(f"{where}: no pod its affinity on {term['topologyKey']} requires is in that domain")
    return out


def _spread_violations(pod: Obj, node: Obj, others: Sequence[Obj], view: ClusterView, where: str) -> list[str]:
    out = []
    namespace = _meta(pod).get("namespace", "default")
    labels = _meta(pod).get("labels") or {}
    for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        key, selector = c["topologyKey"], c.get("labelSelector")
        target = _domain(node, key, view)
        if target is None:
            out.append(f"{where}: the node has no {key} label for its topology spread")
            continue
        counts: dict[str, int] = {}
        for candidate in view.nodes.values():
            domain = _domain(candidate, key, view)
            if domain is not None and node_affinity_matches(pod, candidate):
                counts.setdefault(domain, 0)
        counts.setdefault(target, 0)
        for other in others:
            domain = _domain(view.node_of(other), key, view)
            if (
                domain in counts
                and _meta(other).get("namespace", "default") == namespace
                and not _meta(other).get("deletionTimestamp")
                and selector_matches(selector, _meta(other).get("labels") or {})
                and node_affinity_matches(pod, view.node_of(other) or {})
            ):
                counts[domain] += 1
        low = min(counts.values())
        if c.get("minDomains") and len(counts) < int(c["minDomains"]):
            low = 0
        self_match = 1 if selector_matches(selector, labels) else 0
        skew = counts[target] + self_match - low
        if skew > int(c["maxSkew"]):
            out.append(f"{where}: topology spread on {key} skew {skew} > maxSkew {c['maxSkew']} (counts {counts})")
    return out


@dataclass(frozen=True)
class Event:
    """One watch event: `rv` orders it among all writes of the cluster; `seen` is when the
    recorder received it (monotonic seconds), used only for `lagging` binders."""

    rv: int
    kind: str  # "pods" | "nodes"
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    seen: float = 0.0


def replay(
    events: Iterable[Event],
    initial: ClusterView | None = None,
    lagging: Iterable[str] = (),
    lag_seconds: float = 1.0,
) -> list[str]:
    """Every binding in `events` checked against the cluster just before it (see module doc).

    `lagging`: pods bound by kube-scheduler itself. It decides from a cache that trails the
    apiserver, one pod after another, and writes each binding afterwards in its own goroutine, so
    its writes can land out of the order it decided them in. Its binding is accepted when it holds
    against the cluster as it was at some moment of the `lag_seconds` before it, plus a prefix of
    the bindings kube-scheduler wrote in the `lag_seconds` after it (pods it had already assumed).
    Every other binding — karpy's — is judged strictly at its own instant."""
    view = initial or ClusterView()
    lenient = set(lagging)
    ordered = sorted(events, key=lambda e: e.rv)
    history: list[tuple[float, ClusterView]] = []
    out: list[str] = []
    doubtful: list[tuple[int, Event, str, list[str]]] = []  # kube-scheduler's, failing the strict check
    first_binding: set[int] = set()
    for index, event in enumerate(ordered):
        if lenient:
            history.append((event.seen, ClusterView(dict(view.nodes), dict(view.pods), view.as_kube_scheduler)))
        if event.kind == "nodes":
            name = str(_meta(event.obj).get("name"))
            if event.type == "DELETED":
                view.nodes.pop(name, None)
            else:
                view.nodes[name] = event.obj
            continue
        key = pod_key(event.obj)
        if event.type == "DELETED":
            view.pods.pop(key, None)
            continue
        before = view.pods.get(key)
        node_name = (event.obj.get("spec") or {}).get("nodeName")
        if node_name and not (before and (before.get("spec") or {}).get("nodeName")):
            first_binding.add(index)
            problems = placement_violations(event.obj, node_name, view)
            if problems and key in lenient:
                doubtful.append((index, event, node_name, problems))
            else:
                out += problems
        view.pods[key] = event.obj
    for index, event, node_name, problems in doubtful:
        if not _accepted_with_lag(ordered, history, first_binding, lenient, index, event, node_name, lag_seconds):
            out += [f"{p} (bound by kube-scheduler)" for p in problems]
    return out


def _accepted_with_lag(
    ordered: Sequence[Event],
    history: Sequence[tuple[float, ClusterView]],
    first_binding: set[int],
    lenient: set[str],
    index: int,
    event: Event,
    node_name: str,
    lag_seconds: float,
) -> bool:
    assumed = [
        e for i, e in enumerate(ordered[index + 1 :], start=index + 1)
        if e.seen <= event.seen + lag_seconds and i in first_binding and pod_key(e.obj) in lenient
    ][:50]  # fmt: skip
    for at in range(index, -1, -1):
        seen, past = history[at]
        if seen < event.seen - lag_seconds:
            break
        for size in range(len(assumed) + 1):
            pods = dict(past.pods)
            pods.update((pod_key(e.obj), e.obj) for e in assumed[:size])
            if not placement_violations(event.obj, node_name, ClusterView(past.nodes, pods, past.as_kube_scheduler)):
                return True
    return False


def final_violations(nodes: Iterable[Obj], pods: Iterable[Obj]) -> list[str]:
    """The order-independent rules on one final state: resources, taints other than startup taints
    already removed, selectors and affinity, and pod (anti-)affinity."""
    view = ClusterView({str(_meta(n).get("name")): n for n in nodes}, {pod_key(p): p for p in pods})
    out: list[str] = []
    for pod in list(view.bound()):
        key, node_name = pod_key(pod), pod["spec"]["nodeName"]
        node = view.nodes.get(node_name)
        if node is None:
            continue  # its node is gone (being torn down)
        where = f"{key} on {node_name}"
        others = [p for p in view.bound() if pod_key(p) != key]
        on_node = [p for p in others if p["spec"]["nodeName"] == node_name]
        for taint in (node.get("spec") or {}).get("taints") or []:
            lifecycle = str(taint.get("key", "")).startswith("node.kubernetes.io/")
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not lifecycle and not tolerates(pod, taint):
                out.append(f"{where}: taint {taint.get('key')} not tolerated")
        if not node_affinity_matches(pod, node):
            out.append(f"{where}: nodeSelector / required node affinity does not match")
        out += _anti_affinity_violations(pod, node, others, view, where)
        out += [v for v in _resource_violations(pod, node, on_node, where) if v not in out]
    return sorted(set(out))


def domain_counts(nodes: Iterable[Obj], pods: Iterable[Obj], key: str, selector: Mapping[str, Any]) -> dict[str, int]:
    """How many bound pods matching `selector` run in each value of the node label `key`."""
    by_name = {str(_meta(n).get("name")): n for n in nodes}
    counts: dict[str, int] = {}
    for pod in pods:
        node = by_name.get((pod.get("spec") or {}).get("nodeName") or "")
        if node is None or not selector_matches(selector, _meta(pod).get("labels") or {}):
            continue
        domain = _domain(node, key)
        if domain is not None:
            counts[domain] = counts.get(domain, 0) + 1
    return counts


def spread_skew_violations(nodes: Iterable[Obj], pods: Iterable[Obj], key: str, domains: Iterable[str]) -> list[str]:
    """The end state of every `DoNotSchedule` spread on `key` of the bound pods, over `domains`
    (e.g. every zone the provisioners allow, empty ones included) plus any domain a matching pod
    runs in: each group's largest count minus its smallest must not exceed its maxSkew. This is
    the constraint as the user wrote it, whatever domains existed when each pod was bound. A pod
    not bound yet whose `nodeSelector` fixes `key` counts in that domain (it can go nowhere else)."""
    view = ClusterView({str(_meta(n).get("name")): n for n in nodes}, {pod_key(p): p for p in pods})
    live = [p for p in view.pods.values() if not _meta(p).get("deletionTimestamp") and not _terminal(p)]
    bound = [
        p
        for p in live
        if (p.get("spec") or {}).get("nodeName") or ((p.get("spec") or {}).get("nodeSelector") or {}).get(key)
    ]
    groups: dict[str, tuple[str, Mapping[str, Any], int]] = {}
    for pod in bound:
        for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
            if c.get("topologyKey") == key and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
                namespace = _meta(pod).get("namespace", "default")
                selector = c.get("labelSelector") or {}
                groups.setdefault(f"{namespace} {selector}", (namespace, selector, int(c["maxSkew"])))
    out = []
    for name, (namespace, selector, max_skew) in sorted(groups.items()):
        counts = dict.fromkeys(domains, 0)
        for pod in bound:
            if _meta(pod).get("namespace", "default") != namespace:
                continue
            if not selector_matches(selector, _meta(pod).get("labels") or {}):
                continue
            node = view.node_of(pod)
            pinned = (pod.get("spec") or {}).get("nodeSelector") or {}
            domain = _domain(node, key) if node is not None else pinned.get(key)
            if domain is not None:
                counts[domain] = counts.get(domain, 0) + 1
        if counts and max(counts.values()) - min(counts.values()) > max_skew:
            out.append(f"spread {name} on {key}: counts {counts} exceed maxSkew {max_skew}")
    return out


@dataclass
class Volumes:
    """Claims by `namespace/name`, PersistentVolumes and CSINodes by name, as read from the cluster."""

    claims: dict[str, Obj] = field(default_factory=dict)
    volumes: dict[str, Obj] = field(default_factory=dict)
    csinodes: dict[str, Obj] = field(default_factory=dict)

    @staticmethod
    def of(claims: Iterable[Obj], volumes: Iterable[Obj], csinodes: Iterable[Obj] = ()) -> Volumes:
        return Volumes(
            {pod_key(c): c for c in claims},
            {str(_meta(v).get("name")): v for v in volumes},
            {str(_meta(c).get("name")): c for c in csinodes},
        )


_ZONE_LABELS = (
    "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region",
)  # fmt: skip


def claim_names(pod: Obj) -> list[str]:
    """The claims a pod mounts, in its namespace (generic ephemeral volumes: `<pod>-<volume>`)."""
    out = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if (volume.get("persistentVolumeClaim") or {}).get("claimName"):
            out.append(str(volume["persistentVolumeClaim"]["claimName"]))
        elif volume.get("ephemeral") is not None:
            out.append(f"{_meta(pod).get('name')}-{volume.get('name')}")
    return out


def _volume_allows(volume: Obj, node: Obj) -> bool:
    labels = _meta(node).get("labels") or {}
    for key in _ZONE_LABELS:
        wanted = (_meta(volume).get("labels") or {}).get(key)
        if wanted and labels.get(key) not in str(wanted).split("__"):
            return False
    required = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    if not required:
        return True
    for term in required:
        fields = term.get("matchFields") or []
        name_ok = all(_node_expr_matches(f, {"metadata.name": _meta(node).get("name", "")}) for f in fields)
        exprs = term.get("matchExpressions") or []
        if (fields or exprs) and name_ok and all(_node_expr_matches(e, labels) for e in exprs):
            return True
    return False


def volume_violations(nodes: Iterable[Obj], pods: Iterable[Obj], volumes: Volumes) -> list[str]:
    """kube-scheduler's VolumeBinding, VolumeZone and NodeVolumeLimits on one final state."""
    by_name = {str(_meta(n).get("name")): n for n in nodes}
    out: list[str] = []
    attached: dict[tuple[str, str], set[str]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = by_name.get(node_name or "")
        if node is None or _terminal(pod):
            continue
        where = f"{pod_key(pod)} on {node_name}"
        namespace = _meta(pod).get("namespace", "default")
        for name in claim_names(pod):
            claim = volumes.claims.get(f"{namespace}/{name}")
            if claim is None:
                out.append(f"{where}: persistentvolumeclaim {namespace}/{name} does not exist")
                continue
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if (claim.get("status") or {}).get("phase") != "Bound" or not volume_name:
                out.append(f"{where}: persistentvolumeclaim {namespace}/{name} is not Bound")
                continue
            volume = volumes.volumes.get(volume_name)
            if volume is None:
                out.append(f"{where}: persistentvolume {volume_name} of {namespace}/{name} does not exist")
                continue
            if not _volume_allows(volume, node):
                out.append(f"{where}: persistentvolume {volume_name} does not allow the node")
            driver = ((volume.get("spec") or {}).get("csi") or {}).get("driver")
            if driver:
                attached.setdefault((str(node_name), str(driver)), set()).add(f"{namespace}/{name}")
    for (node_name, driver), claims in sorted(attached.items()):
        csinode = volumes.csinodes.get(node_name) or {}
        for entry in (csinode.get("spec") or {}).get("drivers") or []:
            count = (entry.get("allocatable") or {}).get("count")
            if entry.get("name") == driver and count is not None and len(claims) > int(count):
                out.append(f"{node_name}: {len(claims)} {driver} volumes attached, its CSINode allows {count}")
    return sorted(out)
