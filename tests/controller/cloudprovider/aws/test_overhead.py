"""AWS capacity and overhead formulas (`controller/cloudprovider/aws/overhead.py`, spec §4.5)."""

from __future__ import annotations

import pytest

from controller.cloudprovider.aws.overhead import (
    MachineShape,
    apply_kubelet,
    capacity,
    eni_limited_pods,
    kube_reserved_cpu,
    overhead,
    pod_capacity,
    shape_of,
)
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core.resources import format_resources
from controller.scheduling.types import KubeletSpec
from tests.builders.scheduling import make_instance_type

MIB = 2**20
GIB = 2**30
M5_XLARGE = MachineShape(vcpus=4, memory_mib=16384, eni_pods=eni_limited_pods(4, 15))
# The seed 004 default provisioner's kubeletConfiguration.
SEED_KUBELET = KubeletSpec(
    max_pods=20,
    pods_per_core=2,
    system_reserved={"cpu": 100, "memory": 100 * MIB, "ephemeral-storage": GIB},
    kube_reserved={"cpu": 200, "memory": 100 * MIB, "ephemeral-storage": 3 * GIB},
    eviction_hard={"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "10%"},
    eviction_soft={"memory.available": "500Mi", "nodefs.available": "15%", "nodefs.inodesFree": "15%"},
)


def allocatable(shape: MachineShape, kubelet: KubeletSpec | None = None) -> dict[str, str]:
    cap = capacity(shape, kubelet)
    over = overhead(shape, cap, kubelet)
    return format_resources({k: v - over.get(k, 0) for k, v in cap.items()})


def test_m5_xlarge_worked_example() -> None:
    cap = capacity(M5_XLARGE)
    assert format_resources(cap) == {"cpu": "4", "ephemeral-storage": "20Gi", "memory": "15155Mi", "pods": "58"}
    assert format_resources(overhead(M5_XLARGE, cap)) == {"cpu": "80m", "ephemeral-storage": "3Gi", "memory": "993Mi"}
    assert allocatable(M5_XLARGE) == {"cpu": "3920m", "ephemeral-storage": "17Gi", "memory": "14162Mi", "pods": "58"}


def test_the_simulated_m5_xlarge_is_the_worked_example() -> None:
    m5 = next(it for it in simulated_catalog() if it.name == "m5.xlarge")
    assert format_resources(m5.allocatable) == {
        "cpu": "3920m",
        "ephemeral-storage": "17Gi",
        "memory": "14162Mi",
        "pods": "58",
    }


@pytest.mark.parametrize(("vcpus", "milli"), [(1, 60), (2, 70), (4, 80), (8, 90), (96, 310)])
def test_kube_reserved_cpu_tiers(vcpus: int, milli: int) -> None:
    assert kube_reserved_cpu(vcpus) == milli


def test_eni_limited_pods() -> None:
    assert eni_limited_pods(3, 12) == 35  # t3.large
    assert eni_limited_pods(4, 15) == 58  # m5.xlarge


@pytest.mark.parametrize(
    ("kubelet", "pods"),
    [(None, 58), (KubeletSpec(max_pods=110), 110), (KubeletSpec(pods_per_core=2), 8),
     (KubeletSpec(max_pods=5, pods_per_core=4), 5), (KubeletSpec(max_pods=20, pods_per_core=10), 20)],
)  # fmt: skip
def test_pod_capacity_smaller_wins(kubelet: KubeletSpec | None, pods: int) -> None:
    assert pod_capacity(M5_XLARGE, kubelet) == pods


def test_seed_kubelet_configuration_on_m5_xlarge() -> None:
    # memory: 15155Mi capacity - 100Mi kube - 100Mi system - max(5% of 15155Mi, 500Mi) eviction
    memory = 15155 * MIB - 200 * MIB - -(-15155 * MIB * 5 // 100)
    assert allocatable(M5_XLARGE, SEED_KUBELET) == format_resources(
        {"cpu": 3700, "memory": memory, "ephemeral-storage": 13 * GIB, "pods": 8}
    )


def test_eviction_hundred_percent_means_disabled() -> None:
    kubelet = KubeletSpec(eviction_hard={"memory.available": "100%"})
    over = overhead(M5_XLARGE, capacity(M5_XLARGE, kubelet), kubelet)
    assert over["memory"] == 893 * MIB  # kube-reserved only


def test_apply_kubelet_rereads_the_labels() -> None:
    m5 = next(it for it in simulated_catalog() if it.name == "m5.xlarge")
    assert apply_kubelet(m5, None) is m5
    tuned = apply_kubelet(m5, SEED_KUBELET)
    assert tuned.capacity["pods"] == 8
    assert tuned.labels["karpenter.k8s.aws/instance-pods"] == "8"
    assert tuned.allocatable["cpu"] == 3700


def test_shape_of_falls_back_to_capacity_without_labels() -> None:
    it = make_instance_type("x.large", cpu=2, memory_gib=4, pods=11)
    assert shape_of(it).vcpus == 2 and shape_of(it).eni_pods == 11
