"""Before binding: may karpy bind this pod to this node now? Pure.

The plan the scheduler made is a snapshot's opinion; by the time a node is launched, pods may
have been bound elsewhere (by karpy or kube-scheduler), deleted, or joined by new ones. karpy
binds a pod itself only where its binding is one kube-scheduler would accept and cannot race
kube-scheduler, which binds at the same time (issue 8):

1. **Only onto a node karpy holds** (created cordoned with `BINDING_HOLD` in this pass; see
   `nodes.py`): nothing else binds there but DaemonSet pods, whose templates are reserved.
2. **Only pods whose placement depends on that node alone.** A pod with a `DoNotSchedule`
   topology spread, required pod affinity or anti-affinity on a key other than
   `kubernetes.io/hostname` — or that such a term of any other pod selects — is judged against
   other nodes that kube-scheduler may be filling at the same moment, so karpy leaves it to
   kube-scheduler: the node karpy launched for it is released with the rest of the batch (all
   planned domains exist at once) and kube-scheduler binds it there or wherever it fits. The same
   goes for required pod affinity not already satisfied on the node (the "first pod of a group
   may go anywhere" rule races too). Not a spread kube-scheduler counts over one domain
   (`single_domain`: the pod's own node selector fixes the key, as karpy's pin does, with the node
   affinity honoured and `minDomains` at most 1): its skew is 1 on any node of that domain
   whatever the other nodes hold, so such a pod is bound like any other, and such a spread of
   another pod does not make this one depend on other nodes either. Nor does another pod's
   unpinned spread that counts a pinned pod: kube-scheduler placing that pod meanwhile, from a
   view without this binding, is the order "that pod, then this one", which kube-scheduler itself
   accepts (this pod's check counts its own zone only) — unlike another pod's zonal
   anti-affinity, which kube-scheduler checks against each new pod.
3. **Re-checked against the node as it is now** (the fresh snapshot plus the pods bound earlier
   in this pass): still pending; resources with the DaemonSet pods still to come; every
   `NoSchedule`/`NoExecute` taint tolerated — startup taints included, so such pods are bound by
   kube-scheduler once the taint is removed; `nodeSelector` and required node affinity on the
   node's actual labels; host ports; hostname anti-affinity both ways; hostname spread with
   kube-scheduler's domains (every node the pod's node affinity allows).
4. **Volumes** (`scheduling/volumes.py` `bind_refusal`): never a pod with a claim still to bind
   (WaitForFirstConsumer: kube-scheduler binds it, which tells the provisioner the node, so the
   volume is made in its zone); a bound volume's node affinity on the node's labels; the node's
   CSINode attach limits.

`refusal(...)` returns "" when karpy may bind, else why not (logged; the pod stays for
kube-scheduler or the next batch).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.core import resources as res
from controller.core.labels import BINDING_HOLD, HOSTNAME, UNSCHEDULABLE_TAINT_KEY
from controller.core.requirements import Requirement
from controller.core.taints import NO_EXECUTE, NO_SCHEDULE, Taint, first_untolerated, is_ephemeral
from controller.scheduling.types import LabelSelector, PodAffinityTerm, PodRequest, TopologySpreadConstraint
from controller.scheduling.volumes import bind_refusal
from controller.state.snapshot import NodeView, Snapshot

DO_NOT_SCHEDULE = "DoNotSchedule"


@dataclass(frozen=True)
class _Term:
    """A pod-selecting term of some pod: who it selects (namespaces or all) and how."""

    namespaces: frozenset[str]
    all_namespaces: bool
    selector: LabelSelector | None
    spread: bool = False  # a DoNotSchedule spread's selector (else a pod (anti-)affinity term)

    def selects(self, pod: PodRequest) -> bool:
        if self.selector is None or (not self.all_namespaces and pod.namespace not in self.namespaces):
            return False
        return self.selector.matches(pod.labels)


def _affinity_term(term: PodAffinityTerm) -> _Term:
    return _Term(term.namespaces, term.namespace_selector is not None, term.selector)


def single_domain(pod: PodRequest, c: TopologySpreadConstraint) -> bool:
    """kube-scheduler counts this spread of the pod over one domain: only the nodes the pod's node
    affinity allows count (`nodeAffinityPolicy: Honor`, the default), its node selector fixes the
    key (a pod karpy pinned when lifting its topology gate, `spreadpin.py`), and `minDomains` is at
    most 1 (more would make the global minimum 0). Its PodTopologySpread filter then reads
    count + 1 - count = 1 <= maxSkew on every node of that domain (v1.33 `filtering.go`)."""
    return (
        c.topology_key in pod.node_selector
        and c.node_affinity_policy != "Ignore"
        and (c.min_domains is None or c.min_domains <= 1)
    )


def cross_node_terms(pods: Iterable[tuple[PodRequest, bool]]) -> frozenset[_Term]:
    """The terms by which one pod's placement constrains pods on other nodes, of `pods` (request,
    bound): DoNotSchedule spread of a pod not bound yet (a bound pod's spread is never checked
    again; one kube-scheduler counts over one domain constrains nothing elsewhere), required
    anti-affinity off hostname (also a bound pod's: kube-scheduler checks an existing pod's
    anti-affinity against each new one), and the required affinity of a pod that matches its own
    term (kube-scheduler lets the first pod of such a group go anywhere only while no pod matches
    anywhere, so a new match elsewhere changes where it may go). Affinity to other pods only gains
    options when a matching pod is placed, and hostname anti-affinity only concerns one node."""
    out: set[_Term] = set()
    for pod, bound in pods:
        for c in () if bound else pod.topology_spread:
            if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME and not single_domain(pod, c):
                out.add(_Term(frozenset({pod.namespace}), False, c.selector, spread=True))
        out.update(_affinity_term(t) for t in pod.pod_anti_affinity if t.topology_key != HOSTNAME)
        out.update(term for term in map(_affinity_term, pod.pod_affinity) if term.selects(pod))
    return frozenset(out)


def depends_on_other_nodes(pod: PodRequest, terms: frozenset[_Term]) -> str:
    """Why this pod's placement depends on nodes other than its own ("" when it does not)."""
    for c in pod.topology_spread:
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME and not single_domain(pod, c):
            return f"its topology spread on {c.topology_key} counts pods on other nodes"
    for kind, group in (("anti-affinity", pod.pod_anti_affinity), ("affinity", pod.pod_affinity)):
        for t in group:
            if t.topology_key != HOSTNAME:
                return f"its pod {kind} on {t.topology_key} depends on pods on other nodes"
    pinned = any(
        single_domain(pod, c) for c in pod.topology_spread
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key != HOSTNAME
    )  # fmt: skip
    if any(t.selects(pod) and not (pinned and t.spread) for t in terms):
        return "another pod's spread or pod (anti-)affinity counts it across nodes"
    return ""


