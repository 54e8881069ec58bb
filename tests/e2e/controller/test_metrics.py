"""Karpenter's Grafana dashboards work on karpy's `/metrics` (issue 19, part 8).

Every metric Karpenter v0.31's published capacity and performance dashboards query, with every
label the queries select or group by, is read out of the dashboards' own PromQL
(`tests/data/karpenter-v0.31-dashboard-queries.json`, taken from aws/karpenter-provider-aws at
v0.31.5) and looked for on a live controller's `/metrics` after it has launched, run and removed
nodes (a provisioner with limits, a DaemonSet, a Deployment scaled up then to zero).
"""

from __future__ import annotations

import gzip
import urllib.request

import pytest

from tests.e2e.env import FAST, KarpyEnv
from tests.support.poll import until
from tests.support.promql import dashboard_needs, missing

pytestmark = pytest.mark.e2e


def test_every_metric_and_label_of_karpenters_dashboards_is_on_metrics(karpy: KarpyEnv) -> None:
    wanted = dashboard_needs()
    assert len(wanted) >= 12  # the dashboards were read (capacity + performance)
    assert len(missing("", wanted)) == len(wanted)  # the check can fail
    karpy.provisioner(ttlSecondsAfterEmpty=2, limits={"resources": {"cpu": "100", "memory": "400Gi"}})
    karpy.apply({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": karpy.namespace},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{
                "name": "agent", "image": "agent", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
    })  # fmt: skip
    ctrl = karpy.start("replica-a", *FAST)
    karpy.deployment("web", 3, cpu="500m", memory="256Mi")
    until(lambda: len(karpy.running("web")) == 3, 60, "3 pods Running")
    until(lambda: karpy.running("agent"), 60, "the DaemonSet's pod on the new node")
    # the pod-startup job runs every 5 s (podmetrics.INTERVAL_SECONDS): wait for it to observe the pods
    # before they go, or a pod Ready and deleted within one interval is never observed
    running = until(lambda: 'karpenter_pods_startup_time_seconds{quantile="0.5"}' in (t := str(ctrl.get("/metrics")))
                    and t, 30, "the pods' startup observed")  # fmt: skip
    # as Prometheus asks for it: gzipped, the text format Karpenter's Go client names (issue 21)
    packed = urllib.request.Request(f"http://127.0.0.1:{ctrl.port}/metrics", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(packed, timeout=5) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        unpacked = gzip.decompress(resp.read()).decode()
    assert "karpenter_pods_state{" in unpacked and "karpenter_nodes_allocatable{" in unpacked
    karpy.scale("web", 0)
    until(lambda: not karpy.nodes(), 90, "the empty node removed")
    done = until(lambda: "karpenter_nodes_termination_time_seconds_count" in (t := str(ctrl.get("/metrics"))) and t,
                 30, "the termination observed")  # fmt: skip
    # nodes and pods exist only while they run; terminations, actions and counts only after
    assert missing(running + "\n" + done, wanted) == []
    # the summaries carry Karpenter's quantiles, the counters their exact names
    assert 'karpenter_pods_startup_time_seconds{quantile="0.5"}' in running
    assert 'karpenter_nodes_termination_time_seconds{provisioner="default",quantile="0.99"}' in done
    assert "karpenter_nodes_created{" in done and "karpenter_nodes_created_total" not in done
    # Karpenter's batcher histograms (no dashboard queries them): the launch's CreateFleet batch
    assert "# TYPE karpenter_cloudprovider_batcher_batch_size histogram" in done
    assert 'karpenter_cloudprovider_batcher_batch_size_count{batcher="create_fleet"}' in done
    assert 'karpenter_cloudprovider_batcher_batch_time_seconds_count{batcher="create_fleet"}' in done
