"""What a PromQL query needs from `/metrics`: the metric names it selects and the labels it reads.

`needs(query, variables)` → {metric: labels}: every `name{matchers}` (its matchers' label names),
every bare metric name, `label_values(metric, label)`, and the labels of `by (...)` clauses (asked
of every metric in the query; a `$variable` in a `by` clause stands for each value of a custom
dashboard variable). Only Karpenter's and controller-runtime's metrics are kept (the dashboards
also read node-exporter's), and the `cluster` label, which a Prometheus setup adds to every
series it scrapes, is left out. A histogram's `_bucket` and a summary's `_count` select the
family itself, with `le` / nothing added.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

OURS = ("karpenter_", "controller_runtime_")
ADDED_BY_PROMETHEUS = frozenset({"cluster"})
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)")
_BY = re.compile(r"\bby\s*\(([^)]*)\)")
_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_]+)\s*\)")


def needs(query: str, variables: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, label in _LABEL_VALUES.findall(query):
        out.setdefault(name, set()).add(label)
    for name, matchers in _SELECTOR.findall(query):
        out.setdefault(name, set()).update(m for m, _ in _MATCHER.findall(matchers))
    bare = _SELECTOR.sub(lambda m: m.group(1), query)
    for name in _NAME.findall(bare):
        if name.startswith(OURS):
            out.setdefault(name, set())
    by: set[str] = set()
    for group in _BY.findall(query):
        for label in (g.strip() for g in group.split(",")):
            if label.startswith("$"):
                by.update(v.strip() for v in (variables or {}).get(label[1:], "").split(",") if v.strip())
            elif label:
                by.add(label)
    for labels in out.values():
        labels.update(by)
    kept: dict[str, set[str]] = {}
    for name, labels in out.items():
        if not name.startswith(OURS):
            continue
        for suffix, extra in (("_bucket", {"le"}), ("_count", set())):
            if name.endswith(suffix):
                name, labels = name[: -len(suffix)], (labels - extra)
        kept.setdefault(name, set()).update(labels - ADDED_BY_PROMETHEUS)
    return kept
