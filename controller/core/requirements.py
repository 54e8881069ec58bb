"""The node-selector requirement algebra (spec §5.12), shared by the webhook and the scheduler.

Pure. A `Requirement` is one key's allowed values: a concrete set (`In`, `DoesNotExist`) or the
complement of an excluded set (`NotIn`, `Exists`), optionally with integer bounds (`Gt`, `Lt`).
`Requirements` maps keys to requirements, intersecting when a key is added twice. Keys are
normalised through the alias table (`controller.core.labels.NORMALIZED_LABELS`).

karpy decision: where Karpenter picks a random value (an `In` member, an integer for `Exists`),
karpy picks the smallest one, so the same inputs always give the same node labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from controller.core.labels import (
    SUPPORTED_OPERATORS,
    WELL_KNOWN_LABELS,
    is_restricted_node_label,
    normalize_key,
    parse_int,
)

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

_EMPTY: frozenset[str] = frozenset()


def _as_int(value: str) -> int | None:
    return parse_int(value)


@dataclass(frozen=True, slots=True)
class Requirement:
    """The set of values one label key may take."""

    key: str
    complement: bool
    values: frozenset[str] = _EMPTY
    gt: int | None = None
    lt: int | None = None

    @staticmethod
    def new(key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
        """Build from the wire form {key, operator, values}; raises ValueError on a bad operator."""
        key = normalize_key(key)
        vals = frozenset(str(v) for v in values)
        if operator == IN:
            return Requirement(key, False, vals)
        if operator == NOT_IN:
            return Requirement(key, True, vals)
        if operator == EXISTS:
            return Requirement(key, True)
        if operator == DOES_NOT_EXIST:
            return Requirement(key, False)
        if operator in (GT, LT):
            numbers = [_as_int(v) for v in vals]
            if len(numbers) != 1 or numbers[0] is None:
                raise ValueError(f"key {key} with operator {operator} must have a single positive integer value")
            if operator == GT:
                return Requirement(key, True, gt=numbers[0])
            return Requirement(key, True, lt=numbers[0])
        raise ValueError(f"key {key} has an unsupported operator {operator} not in {list(SUPPORTED_OPERATORS)}")

    @property
    def operator(self) -> str:
        """The operator this set reads as (`NotIn`, `Exists`, `In` or `DoesNotExist`)."""
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def _within_bounds(self, value: str) -> bool:
        if self.gt is None and self.lt is None:
            return True
        number = _as_int(value)
        if number is None:
            return False
        return (self.gt is None or number > self.gt) and (self.lt is None or number < self.lt)

    def has(self, value: str) -> bool:
        """True when `value` is allowed."""
        if self.complement:
            return value not in self.values and self._within_bounds(value)
        return value in self.values and self._within_bounds(value)

    def is_empty(self) -> bool:
        """True when no value at all is allowed (a concrete empty set or crossed bounds)."""
        return not self.complement and not self.values

    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both (the key of `self` is kept)."""
        gt = self.gt if other.gt is None else other.gt if self.gt is None else max(self.gt, other.gt)
        lt = self.lt if other.lt is None else other.lt if self.lt is None else min(self.lt, other.lt)
        if gt is not None and lt is not None and gt >= lt:
            return Requirement(self.key, False)
        if self.complement and other.complement:
            return Requirement(self.key, True, self.values | other.values, gt, lt)
        if self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        bounded = Requirement(self.key, True, _EMPTY, gt, lt)
        return Requirement(self.key, False, frozenset(v for v in values if bounded._within_bounds(v)))

    def intersects(self, other: Requirement) -> bool:
        """Karpenter's per-key compatibility: a non-empty intersection, or both sides say "absent"."""
        if not self.intersection(other).is_empty():
            return True
        absent = (NOT_IN, DOES_NOT_EXIST)
        return self.operator in absent and other.operator in absent

    def any_value(self) -> str | None:
        """A deterministic allowed value: the smallest member, or the smallest allowed integer."""
        if not self.complement:
            return min(self.values) if self.values else None
        start = 0 if self.gt is None else self.gt + 1
        candidate = start
        while str(candidate) in self.values:
            candidate += 1
        if self.lt is not None and candidate >= self.lt:
            return None
        return str(candidate)

    def to_wire(self) -> dict[str, object]:
        """The {key, operator, values} form (bounds render as Gt/Lt when they are all there is)."""
        if self.complement and not self.values and (self.gt is None) != (self.lt is None):
            if self.gt is not None:
                return {"key": self.key, "operator": GT, "values": [str(self.gt)]}
            return {"key": self.key, "operator": LT, "values": [str(self.lt)]}
        op = self.operator
        wire: dict[str, object] = {"key": self.key, "operator": op}
        if op in (IN, NOT_IN):
            wire["values"] = sorted(self.values)
        return wire

    def __str__(self) -> str:
        text = f"{self.key} {self.operator}"
        if self.values:
            text += " " + ",".join(sorted(self.values))
        if self.gt is not None:
            text += f" >{self.gt}"
        if self.lt is not None:
            text += f" <{self.lt}"
        return text


