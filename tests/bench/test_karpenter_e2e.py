"""bench/karpenter_e2e.py's pure parts: Karpenter kwok's instance types as karpy's catalog."""

from __future__ import annotations

from bench.karpenter_e2e import Catalog, kwok_catalog, workloads
from controller.cloudprovider.simulated.catalog import catalog_from_json
from controller.core import labels as L

KWOK_TYPE = {
    "name": "m-4x-amd64-linux",
    "offerings": [
        {
            "Price": 0.2,
            "Available": True,
            "Requirements": [
                {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                {"key": L.ZONE, "operator": "In", "values": ["test-zone-b"]},
            ],
        },
        {
            "Price": 0.1,
            "Available": True,
            "Requirements": [
                {"key": L.CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
                {"key": L.ZONE, "operator": "In", "values": ["test-zone-b"]},
            ],
        },
    ],
    "architecture": "amd64",
    "operatingSystems": ["linux"],
    "resources": {"cpu": "4", "memory": "32Gi", "ephemeral-storage": "20Gi"},
}


def test_kwok_types_read_as_karpenter_kwok_builds_them() -> None:
    catalog = kwok_catalog([KWOK_TYPE])
    (it,) = catalog_from_json(catalog)
    assert it.capacity["pods"] == 110  # absent: Kubernetes' default, as the kwok provider sets it
    assert it.overhead == {"cpu": 100, "memory": 10 * 2**20}  # its kube-reserved
    assert it.labels[L.ARCH] == "amd64" and it.labels[L.OS] == "linux"
    assert {(o.zone, o.capacity_type, o.price) for o in it.offerings} == {
        ("test-zone-b", "on-demand", 0.2),
        ("test-zone-b", "spot", 0.1),
    }
    prices = Catalog.of(catalog).prices
    assert prices[("m-4x-amd64-linux", "test-zone-b", "spot")] == 0.1


def test_each_size_keeps_the_shapes_proportions() -> None:
    for pods in (1000, 5000, 20000):
        loads = workloads(pods)
        assert sum(w[1] for w in loads) == pods
        assert sum(1 for w in loads if w[4]) == 1  # one zonal-spread Deployment
