"""The simulated catalog and its JSON format (`controller/cloudprovider/simulated/catalog.py`)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from controller.cloudprovider.simulated.catalog import (
    ZONES,
    CatalogError,
    catalog_from_json,
    catalog_to_json,
    simulated_catalog,
)
from controller.core import labels as L
from controller.core.resources import format_resources


def by_name() -> dict[str, Any]:
    return {it.name: it for it in simulated_catalog()}


def test_shape_of_the_catalog() -> None:
    types = simulated_catalog()
    assert len(types) >= 400
    labels = [it.labels for it in types]
    assert {lb[L.INSTANCE_CATEGORY] for lb in labels} == {"c", "m", "r", "t", "g", "p", "inf", "trn"}
    assert {int(lb[L.INSTANCE_GENERATION]) for lb in labels} == {1, 2, 3, 4, 5, 6, 7}
    assert Counter(lb[L.ARCH] for lb in labels)["arm64"] > 50
    assert all(lb[L.ARCH] == "arm64" for lb in labels if lb[L.INSTANCE_FAMILY] in ("c6g", "m7g", "t4g", "g5g"))
    sizes = {lb[L.INSTANCE_SIZE] for lb in labels}
    assert {"large", "xlarge", "24xlarge", "48xlarge", "metal"} <= sizes
    assert "medium" not in sizes
    assert {o.zone for it in types for o in it.offerings} == set(ZONES)
    assert [it.name for it in types] == sorted(it.name for it in types)


def test_m5_xlarge() -> None:
    m5 = by_name()["m5.xlarge"]
    assert format_resources(m5.capacity) == {"cpu": "4", "ephemeral-storage": "20Gi", "memory": "15155Mi", "pods": "58"}
    assert format_resources(m5.allocatable)["memory"] == "14162Mi"
    assert m5.labels[L.INSTANCE_HYPERVISOR] == "nitro"
    assert m5.labels[L.INSTANCE_MEMORY] == "16384"
    on_demand = {o.price for o in m5.offerings if o.capacity_type == "on-demand"}
    assert on_demand == {0.192}


def test_ebs_attachment_limits_as_aws_documents_them() -> None:
    """Nitro: 28 shared with the primary ENI, the root volume and NVMe instance store; Xen: 39."""
    types = by_name()
    assert types["m5.large"].volume_limits == {"ebs.csi.aws.com": 26}
    assert types["m5d.large"].volume_limits == {"ebs.csi.aws.com": 25}
    assert types["m4.large"].volume_limits == {"ebs.csi.aws.com": 39}


def test_gpu_types() -> None:
    p3 = by_name()["p3.8xlarge"]
    assert p3.capacity["nvidia.com/gpu"] == 4
    assert p3.labels[L.INSTANCE_GPU_NAME] == "v100"
    assert p3.labels[L.INSTANCE_GPU_MANUFACTURER] == "nvidia"
    assert by_name()["g4ad.16xlarge"].capacity["amd.com/gpu"] == 4
    assert by_name()["m5.large"].requirements[L.INSTANCE_GPU_COUNT].operator == "DoesNotExist"
    assert {o.zone for o in by_name()["p4d.24xlarge"].offerings} == {"us-west-2a", "us-west-2b"}


def test_spot_is_cheaper_and_varies_by_zone() -> None:
    for it in simulated_catalog():
        on_demand = next(o.price for o in it.offerings if o.capacity_type == "on-demand")
        assert all(o.price < on_demand for o in it.offerings if o.capacity_type == "spot")
    spot = {o.zone: o.price for o in by_name()["m5.large"].offerings if o.capacity_type == "spot"}
    assert len(set(spot.values())) == 3


def test_json_round_trip() -> None:
    doc = json.loads(json.dumps(catalog_to_json(simulated_catalog())))
    entry = next(e for e in doc["instanceTypes"] if e["name"] == "m5.large")
    assert entry["allocatable"] == {"cpu": "1930m", "ephemeral-storage": "17Gi", "memory": "6903Mi", "pods": "29"}
    assert entry["offerings"][0].keys() == {"zone", "capacityType", "price", "available"}
    loaded = {it.name: it for it in catalog_from_json(doc)}
    assert len(loaded) == len(simulated_catalog())
    m5 = loaded["m5.large"]
    assert m5.allocatable == by_name()["m5.large"].allocatable
    assert entry["volumeLimits"] == {"ebs.csi.aws.com": 26} and m5.volume_limits == {"ebs.csi.aws.com": 26}
    assert m5.requirements[L.ZONE].values == set(ZONES)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "instanceTypes"),
        ({"instanceTypes": [{}]}, r"instanceTypes\[0\]\.name"),
        ({"instanceTypes": [{"name": "x", "capacity": {"cpu": "many"}, "offerings": []}]}, r"\(x\)\.capacity"),
        ({"instanceTypes": [{"name": "x", "offerings": [{"zone": "z", "capacityType": "reserved", "price": 1}]}]},
         r"offerings\[0\]\.capacityType"),
        ({"instanceTypes": [{"name": "x", "offerings": [{"zone": "z", "capacityType": "spot", "price": -1}]}]},
         r"offerings\[0\]\.price"),
        ({"instanceTypes": [{"name": "x", "offerings": [], "volumeLimits": {"ebs.csi.aws.com": "many"}}]},
         r"\(x\)\.volumeLimits"),
    ],
)  # fmt: skip
def test_bad_catalogs_name_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        catalog_from_json(doc)


def test_neuron_types_as_the_aws_provider_reads_them() -> None:
    inf1 = by_name()["inf1.6xlarge"]
    assert inf1.capacity["aws.amazon.com/neuron"] == 4 and "nvidia.com/gpu" not in inf1.capacity
    assert inf1.labels[L.INSTANCE_ACCELERATOR_NAME] == "inferentia"
    assert inf1.labels[L.INSTANCE_ACCELERATOR_MANUFACTURER] == "aws"
    assert inf1.labels[L.INSTANCE_ACCELERATOR_COUNT] == "4"
    assert inf1.requirements[L.INSTANCE_GPU_COUNT].operator == "DoesNotExist"  # Neuron is no GPU
    assert by_name()["trn1.32xlarge"].capacity["aws.amazon.com/neuron"] == 16
    assert by_name()["inf2.48xlarge"].capacity["aws.amazon.com/neuron"] == 12
