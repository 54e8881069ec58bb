"""Karpenter's generated price table as a price source: read as data, commercial regions, dated."""

from __future__ import annotations

import datetime
import logging
from pathlib import Path

import pytest

from controller.cloudprovider.aws.ec2instancesinfo import SourceError
from controller.cloudprovider.aws.karpentertable import TABLE, generated_at, parse, read

EXCERPT = Path(__file__).resolve().parents[3] / "data" / "karpenter-pricing-excerpt.go.txt"


def test_the_aws_map_of_the_excerpt_gives_commercial_prices_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        prices = parse(EXCERPT.read_text())
    assert prices == {
        "eu-west-1": {"m5.large": 0.107},  # the commented-out pair is no price
        "us-east-1": {
            "a1.2xlarge": 0.204,
            "a1.large": 0.051,
            "c8a.metal-24xl": 5.0,
            "m5.large": 0.096,
            "m5.xlarge": 0.192,
            "u7i-12tb.224xlarge": 125.58182,
        },
    }  # no GovCloud, nothing of the maps before and after
    assert sorted(r.getMessage() for r in caplog.records) == [
        "karpenter price table: skipped 1 prices outside a region's block",  # m6.large in the outer map
        "karpenter price table: skipped 2 prices that are not a positive number",  # NaN, 0
    ]


def test_the_table_is_dated_by_its_generated_at_line() -> None:
    assert generated_at(EXCERPT.read_text()) == datetime.date(2026, 7, 6)
    assert generated_at("// generated at 2026-07-06T23:59:59-05:00 for us-east-1") == datetime.date(2026, 7, 7)
    assert generated_at("// generated at yesterday for us-east-1") is None
    assert generated_at("package pricing") is None


def test_a_file_without_the_map_or_unreadable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no InitialOnDemandPricesAWS map"):
        parse("package pricing\n")
    with pytest.raises(SourceError, match="cannot read"):
        read(tmp_path / "missing.go")


def test_a_module_directory_is_read_through_its_table(tmp_path: Path) -> None:
    (tmp_path / TABLE).parent.mkdir(parents=True)
    (tmp_path / TABLE).write_text(EXCERPT.read_text())
    prices, date = read(tmp_path)
    assert prices["us-east-1"]["m5.large"] == 0.096 and date == datetime.date(2026, 7, 6)
