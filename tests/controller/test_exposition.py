"""`/metrics` as Karpenter's Go client writes it: counters typed `counter` under Karpenter's own
names (no `_total` added, no `_created`), histograms and summaries whole, labels escaped."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.parser import text_string_to_metric_families

from controller.exposition import exposition
from controller.metrics import KarpenterCounter


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    created = KarpenterCounter("karpenter_nodes_created", "Nodes created.", ["reason"], registry=reg)
    created.labels(reason="provisioning").inc()
    created.labels(reason="provisioning").inc()
    KarpenterCounter("karpenter_nodes_terminated", "Nodes terminated.", ["reason"], registry=reg)  # no series yet
    Counter("controller_runtime_reconcile_total", "Reconciles.", ["controller"], registry=reg).labels("p").inc()
    Histogram("karpenter_batch_seconds", "Batches.", buckets=(1.0, 2.0), registry=reg).observe(1.5)
    Info("karpy_build", "Build.", registry=reg).info({"version": "1"})
    Gauge("karpenter_odd", "Help with a \\ and\na newline.", ["v"], registry=reg).labels('a"b\\c\nd').set(3)
    return reg


def test_karpenter_counters_keep_their_name_and_type() -> None:
    text = exposition(registry()).decode()
    assert "# TYPE karpenter_nodes_created counter\n" in text
    assert 'karpenter_nodes_created{reason="provisioning"} 2.0\n' in text
    assert "karpenter_nodes_created_total" not in text and "_created_created" not in text
    # a counter named with _total (controller-runtime's) keeps it, once
    assert "# TYPE controller_runtime_reconcile_total counter\n" in text
    assert 'controller_runtime_reconcile_total{controller="p"} 1.0\n' in text
    assert "reconcile_total_total" not in text


def test_no_created_series_and_empty_counters_left_out() -> None:
    text = exposition(registry()).decode()
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")}
    assert [n for n in names if n.endswith("_created")] == ["karpenter_nodes_created"]
    assert "karpenter_nodes_terminated" not in text


def test_histograms_info_and_escaping() -> None:
    text = exposition(registry()).decode()
    assert '# TYPE karpy_build_info gauge\nkarpy_build_info{version="1"} 1.0\n' in text
    assert "# TYPE karpenter_batch_seconds histogram\n" in text
    assert 'karpenter_batch_seconds_bucket{le="2.0"} 1.0\n' in text
    assert 'karpenter_batch_seconds_bucket{le="+Inf"} 1.0\n' in text
    assert "karpenter_batch_seconds_sum 1.5\n" in text and "karpenter_batch_seconds_count 1.0\n" in text
    assert "# HELP karpenter_odd Help with a \\\\ and\\na newline.\n" in text
    assert 'karpenter_odd{v="a\\"b\\\\c\\nd"} 3.0\n' in text


def test_a_prometheus_parser_reads_it_back() -> None:
    families = {f.name: f for f in text_string_to_metric_families(exposition(registry()).decode())}
    assert families["karpenter_nodes_created"].type == "counter"
    assert families["karpenter_batch_seconds"].type == "histogram"
    (odd,) = families["karpenter_odd"].samples
    assert odd.labels == {"v": 'a"b\\c\nd'} and odd.value == 3.0
