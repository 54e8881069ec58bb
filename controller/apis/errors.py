"""Field errors as Karpenter's webhooks report them (knative `apis.FieldError`, spec §3).

Pure. Each error has a message, the field paths at fault and optional details; a list renders
as `"<message>: <path>, <path>"` (plus `"\\n<details>"`), errors with the same message and
details merged, sorted, joined by newlines, so that a user sees every field at fault at once.

Bounded (issue 14): a message names at most `MAX_PATHS` paths and a rendering has at most
`MAX_LINES` errors and `MAX_CHARS` characters, each cut saying how much was left out; values
quoted from the input go through `clip()`. Merging is linear in the number of errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_PATHS = 20
MAX_LINES = 50
MAX_CHARS = 10_000
MAX_QUOTED = 320  # the longest qualified name (253 prefix, "/", 63 name) fits


def clip(text: object, limit: int = MAX_QUOTED) -> str:
    """`text` as quoted in a message: at most `limit` characters, the cut said."""
    out = str(text)
    return out if len(out) <= limit else f"{out[:limit]}…({len(out) - limit} more characters)"


@dataclass(frozen=True)
class FieldError:
    """One thing wrong with an object, at one or more field paths."""

    message: str
    paths: tuple[str, ...] = ()
    details: str = ""

    def render(self) -> str:
        text = self.message
        if self.paths:
            text += ": " + ", ".join(self.paths)
        if self.details:
            text += "\n" + self.details
        return text


def invalid_value(value: object, path: str, details: str = "") -> FieldError:
    return FieldError(f"invalid value: {value}", (path,), details)


def invalid_key(key: str, path: str, details: str = "") -> FieldError:
    return FieldError(f'invalid key name "{key}"', (path,), details)


def missing_field(*paths: str) -> FieldError:
    return FieldError("missing field(s)", tuple(paths))


def got_both(*paths: str) -> FieldError:
    return FieldError("expected exactly one, got both", tuple(paths))


def out_of_bounds(lower: object, value: object, upper: object, path: str) -> FieldError:
    return FieldError(f"expected {lower} <= {value} <= {upper}", (path,))


def _natural(path: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key: `spec.taints[2]` before `spec.taints[10]`."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", path))


def render(errors: Iterable[FieldError]) -> str:
    """All errors as one message: merged by message and details, sorted, one per line, bounded."""
    merged: dict[tuple[str, str], dict[str, None]] = {}
    for err in errors:
        seen = merged.setdefault((err.message, err.details), {})
        for path in err.paths:
            seen[path] = None
    rendered = []
    for (message, details), path_set in merged.items():
        paths = sorted(path_set, key=_natural)
        text = FieldError(message, tuple(paths[:MAX_PATHS]), details).render()
        if len(paths) > MAX_PATHS:
            head, sep, tail = text.partition("\n")
            text = f"{head}, … and {len(paths) - MAX_PATHS} more{sep}{tail}"
        rendered.append(text)
    rendered.sort()
    if len(rendered) > MAX_LINES:
        rendered[MAX_LINES:] = [f"… and {len(rendered) - MAX_LINES} more errors"]
    out = "\n".join(rendered)
    return out if len(out) <= MAX_CHARS else out[:MAX_CHARS] + "\n… (message cut)"


@dataclass
class InvalidObjectError(ValueError):
    """An object that cannot be accepted; `str()` names every field at fault."""

    errors: list[FieldError] = field(default_factory=list)

    def __str__(self) -> str:
        return render(self.errors)

    def paths(self) -> list[str]:
        return sorted({p for e in self.errors for p in e.paths})
