"""The chart README's values table, made from the `# --` comments of values.yaml.

`python -m tests.charts.values_table` prints the table to paste between the README's
`<!-- values -->` markers; tests/charts/test_values_table.py fails when the README's copy differs
or when a value has no `# --` comment on itself or an ancestor.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "karpy"
_KEY = re.compile(r"^(\s*)([A-Za-z][\w.-]*):")
_DOC = re.compile(r"^\s*# -- (.*)$")
_MORE = re.compile(r"^\s*# (?!--)(.*)$")
BEGIN, END = "<!-- values -->", "<!-- /values -->"


@dataclass(frozen=True)
class Row:
    key: str
    default: str
    description: str


def _lookup(values: Any, path: list[str]) -> Any:
    for part in path:
        values = values[part]
    return values


def documented(text: str) -> list[Row]:
    """Every key preceded by a `# --` comment, with its default and description, in file order."""
    values = yaml.safe_load(text)
    rows: list[Row] = []
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if doc := _DOC.match(line):
            pending = [doc.group(1).strip()]
            continue
        if pending is not None and (more := _MORE.match(line)):
            pending.append(more.group(1).strip())
            continue
        key = _KEY.match(line)
        if not key:
            if line.strip() and not line.lstrip().startswith(("#", "-")):
                pending = None
            continue
        indent = len(key.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key.group(2)))
        if pending is not None:
            path = [k for _, k in stack]
            default = json.dumps(_lookup(values, path), separators=(", ", ": "))
            rows.append(Row(".".join(path), default, " ".join(pending)))
        pending = None
    return rows


def leaves(values: Any, prefix: str = "") -> list[str]:
    if isinstance(values, dict) and values:
        return [leaf for k, v in values.items() for leaf in leaves(v, f"{prefix}{k}.")]
    return [prefix.rstrip(".")]


def undocumented(text: str) -> list[str]:
    """Values with no `# --` comment on themselves or on an ancestor."""
    keys = {r.key for r in documented(text)}
    return [
        leaf for leaf in leaves(yaml.safe_load(text)) if not any(leaf == k or leaf.startswith(k + ".") for k in keys)
    ]


def table(text: str) -> str:
    lines = ["| Key | Default | Description |", "| --- | --- | --- |"]
    for row in documented(text):
        default, description = (s.replace("|", "\\|") for s in (row.default, row.description))
        lines.append(f"| `{row.key}` | `{default}` | {description} |")
    return "\n".join(lines)


def readme_table(readme: str) -> str:
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[start:end].strip()


if __name__ == "__main__":
    print(table((CHART / "values.yaml").read_text()))
