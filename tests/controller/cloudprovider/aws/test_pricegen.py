"""The price file's generator: from the Price List API, and from ec2instances.info's instances.json."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from controller.cloudprovider.aws.api import ApiError, AWSError
from controller.cloudprovider.aws.karpentertable import TABLE
from controller.cloudprovider.aws.pricegen import (
    SOURCE,
    generate,
    generate_from_ec2instancesinfo,
    generate_from_karpenter,
    main,
    merge,
)
from controller.cloudprovider.aws.pricing import PriceFileError, Prices, read_price_file
from tests.fakes.aws import FakeTransport, product

EXCERPT = Path(__file__).resolve().parents[3] / "data" / "ec2instances-info-excerpt.json"
KARPENTER_EXCERPT = Path(__file__).resolve().parents[3] / "data" / "karpenter-pricing-excerpt.go.txt"
VERSION = "v0.0.0-20250528091325-32acf84f42eb"


def module_copy(tmp_path: Path) -> Path:
    """The excerpt where `go mod download` puts the module (the path names its version)."""
    module = tmp_path / "mod" / "github.com" / "cristim" / f"ec2-instances-info@{VERSION}"
    (module / "data").mkdir(parents=True, exist_ok=True)
    (module / "data" / "instances.json").write_text(EXCERPT.read_text())
    return module


def test_generator_writes_the_file_and_keeps_other_regions(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    out.write_text(json.dumps({"date": "2020-01-01", "onDemand": {"eu-west-1": {"m5.large": 0.107}}}))
    transport = FakeTransport()
    transport.products = [product("m5.large", "0.096"), "garbage", product("t3.micro", "0.0104")]
    doc = generate(transport, ["us-east-1"], out, today=datetime.date(2026, 1, 19))
    assert json.loads(out.read_text()) == doc == read_price_file(out)
    assert doc["onDemand"] == {"eu-west-1": {"m5.large": 0.107}, "us-east-1": {"m5.large": 0.096, "t3.micro": 0.0104}}
    # each region keeps its own date: the old file's for eu-west-1, today's for us-east-1
    assert doc["regions"] == {
        "eu-west-1": {"date": "2020-01-01", "source": ""},
        "us-east-1": {"date": "2026-01-19", "source": SOURCE},
    }
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


def test_every_commercial_region_from_ec2instances_info_dated_by_the_module_version(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    doc = generate_from_ec2instancesinfo(module_copy(tmp_path), [], out)
    assert doc == read_price_file(out)
    assert doc["onDemand"] == {
        "eu-west-1": {"m5.large": 0.107},
        "sa-east-1": {"c5.large": 0.131, "m5.large": 0.153},
        "us-east-1": {"c5.large": 0.085, "inf1.2xlarge": 0.362, "m5.large": 0.096},
    }
    for region in doc["onDemand"]:
        prov = doc["regions"][region]
        assert prov["date"] == "2025-05-28"
        assert f"github.com/cristim/ec2-instances-info@{VERSION}" in prov["source"]
    assert generate_from_ec2instancesinfo(module_copy(tmp_path), [], out) == doc  # the same again


def test_newer_figures_win_and_the_older_source_only_adds_what_they_lack(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    newer = {"date": "2026-01-19", "source": "newer table", "onDemand": {"us-east-1": {"m5.large": 0.0961}}}
    out.write_text(json.dumps(newer))
    doc = generate_from_ec2instancesinfo(module_copy(tmp_path), ["us-east-1", "sa-east-1"], out)
    assert doc["onDemand"]["us-east-1"] == {"c5.large": 0.085, "inf1.2xlarge": 0.362, "m5.large": 0.0961}
    us = doc["regions"]["us-east-1"]
    assert (us["date"], us["source"]) == ("2026-01-19", "newer table")
    assert us["supplement"]["date"] == "2025-05-28" and us["supplement"]["types"] == ["c5.large", "inf1.2xlarge"]
    assert "eu-west-1" not in doc["onDemand"]  # not asked
    prices = Prices("us-east-1", doc)
    assert prices.date == "2026-01-19" and prices.supplemented == {"c5.large", "inf1.2xlarge"}
    # an older source again: the supplement is recomputed, the newer figures stay
    again = generate_from_ec2instancesinfo(module_copy(tmp_path), ["us-east-1"], out)
    assert again["onDemand"]["us-east-1"] == doc["onDemand"]["us-east-1"] and again["regions"] == doc["regions"]
    # the Price List API today replaces the region wholly, and drops the supplement
    transport = FakeTransport()
    transport.products = [product("m5.large", "0.096")]
    fresh = generate(transport, ["us-east-1"], out, today=datetime.date(2026, 11, 26))
    assert fresh["onDemand"]["us-east-1"] == {"m5.large": 0.096}
    assert fresh["regions"]["us-east-1"] == {"date": "2026-11-26", "source": SOURCE}


def test_merge_replaces_a_region_held_with_older_figures() -> None:
    doc = {"regions": {"r": {"date": "2024-01-01", "source": "old"}}, "onDemand": {"r": {"a": 1.0, "b": 2.0}}}
    out = merge(doc, {"r": {"a": 1.5}}, datetime.date(2025, 5, 28), "new")
    assert out["onDemand"] == {"r": {"a": 1.5}} and out["regions"] == {"r": {"date": "2025-05-28", "source": "new"}}


def test_an_undated_region_of_a_hand_made_file_stays_undated(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    out.write_text('{"onDemand": {"eu-west-1": {"m5.large": 0.107}}}')
    doc = generate_from_ec2instancesinfo(module_copy(tmp_path), ["us-east-1"], out)
    assert set(doc["regions"]) == {"us-east-1"} and doc["onDemand"]["eu-west-1"] == {"m5.large": 0.107}
    assert Prices("eu-west-1", read_price_file(out)).date == ""


def test_bad_requests_change_nothing(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    out.write_text('{"onDemand": {}}')
    module = module_copy(tmp_path)
    with pytest.raises(PriceFileError, match="us-gov-west-1: not a commercial AWS region"):
        generate_from_ec2instancesinfo(module, ["us-gov-west-1"], out)
    with pytest.raises(PriceFileError, match="no usable Linux on-demand price for ap-southeast-2"):
        generate_from_ec2instancesinfo(module, ["ap-southeast-2"], out)  # only a "0" there
    bare = tmp_path / "instances.json"
    bare.write_text(EXCERPT.read_text())
    with pytest.raises(PriceFileError, match="give --date"):
        generate_from_ec2instancesinfo(bare, [], out)
    (module / "data" / "instances.json").write_text('{"not": "a list"}')
    with pytest.raises(PriceFileError, match="expected a list of instance types"):
        generate_from_ec2instancesinfo(module, [], out)
    assert out.read_text() == '{"onDemand": {}}'
    assert generate_from_ec2instancesinfo(bare, [], out, datetime.date(2025, 6, 1))["regions"]["us-east-1"] == {
        "date": "2025-06-01",
        "source": "ec2instances.info instances.json (the data behind instances.vantage.sh, derived from the AWS "
        "Price List: Linux on-demand, USD per hour) as shipped in a copy of github.com/cristim/ec2-instances-info",
    }


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "prices.json"
    assert main(["--from-ec2instances-info", str(module_copy(tmp_path)), "--output", str(out)]) == 0
    assert "eu-west-1: 1 types, sa-east-1: 2 types, us-east-1: 3 types" in capsys.readouterr().out
    assert (
        main(["--from-ec2instances-info", str(tmp_path / "none.json"), "--output", str(out), "--date", "2025-01-01"])
        == 1
    )
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--output", str(out)])  # the Price List API needs regions


def karpenter_copy(tmp_path: Path) -> Path:
    module = tmp_path / "mod" / "github.com" / "aws" / "karpenter-provider-aws@v1.14.1"
    (module / TABLE).parent.mkdir(parents=True, exist_ok=True)
    (module / TABLE).write_text(KARPENTER_EXCERPT.read_text())
    return module


def test_karpenters_newer_table_replaces_older_figures_of_its_region(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    generate_from_ec2instancesinfo(module_copy(tmp_path), [], out)
    doc = generate_from_karpenter(karpenter_copy(tmp_path), ["us-east-1"], out)
    assert doc == read_price_file(out)
    assert doc["onDemand"]["us-east-1"]["m5.large"] == 0.096 and "inf1.2xlarge" not in doc["onDemand"]["us-east-1"]
    us = doc["regions"]["us-east-1"]
    assert us["date"] == "2026-07-06" and "supplement" not in us
    assert "zz_generated.pricing_aws.go of Go module github.com/aws/karpenter-provider-aws@v1.14.1" in us["source"]
    assert doc["regions"]["eu-west-1"]["date"] == "2025-05-28"  # not asked: kept
    # the older source again: the newer figures stay, it only adds the types they lack
    again = generate_from_ec2instancesinfo(module_copy(tmp_path), [], out)
    assert again["onDemand"]["us-east-1"]["inf1.2xlarge"] == 0.362
    assert again["regions"]["us-east-1"]["supplement"]["types"] == ["c5.large", "inf1.2xlarge"]
    assert again["regions"]["us-east-1"]["date"] == "2026-07-06"


def test_karpenters_table_without_a_date_needs_one(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    table = tmp_path / "table.go"
    table.write_text(KARPENTER_EXCERPT.read_text().replace("// generated at", "// made at"))
    with pytest.raises(PriceFileError, match="give --date"):
        generate_from_karpenter(table, [], out)
    assert not out.exists()
    doc = generate_from_karpenter(table, [], out, datetime.date(2026, 7, 1))
    assert doc["regions"]["us-east-1"]["date"] == "2026-07-01"
    assert "a copy of github.com/aws/karpenter-provider-aws" in doc["regions"]["us-east-1"]["source"]
    with pytest.raises(SystemExit):
        main(["--from-karpenter", str(table), "--from-ec2instances-info", str(table), "--output", str(out)])
