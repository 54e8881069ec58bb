"""Taints and tolerations (`controller/core/taints.py`)."""

from __future__ import annotations

import pytest

from controller.core.taints import (
    Taint,
    Toleration,
    first_untolerated,
    is_ephemeral,
    taint_from_wire,
    taint_to_wire,
    tolerates,
    toleration_from_wire,
)

GPU = Taint("nvidia.com/gpu", "true", "NoSchedule")

TOLERATION_MATRIX = [
    ("exact match", Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule"), True),
    ("any effect", Toleration("nvidia.com/gpu", "Equal", "true", ""), True),
    ("exists on key", Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), True),
    ("exists everything", Toleration("", "Exists", "", ""), True),
    ("wrong value", Toleration("nvidia.com/gpu", "Equal", "false", "NoSchedule"), False),
    ("wrong effect", Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), False),
    ("wrong key", Toleration("amd.com/gpu", "Exists"), False),
    ("empty key with Equal", Toleration("", "Equal", "true", "NoSchedule"), False),
]


@pytest.mark.parametrize(("case", "toleration", "expected"), TOLERATION_MATRIX, ids=[c[0] for c in TOLERATION_MATRIX])
def test_toleration_matrix(case: str, toleration: Toleration, expected: bool) -> None:
    assert tolerates(toleration, GPU) is expected


def test_first_untolerated_names_the_taint() -> None:
    other = Taint("dedicated", "infra", "NoExecute")
    assert first_untolerated([Toleration("nvidia.com/gpu", "Exists")], [GPU, other]) == other
    assert first_untolerated([Toleration(operator="Exists")], [GPU, other]) is None
    assert str(GPU) == "nvidia.com/gpu=true:NoSchedule"
    assert str(Taint("k", "", "NoSchedule")) == "k:NoSchedule"


def test_wire_round_trip_and_ephemeral_taints() -> None:
    assert taint_from_wire(taint_to_wire(GPU)) == GPU
    assert taint_to_wire(Taint("k", "", "NoSchedule")) == {"key": "k", "effect": "NoSchedule"}
    assert toleration_from_wire({"key": "k", "operator": "Exists"}) == Toleration("k", "Exists")
    assert is_ephemeral(Taint("node.kubernetes.io/not-ready", "", "NoSchedule"))
    assert not is_ephemeral(GPU)
