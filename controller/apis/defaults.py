"""Defaulting of Provisioners, as the mutating webhook applies it (spec §2).

Pure and idempotent: `default_provisioner()` returns a defaulted copy and never changes its
argument; a second pass adds nothing. AWSNodeTemplates get no persisted defaults (runtime
defaults apply at launch).

karpy decision (spec decisions table): a `spec.labels` entry on a well-known key counts as a
requirement on that key, so a provisioner labelled `kubernetes.io/arch: arm64` is not also given
`kubernetes.io/arch In [amd64]`, which would make it unusable.
"""

from __future__ import annotations

from typing import Any

from controller.core.labels import (
    ARCH,
    CAPACITY_TYPE,
    INSTANCE_CATEGORY,
    INSTANCE_FAMILY,
    INSTANCE_GENERATION,
    INSTANCE_TYPE,
    OS,
    WELL_KNOWN_LABELS,
    normalize_key,
)

_INSTANCE_SHAPE_KEYS = (INSTANCE_TYPE, INSTANCE_FAMILY, INSTANCE_CATEGORY, INSTANCE_GENERATION)


def _constrained_keys(spec: dict[str, Any]) -> set[str]:
    keys = set()
    for req in spec.get("requirements") or []:
        if isinstance(req, dict) and isinstance(req.get("key"), str):
            keys.add(normalize_key(req["key"]))
    labels = spec.get("labels")
    if isinstance(labels, dict):
        keys.update(k for k in (normalize_key(str(k)) for k in labels) if k in WELL_KNOWN_LABELS)
    return keys


def default_requirements(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The requirements the webhook appends to `spec`, in Karpenter's order (may be empty)."""
    keys = _constrained_keys(spec)
    added: list[dict[str, Any]] = []
    if OS not in keys:
        added.append({"key": OS, "operator": "In", "values": ["linux"]})
    if ARCH not in keys:
        added.append({"key": ARCH, "operator": "In", "values": ["amd64"]})
    if CAPACITY_TYPE not in keys:
        added.append({"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]})
    if not any(k in keys for k in _INSTANCE_SHAPE_KEYS):
        added.append({"key": INSTANCE_CATEGORY, "operator": "In", "values": ["c", "m", "r"]})
        added.append({"key": INSTANCE_GENERATION, "operator": "Gt", "values": ["2"]})
    return added


def default_provisioner(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of the Provisioner document with its default requirements appended.

    Only the path that changes is copied (document, spec, requirements list): a deep copy of
    the whole document would recurse through whatever unknown fields it carries.
    """
    out = dict(obj)
    spec = out.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return out
    spec = out["spec"] = dict(spec)
    reqs = spec.get("requirements")
    if reqs is not None and not isinstance(reqs, list):
        return out
    added = default_requirements(spec)
    if added:
        spec["requirements"] = [*(reqs or []), *added]
    return out
