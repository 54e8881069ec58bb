"""What a PromQL query needs from `/metrics`: the metric names it selects and the labels it reads.

`needs(query, variables)` → {metric: labels}: every `name{matchers}` (its matchers' label names),
every bare metric name, `label_values(metric, label)`, and the labels of `by (...)` clauses (asked
of every metric in the query; a `$variable` in a `by` clause stands for each value of a custom
dashboard variable). Only Karpenter's and controller-runtime's metrics are kept (the dashboards
also read node-exporter's), and the `cluster` label, which a Prometheus setup adds to every
series it scrapes, is left out. A histogram's `_bucket` and a summary's `_count` select the
family itself, with `le` / nothing added.

`missing(text, wanted)` checks those needs against a `/metrics` text as Prometheus stores it:
by each sample line's own metric name (prometheus_client's parser renames counters' samples and
families to its `_total` convention, so it would hide the very names the queries use); a family
is found by its samples `name`, `name_bucket`, `name_count` or `name_sum`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

OURS = ("karpenter_", "controller_runtime_")
QUERIES = Path(__file__).resolve().parents[1] / "data" / "karpenter-v0.31-dashboard-queries.json"
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


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+\S+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
FOLDED = ("", "_bucket", "_count", "_sum")


def series(text: str) -> dict[str, list[set[str]]]:
    """Every sample line's metric name → the label names of each of its series."""
    out: dict[str, list[set[str]]] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if line.startswith("#") or match is None:
            continue
        name, body, labels, at = match.group(1), match.group(2) or "", set(), 0
        while at < len(body):
            label = _LABEL.match(body, at)
            if label is None:
                raise ValueError(f"malformed labels in {line!r}")
            labels.add(label.group(1))
            at = label.end()
        out.setdefault(name, []).append(labels)
    return out


def missing(text: str, wanted: Mapping[str, set[str]]) -> list[str]:
    """The (metric, labels) wanted that no series of `text` carries."""
    have = series(text)
    out = []
    for name, labels in sorted(wanted.items()):
        found = [s for suffix in FOLDED for s in have.get(name + suffix, [])]
        if not any(labels <= s for s in found):
            out.append(f"{name}{sorted(labels)} (present: {sorted(map(sorted, found))[:2]})")
    return out


def dashboard_needs(*names: str) -> dict[str, set[str]]:
    """What the kept dashboards' queries need (`needs` over each), of the dashboards named, or all."""
    data = json.loads(QUERIES.read_text())
    out: dict[str, set[str]] = {}
    for name, dashboard in data["dashboards"].items():
        if names and name not in names:
            continue
        for query in dashboard["queries"]:
            for metric, labels in needs(query, dashboard["customVariables"]).items():
                out.setdefault(metric, set()).update(labels)
    return out
