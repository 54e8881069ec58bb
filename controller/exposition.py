"""`/metrics` in the Prometheus text format (0.0.4) as Karpenter's Go client writes it.

prometheus_client's own writer renames every counter to `<name>_total` and adds a
`<name>_created` series to counters, histograms and summaries. Karpenter v0.31 (Go's
client_golang) does neither: its counters are named as declared (`karpenter_nodes_created`,
`karpenter_interruption_received_messages`, but `controller_runtime_reconcile_total`) and are
typed `counter`, and there is no `_created`. `exposition(registry)` writes each family under the
name its samples carry — `controller.metrics.KarpenterCounter` keeps Karpenter's bare name, a
plain `Counter` gets `_total` — leaves out `_created` series and counters with no series yet (a
Go counter vector with no children lists nothing). A `TextFamily` brings its sample lines already
written (`labels_text`, `number`: the one way a label set and a value are written here), so the
capacity gauges' tens of thousands of series (`capacity.py`) are joined, not built as
prometheus_client samples and formatted one by one. Served by `controller/httpserver.py` as
`CONTENT_TYPE`, the type Go's `expfmt.FmtText` names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import REGISTRY, Collector
from prometheus_client.samples import Sample

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# OpenMetrics-only types as the 0.0.4 text format names them (prometheus_client does the same).
_TEXT_TYPE = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram", "unknown": "untyped"}


class TextFamily(Metric):
    """A gauge family whose sample lines are already written in this format (each ends in a
    newline; written with `labels_text` and `number`): `exposition` writes them as they are."""

    def __init__(self, name: str, documentation: str, text: str) -> None:
        super().__init__(name, documentation, "gauge")
        self.text = text


def exposition(registry: Collector = REGISTRY) -> bytes:
    out: list[str] = []
    for family in registry.collect():
        if isinstance(family, TextFamily):
            out.append(_header(family.name, family.documentation, family.type))
            out.append(family.text)
            continue
        samples = [s for s in family.samples if s.name != family.name + "_created"]
        if family.type == "counter":
            if not samples:
                continue
            name = samples[0].name
        else:
            name = family.name + "_info" if family.type == "info" else family.name
        out.append(_header(name, family.documentation, family.type))
        out.extend(_lines(samples))
    return "".join(out).encode("utf-8")


def _header(name: str, documentation: str, typ: str) -> str:
    doc = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {_TEXT_TYPE.get(typ, typ)}\n"


def _lines(samples: Iterable[Sample]) -> Iterable[str]:
    for s in samples:
        labels = labels_text(sorted(s.labels.items()))
        stamp = "" if s.timestamp is None else f" {int(float(s.timestamp) * 1000)}"
        yield f"{s.name}{{{labels}}} {number(s.value)}{stamp}\n" if labels else f"{s.name} {number(s.value)}{stamp}\n"


def labels_text(pairs: Iterable[tuple[str, str]]) -> str:
    """`name="value",…` in the order given (the format lists them sorted by name), values escaped."""
    return ",".join(f'{k}="{escape(v)}"' for k, v in pairs)


def number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def escape(value: str) -> str:
    """A label value as the text format quotes it: backslash, newline and double quote escaped."""
    if "\\" not in value and "\n" not in value and '"' not in value:
        return value
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
