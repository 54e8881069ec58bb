"""Prices: the committed price file, Price List documents, and the generator script."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from controller.cloudprovider.aws.api import ApiError, AWSError
from controller.cloudprovider.aws.pricegen import generate
from controller.cloudprovider.aws.pricing import PriceFileError, Prices, parse_product, read_price_file
from tests.fakes.aws import FakeTransport, product


def test_the_committed_price_file_is_dated_and_covers_common_types() -> None:
    doc = read_price_file()
    assert datetime.date.fromisoformat(doc["date"])
    prices = Prices("us-east-1", doc)
    assert prices.on_demand("m5.large") == 0.096 and prices.on_demand("c6g.large") == 0.068
    assert prices.spot("m5.large", "us-east-1a") == 0.096  # no spot price yet: spot = on-demand
    assert Prices("eu-west-9", doc).on_demand("m5.large") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected an object"),
        ('{"onDemand": {"r": []}}', "onDemand.r: expected a mapping"),
        ('{"onDemand": {"r": {"m5.large": -1}}}', "onDemand.r.m5.large: not a price"),
        ("{", "cannot read"),
    ],
)
def test_bad_price_files_are_refused_naming_the_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(PriceFileError, match=message):
        read_price_file(path)


def test_parse_product_takes_the_on_demand_hourly_price() -> None:
    assert parse_product(product("m5.large", "0.0960000000")) == ("m5.large", 0.096)


def test_generator_writes_the_file_and_keeps_other_regions(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    out.write_text(json.dumps({"date": "2020-01-01", "onDemand": {"eu-west-1": {"m5.large": 0.107}}}))
    transport = FakeTransport()
    transport.products = [product("m5.large", "0.096"), "garbage", product("t3.micro", "0.0104")]
    doc = generate(transport, ["us-east-1"], out, today=datetime.date(2026, 1, 19))
    assert json.loads(out.read_text()) == doc
    assert doc["date"] == "2026-01-19"
    assert doc["onDemand"] == {"eu-west-1": {"m5.large": 0.107}, "us-east-1": {"m5.large": 0.096, "t3.micro": 0.0104}}
    (call,) = transport.named("get_products")
    fields = {f["Field"]: f["Value"] for f in call["Filters"]}
    assert fields == {
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "regionCode": "us-east-1",
    }


def test_generator_leaves_the_file_alone_when_the_api_fails(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    out.write_text('{"date": "2020-01-01", "onDemand": {}}')
    transport = FakeTransport()
    transport.errors["get_products"] = [ApiError("AccessDeniedException", "no pricing:GetProducts")]
    with pytest.raises(AWSError, match=r"pricing GetProducts .*AccessDeniedException"):
        generate(transport, ["us-east-1"], out)
    assert out.read_text() == '{"date": "2020-01-01", "onDemand": {}}'
    transport.products = ["garbage"]
    with pytest.raises(PriceFileError, match="no usable on-demand price"):
        generate(transport, ["us-east-1"], out)
