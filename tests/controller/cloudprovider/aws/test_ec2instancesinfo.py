"""ec2instances.info's instances.json as a price source: commercial regions, robust parsing, dates."""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path

import pytest

from controller.cloudprovider.aws.ec2instancesinfo import (
    SourceError,
    commercial,
    module_date,
    module_version,
    parse,
    partition_of,
    read,
)

EXCERPT = Path(__file__).resolve().parents[3] / "data" / "ec2instances-info-excerpt.json"


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("us-east-1", "aws"),
        ("eu-central-1", "aws"),
        ("ap-southeast-7", "aws"),
        ("mx-central-1", "aws"),
        ("il-central-1", "aws"),
        ("us-gov-west-1", "aws-us-gov"),
        ("cn-north-1", "aws-cn"),
        ("us-iso-east-1", "aws-iso"),
        ("us-isob-east-1", "aws-iso-b"),
        ("eusc-de-east-1", "aws-eusc"),
        ("us-east-1-atl-1", ""),  # a Local Zone, not a region
        ("us-east-1-wl1", ""),  # a Wavelength Zone
        ("global", ""),
    ],
)
def test_regions_are_told_apart_by_the_sdks_partitions(region: str, partition: str) -> None:
    assert partition_of(region) == partition
    assert commercial(region) == (partition == "aws")


def test_the_excerpt_gives_linux_on_demand_prices_of_commercial_regions_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        prices = read(EXCERPT)
    assert prices == {
        "eu-west-1": {"m5.large": 0.107},
        "sa-east-1": {"c5.large": 0.131, "m5.large": 0.153},
        "us-east-1": {"c5.large": 0.085, "inf1.2xlarge": 0.362, "m5.large": 0.096},
    }
    assert sorted(r.getMessage() for r in caplog.records) == [
        "instances.json: skipped 1 region entries that are not an object",  # x9.badregion in eu-west-1
        "instances.json: skipped 2 types without a pricing object",  # x9.nopricing, x9.badpricing
        # "N/A", "0", true, and x9.badregion's bare string where {"ondemand": …} belongs
        "instances.json: skipped 4 Linux on-demand prices that are not a positive number",
        "instances.json: skipped 4 entries without an instance_type",  # "", none, a string, null
    ]
    # inf1.2xlarge in af-south-1 has Ubuntu prices only: no Linux figure, and nothing to warn about


def test_a_source_that_is_not_a_list_or_not_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="expected a list of instance types, not dict"):
        parse({"m5.large": {}})
    bad = tmp_path / "instances.json"
    bad.write_text("[{")
    with pytest.raises(SourceError, match=r"instances\.json: cannot read"):
        read(bad)
    with pytest.raises(SourceError, match="cannot read"):
        read(tmp_path / "missing.json")


def test_a_module_directory_is_read_through_its_data_file(tmp_path: Path) -> None:
    module = tmp_path / "github.com" / "cristim" / "ec2-instances-info@v0.0.0-20250528091325-32acf84f42eb"
    (module / "data").mkdir(parents=True)
    (module / "data" / "instances.json").write_text(json.dumps(json.loads(EXCERPT.read_text())[:1]))
    assert read(module)["eu-west-1"] == {"m5.large": 0.107}
    assert module_version(module) == "v0.0.0-20250528091325-32acf84f42eb"
    assert module_version(module / "data" / "instances.json") == "v0.0.0-20250528091325-32acf84f42eb"
    assert module_version(tmp_path) == ""


@pytest.mark.parametrize(
    ("version", "date"),
    [
        ("v0.0.0-20250528091325-32acf84f42eb", datetime.date(2025, 5, 28)),
        ("v1.2.4-0.20240101000000-abcdefabcdef", datetime.date(2024, 1, 1)),  # after a release
        ("v1.2.3", None),  # a release names no date
        ("v0.0.0-20251399000000-32acf84f42eb", None),  # no such day
        ("", None),
    ],
)
def test_a_pseudo_version_dates_its_commit(version: str, date: datetime.date | None) -> None:
    assert module_date(version) == date