class Requirements(Mapping[str, Requirement]):
    """Requirements keyed by (normalised) label key; adding a key twice intersects."""

    __slots__ = ("_reqs",)

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._reqs: dict[str, Requirement] = {}
        for req in requirements:
            self.add(req)

    @staticmethod
    def from_wire(items: Iterable[Mapping[str, object]]) -> Requirements:
        """From a list of {key, operator, values}; raises ValueError on a bad operator."""
        reqs = Requirements()
        for item in items:
            values = item.get("values") or []
            reqs.add(Requirement.new(str(item["key"]), str(item["operator"]), [str(v) for v in values]))  # type: ignore[attr-defined]
        return reqs

    @staticmethod
    def from_labels(labels: Mapping[str, str]) -> Requirements:
        """`In [value]` for every label."""
        return Requirements(_label_requirement(k, v) for k, v in labels.items())

    def add(self, req: Requirement) -> None:
        existing = self._reqs.get(req.key)
        self._reqs[req.key] = req if existing is None else existing.intersection(req)

    def copy(self) -> Requirements:
        clone = Requirements()
        clone._reqs = dict(self._reqs)
        return clone

    def merged(self, other: Iterable[Requirement]) -> Requirements:
        """A copy with `other` added."""
        clone = self.copy()
        for req in other:
            clone.add(req)
        return clone

    def __getitem__(self, key: str) -> Requirement:
        return self._reqs[key]

    def get_or_exists(self, key: str) -> Requirement:
        """The requirement on `key`; a missing key allows anything (`Exists`)."""
        return self._reqs.get(key) or Requirement(key, True)

    def __iter__(self) -> Iterator[str]:
        return iter(self._reqs)

    def __len__(self) -> int:
        return len(self._reqs)

    def intersects_errors(self, incoming: Requirements) -> list[str]:
        """Why `incoming` cannot be satisfied together with these requirements (empty when it can)."""
        errors = []
        for key, theirs in incoming._reqs.items():
            mine = self._reqs.get(key)
            if mine is not None and not mine.intersects(theirs):
                errors.append(f"key {key}, {theirs} not in {mine}")
        return errors

    def compatible_errors(self, incoming: Requirements) -> list[str]:
        """Karpenter's Compatible(self=node side, incoming=pod side) with its error messages."""
        errors = []
        for key, theirs in incoming._reqs.items():
            if key in WELL_KNOWN_LABELS or key in self._reqs:
                continue
            if theirs.operator in (NOT_IN, DOES_NOT_EXIST):
                continue
            errors.append(f'label "{key}" does not have known values{self._typo_hint(key)}')
        return errors + self.intersects_errors(incoming)

    def compatible(self, incoming: Requirements) -> bool:
        """`compatible_errors` is empty, decided without writing the messages (the solver's hot
        path: a pod's unknown label key costs one lookup, not a typo search)."""
        for key, theirs in incoming._reqs.items():
            mine = self._reqs.get(key)
            if mine is None:
                if key in WELL_KNOWN_LABELS or theirs.operator in (NOT_IN, DOES_NOT_EXIST):
                    continue
                return False
            if not mine.intersects(theirs):
                return False
        return True

    def _typo_hint(self, key: str) -> str:
        return _typo_hint(key, frozenset(self._reqs))

    def labels(self) -> dict[str, str]:
        """Custom node labels implied by the requirements (well-known keys come from the instance)."""
        out = {}
        for key, req in self._reqs.items():
            if is_restricted_node_label(key):
                continue
            value = req.any_value()
            if value is not None:
                out[key] = value
        return out

    def to_wire(self) -> list[dict[str, object]]:
        return [req.to_wire() for req in self._reqs.values()]

    def __repr__(self) -> str:
        return "Requirements(" + "; ".join(str(r) for r in self._reqs.values()) + ")"


@lru_cache(maxsize=65_536)
def _label_requirement(key: str, value: str) -> Requirement:
    """`key In [value]` (immutable, so shared: every simulation reads the same node labels again)."""
    return Requirement.new(key, IN, [value])


@lru_cache(maxsize=4096)
def _typo_hint(key: str, keys: frozenset[str]) -> str:
    """' (typo of "known"?)' for the first well-known or required key `key` is close to (cached:
    thousands of pods share a few unknown keys)."""
    for known in sorted(WELL_KNOWN_LABELS | keys):
        if key in known:
            return f' (typo of "{known}"?)'
        # the length difference bounds the edit distance from below: skip what cannot be close
        if abs(len(known) - len(key)) < len(known) / 5 and _edit_distance(key, known) < len(known) / 5:
            return f' (typo of "{known}"?)'
    return ""


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
