"""Field errors as Karpenter's webhooks report them (knative `apis.FieldError`, spec §3).

Pure. Each error has a message, the field paths at fault and optional details; a list renders
as `"<message>: <path>, <path>"` (plus `"\\n<details>"`), errors with the same message and
details merged, sorted, joined by newlines, so that a user sees every field at fault at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


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


def render(errors: Iterable[FieldError]) -> str:
    """All errors as one message: merged by message and details, sorted, one per line."""
    merged: dict[tuple[str, str], list[str]] = {}
    for err in errors:
        paths = merged.setdefault((err.message, err.details), [])
        for path in err.paths:
            if path not in paths:
                paths.append(path)
    rendered = [
        FieldError(message, tuple(sorted(paths)), details).render() for (message, details), paths in merged.items()
    ]
    return "\n".join(sorted(rendered))


@dataclass
class InvalidObjectError(ValueError):
    """An object that cannot be accepted; `str()` names every field at fault."""

    errors: list[FieldError] = field(default_factory=list)

    def __str__(self) -> str:
        return render(self.errors)

    def paths(self) -> list[str]:
        return sorted({p for e in self.errors for p in e.paths})
