"""The PromQL reader the dashboard test relies on."""

from __future__ import annotations

from tests.support.promql import missing, needs, series


def test_selectors_bare_names_label_values_and_by_clauses() -> None:
    q = (
        'sum by (provisioner)(karpenter_nodes_allocatable{provisioner!="N/A",resource_type="cpu"}) '
        "+ karpenter_nodes_allocatable*0 + sum by(action, cluster) (karpenter_deprovisioning_actions_performed)"
    )
    assert needs(q) == {
        "karpenter_nodes_allocatable": {"provisioner", "resource_type", "action"},
        "karpenter_deprovisioning_actions_performed": {"provisioner", "action"},
    }
    assert needs("label_values(karpenter_nodes_allocatable, zone)") == {"karpenter_nodes_allocatable": {"zone"}}
    assert needs(
        'histogram_quantile(0.5, rate(controller_runtime_reconcile_time_seconds_bucket{controller="$c"}[10m]))'
    ) == {"controller_runtime_reconcile_time_seconds": {"controller"}}
    assert needs('sum by ($f)(karpenter_pods_state{arch=~"$arch"})', {"f": "node,zone"}) == {
        "karpenter_pods_state": {"arch", "node", "zone"}
    }
    assert needs("sum by (node)(node_time_seconds)") == {}  # node-exporter's, not Karpenter's


EXPOSITION = """# HELP karpenter_nodes_created Nodes created.
# TYPE karpenter_nodes_created counter
karpenter_nodes_created{provisioner="default",reason="provisioning"} 2.0
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="provisioning",result="success"} 7.0
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="provisioning",le="+Inf"} 7.0
controller_runtime_reconcile_time_seconds_count{controller="provisioning"} 7.0
karpenter_pods_state{name="a\\\"b,c=\\"d",owner="x"} 1.0
process_open_fds 12.0
"""


def test_series_by_the_names_prometheus_stores() -> None:
    got = series(EXPOSITION)
    assert got["karpenter_nodes_created"] == [{"provisioner", "reason"}]  # not renamed to _total
    assert got["controller_runtime_reconcile_total"] == [{"controller", "result"}]
    assert got["karpenter_pods_state"] == [{"name", "owner"}]  # escaped quotes inside a value
    assert got["process_open_fds"] == [set()]


def test_missing_names_what_no_series_carries() -> None:
    wanted = {
        "karpenter_nodes_created": {"provisioner"},
        "controller_runtime_reconcile_total": {"controller"},
        "controller_runtime_reconcile_time_seconds": {"controller"},  # found by its _bucket / _count
        "karpenter_nodes_terminated": set(),
        "karpenter_pods_state": {"zone"},
    }
    assert [m.split("[")[0] for m in missing(EXPOSITION, wanted)] == [
        "karpenter_nodes_terminated",
        "karpenter_pods_state",
    ]
