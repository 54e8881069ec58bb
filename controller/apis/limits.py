"""Limits on what a document may be before anyone reads it: nesting depth.

Pure and iterative (no recursion, so no RecursionError however deep the input). The webhooks
deny a Provisioner or AWSNodeTemplate nested deeper than `MAX_DEPTH` containers (a real one
is under ten deep); the controller isolates each object's view instead (`controller.state.views`).
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32
_MAX_PATH_CHARS = 160


def _step(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def too_deep(doc: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """The path of the first container nested deeper than `max_depth` (the root is level 1), or None."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, list):
            children = enumerate(value)
        else:
            continue
        if depth > max_depth:
            return path if len(path) <= _MAX_PATH_CHARS else path[:_MAX_PATH_CHARS] + "…"
        for key, child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, _step(path, key) if len(path) <= _MAX_PATH_CHARS else path))
    return None
