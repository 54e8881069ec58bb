"""The PromQL reader the dashboard test relies on."""

from __future__ import annotations

from tests.support.promql import needs


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
