"""`/metrics` in the Prometheus text format (0.0.4) as Karpenter's Go client writes it.

prometheus_client's own writer renames every counter to `<name>_total` and adds a
`<name>_created` series to counters, histograms and summaries. Karpenter v0.31 (Go's
client_golang) does neither: its counters are named as declared (`karpenter_nodes_created`,
`karpenter_interruption_received_messages`, but `controller_runtime_reconcile_total`) and are
typed `counter`, and there is no `_created`. `exposition(registry)` writes each family under the
name its samples carry — `controller.metrics.KarpenterCounter` keeps Karpenter's bare name, a
plain `Counter` gets `_total` — leaves out `_created` series and counters with no series yet (a
Go counter vector with no children lists nothing). Served by `controller/httpserver.py`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.registry import REGISTRY, Collector
from prometheus_client.samples import Sample

# OpenMetrics-only types as the 0.0.4 text format names them (prometheus_client does the same).
_TEXT_TYPE = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}


def exposition(registry: Collector = REGISTRY) -> bytes:
    out: list[str] = []
    for family in registry.collect():
        samples = [s for s in family.samples if s.name != family.name + "_created"]
        if family.type == "counter":
            if not samples:
                continue
            name = samples[0].name
        else:
            name = family.name + "_info" if family.type == "info" else family.name
        doc = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {name} {doc}\n# TYPE {name} {_TEXT_TYPE.get(family.type, family.type)}\n")
        out.extend(_lines(samples))
    return "".join(out).encode("utf-8")


def _lines(samples: Iterable[Sample]) -> Iterable[str]:
    for s in samples:
        labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(s.labels.items()))
        stamp = "" if s.timestamp is None else f" {int(float(s.timestamp) * 1000)}"
        yield f"{s.name}{{{labels}}} {_number(s.value)}{stamp}\n" if labels else f"{s.name} {_number(s.value)}{stamp}\n"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
