"""Resource lists as integers: parsing, formatting and arithmetic.

Pure. `cpu` is kept in millicores, every other resource as a whole number (bytes for `memory`
and `ephemeral-storage`, counts for `pods` and extended resources), rounded up like Kubernetes.
Used by `pods.py` (requests), `overhead.py` (capacity and overhead), the scheduler and the
simulate output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from controller.core.quantity import format_bytes, format_milli, int_value, milli_value

Resources = Mapping[str, int]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
ATTACH_PREFIX = "attachable-volumes-csi-"  # + a CSI driver: its volume attachments (scheduling/volumes.py)
EPHEMERAL_STORAGE = "ephemeral-storage"

_BYTE_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE, "storage"})


def parse_resource(name: str, value: str | int | float) -> int:
    """One quantity as the scheduler's integer (`cpu: 500m` -> 500, `memory: 1Gi` -> 1073741824)."""
    return milli_value(value) if name == CPU else int_value(value)


def parse_resources(raw: Mapping[str, str | int | float] | None) -> dict[str, int]:
    """A wire resource list as integers; raises QuantityError on a malformed quantity."""
    return {name: parse_resource(name, value) for name, value in (raw or {}).items()}


def format_resource(name: str, value: int) -> str:
    """The canonical text of one integer resource (`1930m`, `7577Mi`, `29`)."""
    if name == CPU:
        return format_milli(value)
    if name in _BYTE_RESOURCES or name.startswith("hugepages-"):
        return format_bytes(value) if value >= 0 else "-" + format_bytes(-value)
    return str(value)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """A resource list as wire strings, keys sorted, zero values kept."""
    return {name: format_resource(name, resources[name]) for name in sorted(resources)}


def describe(resources: Mapping[str, int]) -> str:
    """`cpu=500m, memory=1Gi` — for messages."""
    return ", ".join(f"{k}={v}" for k, v in format_resources(resources).items())


def add(*lists: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for resources in lists:
        for name, value in resources.items():
            out[name] = out.get(name, 0) + value
    return out


def subtract(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    """`left - right` over the keys of both."""
    out = dict(left)
    for name, value in right.items():
        out[name] = out.get(name, 0) - value
    return out


def total(lists: Iterable[Mapping[str, int]]) -> dict[str, int]:
    return add(*lists)


def fits(requests: Mapping[str, int], available: Resources) -> bool:
    """True when every requested amount is available (a resource not offered is zero)."""
    return all(value <= available.get(name, 0) for name, value in requests.items() if value > 0)


def exceeded(requests: Mapping[str, int], available: Resources) -> list[str]:
    """The resources (sorted) whose request is more than what is available."""
    return sorted(name for name, value in requests.items() if value > 0 and value > available.get(name, 0))
