"""REST paths: a name is one escaped path segment (issue 20, defect 8)."""

from __future__ import annotations

from controller.kube.resources import LEASES, NODES, PODS


def test_names_are_single_path_segments() -> None:
    assert PODS.item("web-1", "default") == "/api/v1/namespaces/default/pods/web-1"
    assert NODES.item("ip-10-0-0-1.ec2.internal") == "/api/v1/nodes/ip-10-0-0-1.ec2.internal"
    assert PODS.item("../../secrets/x", "karpy") == "/api/v1/namespaces/karpy/pods/..%2F..%2Fsecrets%2Fx"
    assert LEASES.item("a?b#c", "../x") == "/apis/coordination.k8s.io/v1/namespaces/..%2Fx/leases/a%3Fb%23c"
