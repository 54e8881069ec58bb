"""Taints and tolerations with Kubernetes' matching rules.

Pure. A toleration with an empty key and operator `Exists` tolerates everything; an empty
effect matches every effect; `Exists` ignores the value. Karpenter makes pods tolerate a
provisioner's `taints` of every effect (PreferNoSchedule included, until relaxation adds a
toleration for it, spec §5.6) and ignores its `startupTaints` (spec §5.3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; `operator` is `Equal` (default) or `Exists`, empty key/effect match all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

# Always ignored on existing nodes when deciding whether a pod fits (spec §5.5.1).
EPHEMERAL_NODE_TAINTS = (
    Taint("node.kubernetes.io/not-ready", "", NO_SCHEDULE),
    Taint("node.kubernetes.io/unreachable", "", NO_SCHEDULE),
)

TOLERATE_PREFER_NO_SCHEDULE = Toleration(operator="Exists", effect=PREFER_NO_SCHEDULE)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """True when `toleration` tolerates `taint`."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if not toleration.key and toleration.operator != "Exists":
        return False
    return toleration.value == taint.value


def first_untolerated(tolerations: Sequence[Toleration], taints: Iterable[Taint]) -> Taint | None:
    """The first taint none of `tolerations` tolerates, or None when all are tolerated."""
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def taint_from_wire(obj: Mapping[str, Any]) -> Taint:
    return Taint(str(obj.get("key") or ""), str(obj.get("value") or ""), str(obj.get("effect") or ""))


def toleration_from_wire(obj: Mapping[str, Any]) -> Toleration:
    return Toleration(
        key=str(obj.get("key") or ""),
        operator=str(obj.get("operator") or "Equal"),
        value=str(obj.get("value") or ""),
        effect=str(obj.get("effect") or ""),
    )


def taint_to_wire(taint: Taint) -> dict[str, str]:
    out = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


def is_ephemeral(taint: Taint) -> bool:
    return any(taint.key == t.key and taint.effect == t.effect for t in EPHEMERAL_NODE_TAINTS)
