"""Integer resource lists (`controller/core/resources.py`)."""

from __future__ import annotations

import pytest

from controller.core.quantity import QuantityError
from controller.core.resources import (
    add,
    describe,
    exceeded,
    fits,
    format_resource,
    format_resources,
    parse_resources,
    subtract,
)


def test_parse_uses_millicores_for_cpu_and_whole_numbers_otherwise() -> None:
    assert parse_resources({"cpu": "1.5", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": "110"}) == {
        "cpu": 1500,
        "memory": 2**30,
        "nvidia.com/gpu": 2,
        "pods": 110,
    }
    assert parse_resources({"cpu": "100m", "memory": "100m"}) == {"cpu": 100, "memory": 1}
    assert parse_resources(None) == {}


def test_parse_rejects_garbage() -> None:
    with pytest.raises(QuantityError):
        parse_resources({"cpu": "lots"})


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [("cpu", 1930, "1930m"), ("cpu", 2000, "2"), ("memory", 7577 * 2**20, "7577Mi"), ("pods", 29, "29"),
     ("ephemeral-storage", 20 * 2**30, "20Gi"), ("memory", -(2**20), "-1Mi")],
)  # fmt: skip
def test_format(name: str, value: int, text: str) -> None:
    assert format_resource(name, value) == text


def test_arithmetic_and_fit() -> None:
    a = {"cpu": 500, "memory": 100}
    b = {"cpu": 250, "pods": 1}
    assert add(a, b) == {"cpu": 750, "memory": 100, "pods": 1}
    assert subtract(a, b) == {"cpu": 250, "memory": 100, "pods": -1}
    assert fits(a, {"cpu": 500, "memory": 100})
    assert not fits(a, {"cpu": 499, "memory": 100})
    assert exceeded({"cpu": 600, "nvidia.com/gpu": 1}, {"cpu": 500}) == ["cpu", "nvidia.com/gpu"]
    assert format_resources({"memory": 2**30, "cpu": 1000}) == {"cpu": "1", "memory": "1Gi"}
    assert describe({"cpu": 250}) == "cpu=250m"
