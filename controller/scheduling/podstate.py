"""A pod's scheduling state during one solve: its current constraints and their relaxation.

Internal to the scheduler (mutable, one per pending pod). Preferred constraints count as
required until relaxed (spec §5.6): the pod's requirements are its nodeSelector ∩ the first
required node-affinity term ∩ the heaviest preferred term; preferred pod (anti-)affinity terms
and ScheduleAnyway spreads are enforced like required ones. `relax()` drops exactly one, in
Karpenter's order: a required term (when more than one, terms are ORed), the heaviest preferred
pod-affinity term, the heaviest preferred pod-anti-affinity term, the heaviest preferred
node-affinity term, the first ScheduleAnyway spread, then (only if some provisioner has a
PreferNoSchedule taint) a toleration of PreferNoSchedule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from controller.core.requirements import IN, Requirement, Requirements
from controller.core.taints import PREFER_NO_SCHEDULE, TOLERATE_PREFER_NO_SCHEDULE, Toleration
from controller.scheduling.types import PodAffinityTerm, PodRequest, TopologySpreadConstraint


def pod_requirements(
    node_selector: Mapping[str, str],
    required: Sequence[tuple[Requirement, ...]],
    preferred: Sequence[tuple[int, tuple[Requirement, ...]]],
) -> Requirements:
    """nodeSelector ∩ the heaviest preferred term ∩ the first required term (spec §5.6)."""
    reqs = Requirements(Requirement.new(k, IN, [v]) for k, v in node_selector.items())
    if preferred:
        for req in preferred[0][1]:
            reqs.add(req)
    if required:
        for req in required[0]:
            reqs.add(req)
    return reqs


def requirements_of(pod: PodRequest) -> Requirements:
    """The requirements a pod starts with (used for daemonsets too)."""
    preferred = sorted(pod.preferred_terms, key=lambda wt: -wt[0])
    return pod_requirements(pod.node_selector, list(pod.required_terms), preferred)


_T = TypeVar("_T")
# (node selector, first required term, heaviest preferred term, tolerations) -> (requirements, signature)
RequirementCache = dict[object, tuple[Requirements, tuple[object, ...]]]


def _by_weight(items: tuple[_T, ...], weight: Callable[[_T], int]) -> tuple[_T, ...]:
    """Heaviest first (a stable sort: ties keep their order)."""
    return tuple(sorted(items, key=lambda item: -weight(item))) if len(items) > 1 else items


class PodState:
    """One pending pod while the scheduler works on it."""

    __slots__ = (
        "index",
        "pod",
        "preferred",
        "preferred_affinity",
        "preferred_anti",
        "request",
        "required",
        "requirements",
        "selector_key",
        "signature",
        "spread",
        "tolerations",
    )

    def __init__(
        self,
        index: int,
        pod: PodRequest,
        request: np.ndarray,
        cache: RequirementCache | None = None,
    ) -> None:
        self.index = index
        self.pod = pod
        self.request = request
        # tuples, replaced (not mutated) when relaxed: most pods have none of these, and share
        # the pod's own empty tuples
        self.required: tuple[tuple[Requirement, ...], ...] = tuple(pod.required_terms)
        self.preferred = _by_weight(pod.preferred_terms, lambda wt: wt[0])
        self.preferred_affinity = _by_weight(pod.preferred_pod_affinity, lambda t: t.weight)
        self.preferred_anti = _by_weight(pod.preferred_pod_anti_affinity, lambda t: t.weight)
        self.spread: tuple[TopologySpreadConstraint, ...] = tuple(pod.topology_spread)
        self.tolerations: tuple[Toleration, ...] = pod.tolerations
        # (namespace, labels) decide which topology groups count this pod
        self.selector_key = (pod.namespace, tuple(sorted(pod.labels.items())))
        self.requirements = Requirements()
        self.signature: tuple[object, ...] = ()
        self._recompute(cache)

    def _recompute(self, cache: RequirementCache | None = None) -> None:
        selector = self.pod.node_selector
        key: object = self.tolerations  # the usual pod: no node selector, no node affinity
        if selector or self.required or self.preferred:
            key = (tuple(selector.items()), self.required[:1], self.preferred[:1], self.tolerations)
        found = cache.get(key) if cache is not None else None
        if found is None:
            reqs = pod_requirements(selector, self.required, self.preferred)
            found = (reqs, (frozenset(reqs.values()), self.tolerations))
            if cache is not None:
                cache[key] = found
        self.requirements = found[0]  # shared between identical pods: never mutated
        self.signature = found[1]

    @property
    def key(self) -> str:
        return self.pod.key

    def affinity_terms(self) -> list[PodAffinityTerm]:
        return [*self.pod.pod_affinity, *self.preferred_affinity]

    def anti_affinity_terms(self) -> list[PodAffinityTerm]:
        return [*self.pod.pod_anti_affinity, *self.preferred_anti]

    def node_filter(self) -> tuple[Requirements, ...]:
        """nodeSelector ∩ each required term (ORed): the nodes a spread constraint counts."""
        if not self.required:
            return (pod_requirements(self.pod.node_selector, [], []),) if self.pod.node_selector else ()
        return tuple(pod_requirements(self.pod.node_selector, [term], []) for term in self.required)

    def relax(self, tolerate_prefer_no_schedule: bool) -> str | None:
        """Drop one preference (spec §5.6); the description of what was dropped, or None."""
        relaxed = self._relax(tolerate_prefer_no_schedule)
        if relaxed is not None:
            self._recompute()
        return relaxed

    def _relax(self, tolerate_prefer_no_schedule: bool) -> str | None:
        if len(self.required) > 1:
            self.required = self.required[1:]
            return "required node affinity term"
        if self.preferred_affinity:
            self.preferred_affinity = self.preferred_affinity[1:]
            return "preferred pod affinity term"
        if self.preferred_anti:
            self.preferred_anti = self.preferred_anti[1:]
            return "preferred pod anti-affinity term"
        if self.preferred:
            self.preferred = self.preferred[1:]
            return "preferred node affinity term"
        for i, constraint in enumerate(self.spread):
            if constraint.when_unsatisfiable == "ScheduleAnyway":
                self.spread = self.spread[:i] + self.spread[i + 1 :]
                return "ScheduleAnyway topology spread"
        if tolerate_prefer_no_schedule and not any(
            t.operator == "Exists" and not t.key and t.effect in ("", PREFER_NO_SCHEDULE) for t in self.tolerations
        ):
            self.tolerations = (*self.tolerations, TOLERATE_PREFER_NO_SCHEDULE)
            return "PreferNoSchedule toleration"
        return None
