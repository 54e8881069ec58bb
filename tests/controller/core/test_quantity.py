"""Kubernetes quantities and Go durations."""

from __future__ import annotations

from decimal import Decimal

import pytest

from controller.core.quantity import (
    QuantityError,
    format_bytes,
    format_milli,
    int_value,
    milli_value,
    parse_duration,
    parse_quantity,
)

QUANTITIES = {
    "100m": Decimal("0.1"),
    "1Gi": Decimal(2**30),
    "1e3": Decimal(1000),
    "0.5": Decimal("0.5"),
    "1000": Decimal(1000),
    "1.5Ki": Decimal(1536),
    "2k": Decimal(2000),
    "3M": Decimal(3_000_000),
    "5E-2": Decimal("0.05"),
    ".5": Decimal("0.5"),
    "+1": Decimal(1),
    "-100m": Decimal("-0.1"),
    "10n": Decimal("1e-8"),
    "1Ei": Decimal(2**60),
}


@pytest.mark.parametrize(("text", "value"), QUANTITIES.items(), ids=QUANTITIES.keys())
def test_parse_quantity(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Gib", "1 Gi", "Gi", "1e", "1e1.5", "--1", "1i", "5%"])
def test_bad_quantities_are_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_numbers_and_non_numbers() -> None:
    assert parse_quantity(2) == 2 and parse_quantity(0.25) == Decimal("0.25")
    bad: object
    for bad in (True, None, [], float("nan")):
        with pytest.raises(QuantityError):
            parse_quantity(bad)  # type: ignore[arg-type]


def test_integer_views_round_up() -> None:
    assert milli_value("100m") == 100 and milli_value("1.5") == 1500 and milli_value("0.1m") == 1
    assert int_value("1Gi") == 2**30 and int_value("100m") == 1 and int_value("1") == 1


def test_formatting() -> None:
    assert format_milli(1930) == "1930m" and format_milli(2000) == "2"
    assert format_bytes(574 * 2**20) == "574Mi" and format_bytes(7 * 2**30) == "7Gi" and format_bytes(1001) == "1001"


DURATIONS = {"1.m": 60, "1m30s": 90, "3m": 180, "1.5h": 5400, "300ms": Decimal("0.3"), "0": 0, "2h45m": 9900, "-1s": -1}


@pytest.mark.parametrize(("text", "seconds"), DURATIONS.items(), ids=DURATIONS.keys())
def test_parse_duration(text: str, seconds: Decimal) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "m", "1x", "1m 30s", ".m", "three minutes"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_duration(text)