def labels_allow(labels: Mapping[str, str], requirements: Iterable[Requirement]) -> bool:
    """Kubernetes label matching: a missing key satisfies only NotIn and DoesNotExist."""
    for req in requirements:
        value = labels.get(req.key)
        if value is None:
            if req.operator not in ("NotIn", "DoesNotExist"):
                return False
        elif not req.has(value):
            return False
    return True


def node_affinity_allows(pod: PodRequest, labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return not pod.required_terms or any(labels_allow(labels, term) for term in pod.required_terms)


def _blocking_taints(node: NodeView) -> list[Taint]:
    return [
        t for t in node.taints
        if t.effect in (NO_SCHEDULE, NO_EXECUTE) and t.key != UNSCHEDULABLE_TAINT_KEY and not is_ephemeral(t)
    ]  # fmt: skip


def daemon_reservation(
    node: NodeView, daemonsets: Sequence[PodRequest], on_node: Sequence[PodRequest]
) -> dict[str, int]:
    """Requests of the DaemonSet pods that will still come to this node (templates it admits, less
    the DaemonSet pods already there)."""
    expected: dict[str, int] = {}
    for ds in daemonsets:
        if first_untolerated(ds.tolerations, _blocking_taints(node)) is None and node_affinity_allows(ds, node.labels):
            expected = res.add(expected, ds.requests)
    present = res.total(p.requests for p in on_node if p.owner_kind == "DaemonSet")
    return {k: v for k, v in res.subtract(expected, present).items() if v > 0}


@dataclass(frozen=True)
class BindContext:
    """What every check of one pass reads: the fresh snapshot, the DaemonSet templates and the
    cross-node terms of every pod in it."""

    snapshot: Snapshot
    daemonsets: Sequence[PodRequest]
    terms: frozenset[_Term]
    _host_counts: dict[_Term, dict[str, int]] = field(default_factory=dict, compare=False, repr=False)

    def host_counts(self, term: _Term) -> dict[str, int]:
        """Pods the term selects per node of the snapshot (computed once per term and pass)."""
        counts = self._host_counts.get(term)
        if counts is None:
            counts = {
                node.name: sum(
                    1 for p in node.pods if p.request is not None and not p.deleting and term.selects(p.request)
                )
                for node in self.snapshot.nodes.values()
            }
            self._host_counts[term] = counts
        return counts

    @staticmethod
    def of(snapshot: Snapshot, daemonsets: Sequence[PodRequest]) -> BindContext:
        live = (p for p in snapshot.pods.values() if not p.terminal and not p.deleting)
        pods = ((p.request, bool(p.node_name)) for p in live if p.request is not None)
        return BindContext(snapshot, daemonsets, cross_node_terms(pods))


def refusal(
    ctx: BindContext, pod_key: str, node_name: str, placed: Sequence[PodRequest], bound: Sequence[PodRequest] = ()
) -> str:
    """ "" when karpy may bind the pod to the node now; else why not. `bound`: pods karpy bound to
    the node earlier in this pass (not yet in the snapshot); `placed`: pods accepted for the node
    in the current round, bound together with this one in any order — they count for room and
    anti-affinity, but only `bound` pods can satisfy its pod affinity."""
    snap = ctx.snapshot
    view = snap.pods.get(pod_key)
    if view is None or view.request is None:
        return "the pod is gone"
    if view.node_name or view.deleting or view.terminal:
        return "the pod is no longer pending"
    if view.scheduling_gates:
        return "it is still gated (the apiserver refuses its binding)"
    node = snap.nodes.get(node_name)
    if node is None or node.deleting or node.marked_for_deletion:
        return f"node {node_name} is gone or being deleted"
    if BINDING_HOLD not in node.annotations:
        return f"node {node_name} is not held by karpy: kube-scheduler binds there"
    pod = view.request
    why = depends_on_other_nodes(pod, ctx.terms)
    if why:
        return why
    settled = [*(p.request for p in node.pods if p.request is not None and not p.terminal and not p.deleting), *bound]
    why = bind_refusal(pod, node.name, node.labels, [*settled, *placed], snap.volumes)
    if why:
        return why
    return _fit_refusal(ctx, pod, node, [*settled, *placed], settled)


def _fit_refusal(
    ctx: BindContext, pod: PodRequest, node: NodeView, on_node: Sequence[PodRequest], settled: Sequence[PodRequest]
) -> str:
    taint = first_untolerated(pod.tolerations, _blocking_taints(node))
    if taint is not None:
        return f"taint {taint} is not tolerated (kube-scheduler binds once it is removed)"
    if not node_affinity_allows(pod, node.labels):
        return "its node selector or required node affinity does not match the node's labels"
    used = res.add(res.total(p.requests for p in on_node), daemon_reservation(node, ctx.daemonsets, on_node))
    short = res.exceeded(res.add(used, pod.requests), node.allocatable)
    if short:
        return f"it no longer fits: {', '.join(short)}"
    taken = {(hp.port, hp.protocol) for p in on_node for hp in p.host_ports}
    if any((hp.port, hp.protocol) in taken for hp in pod.host_ports):
        return "a host port it needs is taken on the node"
    for t in pod.pod_anti_affinity:
        if any(_affinity_term(t).selects(other) for other in on_node):
            return f"its anti-affinity on {t.topology_key} repels a pod on the node"
    for other in on_node:
        if any(_affinity_term(t).selects(pod) for t in other.pod_anti_affinity if t.topology_key == HOSTNAME):
            return f"the anti-affinity of {other.key} on the node repels it"
    for t in pod.pod_affinity:
        if not any(_affinity_term(t).selects(other) for other in settled):
            return f"its pod affinity on {t.topology_key} is not yet satisfied on the node"
    return _host_spread_refusal(ctx, pod, node, on_node)


def _host_spread_refusal(ctx: BindContext, pod: PodRequest, node: NodeView, on_node: Sequence[PodRequest]) -> str:
    for c in pod.topology_spread:
        if c.when_unsatisfiable != DO_NOT_SCHEDULE or c.topology_key != HOSTNAME:
            continue
        term = _Term(frozenset({pod.namespace}), False, c.selector)
        mine = sum(1 for p in on_node if term.selects(p))
        low, domains = mine, 1
        counts = ctx.host_counts(term)
        for other in ctx.snapshot.nodes.values():
            if other.name == node.name or other.deleting or not node_affinity_allows(pod, other.labels):
                continue
            domains += 1
            low = min(low, counts[other.name])
        if c.min_domains is not None and domains < c.min_domains:
            low = 0
        skew = mine + (1 if term.selects(pod) else 0) - low
        if skew > c.max_skew:
            return f"its topology spread on {HOSTNAME} would reach skew {skew} (maxSkew {c.max_skew})"
    return ""
