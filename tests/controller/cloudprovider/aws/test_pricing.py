"""Prices: the committed price file (every commercial region, dated per region), Price List documents."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from controller.cloudprovider.aws.ec2instancesinfo import commercial, partition_of
from controller.cloudprovider.aws.pricing import PriceFileError, Prices, parse_product, read_price_file
from tests.fakes.aws import product

# Commercial regions opened after the source's date (ec2instances-info of 2025-05-28): the Price
# List API prices them; the committed file cannot until a newer copy of the data names them.
OPENED_LATER = {"ap-east-2": "2025-06", "ap-southeast-6": "2025-09"}
COMMON = ("t3.medium", "t3.large", "m6g.large", "c6g.large", "r6g.large")


def test_the_committed_price_file_prices_every_commercial_region_with_its_date() -> None:
    doc = read_price_file()
    on_demand = doc["onDemand"]
    assert all(commercial(r) for r in on_demand), "only commercial regions: no GovCloud, China or Local Zone"
    from botocore.loaders import Loader

    (aws,) = [p for p in Loader().load_data("endpoints")["partitions"] if p["partition"] == "aws"]
    missing = set(aws["regions"]) - set(on_demand) - set(OPENED_LATER)
    assert not missing, f"regenerate the price file (make prices) or say when these opened: {missing}"
    assert len(on_demand) >= 32
    for region, table in on_demand.items():
        prices = Prices(region, doc)
        assert datetime.date.fromisoformat(prices.date) and prices.source, region
        assert all(prices.on_demand(t) for t in COMMON), (region, [t for t in COMMON if not prices.on_demand(t)])
        general = [prices.on_demand(t) for t in ("m5.large", "m6i.large", "m7i.large") if t in table]
        assert general and all(0.08 < p < 0.2 for p in general if p is not None), region  # 2 vCPU, 8 GiB
        assert len(table) >= 150, region
    assert partition_of("us-gov-west-1") not in {partition_of(r) for r in on_demand}
    from importlib import resources

    size = len(resources.files("controller.cloudprovider.aws").joinpath("data/prices.json").read_bytes())
    assert size < 1_000_000, f"the committed price file grew to {size} bytes"


def test_us_east_1_comes_from_karpenters_newer_table_and_the_other_regions_from_ec2instances_info() -> None:
    doc = read_price_file()
    prices = Prices("us-east-1", doc)
    assert prices.date == "2026-07-06" and "karpenter-provider-aws@v1.14.1" in prices.source
    assert not prices.supplemented and len(doc["onDemand"]["us-east-1"]) > 1300
    assert prices.on_demand("m5.large") == 0.096 and prices.on_demand("c6g.large") == 0.068
    assert prices.on_demand("p4d.24xlarge") == 21.957642  # after the 2025 P4 price cut the older source predates
    assert prices.spot("m5.large", "us-east-1a") == 0.096  # no spot price yet: spot = on-demand
    eu = Prices("eu-west-1", doc)
    assert eu.date == "2025-05-28" and "ec2-instances-info@v0.0.0-20250528091325" in eu.source
    assert eu.on_demand("m5.large") == 0.107 and not eu.supplemented
    assert Prices("eu-west-9", doc).on_demand("m5.large") is None


def test_a_supplement_dates_the_types_an_older_source_added() -> None:
    doc = {
        "regions": {"r": {"date": "2026-07-06", "source": "new", "supplement": {
            "date": "2025-05-28", "source": "old", "types": ["x1.large"]}}},
        "onDemand": {"r": {"m5.large": 0.1, "x1.large": 0.2}},
    }  # fmt: skip
    prices = Prices("r", doc)
    assert (prices.date, prices.supplement_date) == ("2026-07-06", "2025-05-28")
    assert prices.supplemented == frozenset({"x1.large"})
    assert "2 types in r from the price file, dated 2026-07-06; 1 types from 2025-05-28: new" in prices.describe()


def test_a_file_of_the_first_format_dates_every_region_by_its_top_level_date() -> None:
    doc = {"date": "2026-01-19", "source": "s", "onDemand": {"us-east-1": {"m5.large": 0.096}}}
    prices = Prices("us-east-1", doc)
    assert (prices.date, prices.source, prices.on_demand("m5.large")) == ("2026-01-19", "s", 0.096)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected an object"),
        ('{"onDemand": {"r": []}}', "onDemand.r: expected a mapping"),
        ('{"onDemand": {"r": {"m5.large": -1}}}', "onDemand.r.m5.large: not a price"),
        ("{", "cannot read"),
        ('{"date": "yesterday", "onDemand": {}}', "date: not a YYYY-MM-DD date"),
        ('{"regions": [], "onDemand": {}}', "regions: expected a mapping"),
        ('{"regions": {"r": "today"}, "onDemand": {}}', "regions.r: expected"),
        ('{"regions": {"r": {"source": "s"}}, "onDemand": {}}', "regions.r.date: not a YYYY-MM-DD date: None"),
        ('{"regions": {"r": {"date": "2025-05-28"}}, "onDemand": {}}', "regions.r.source: expected a text"),
        (
            '{"regions": {"r": {"date": "2026-01-19", "source": "s", "supplement": {"date": "2025-05-28", '
            '"source": "t", "types": "m5.large"}}}, "onDemand": {}}',
            "regions.r.supplement.types: expected a list",
        ),
        (
            '{"regions": {"r": {"date": "2026-01-19", "source": "s", "supplement": {"source": "t", "types": []}}}, '
            '"onDemand": {}}',
            "regions.r.supplement.date: not a YYYY-MM-DD date",
        ),
    ],
)
def test_bad_price_files_are_refused_naming_the_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(PriceFileError, match=message):
        read_price_file(path)


def test_parse_product_takes_the_on_demand_hourly_price() -> None:
    assert parse_product(product("m5.large", "0.0960000000")) == ("m5.large", 0.096)
