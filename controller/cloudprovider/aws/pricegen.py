"""Generate the on-demand price file: from the AWS Price List API, ec2instances.info's data or Karpenter's table.

    python -m controller.cloudprovider.aws.pricegen --region us-east-1 [--region eu-west-1 …] \\
        [--output controller/cloudprovider/aws/data/prices.json] [--endpoint-url URL]
    python -m controller.cloudprovider.aws.pricegen --from-ec2instances-info PATH [--region R …] \\
        [--date YYYY-MM-DD] [--output …]
    python -m controller.cloudprovider.aws.pricegen --from-karpenter PATH [--region R …] [--output …]

The first calls `pricing` `GetProducts` (service AmazonEC2; Linux, shared tenancy, no
pre-installed software, capacity status Used; served from us-east-1 whatever the region asked)
with the credentials of the environment (the `pricing:GetProducts` permission suffices) and parses
every document as the controller does (`pricing.parse_products`, malformed ones skipped with a
warning); its figures are dated today. The second reads `instances.json` of the Go module
`github.com/cristim/ec2-instances-info` (PATH: the file or the module's directory, as
`go mod download -json` names it; `make prices`), every commercial region unless `--region` picks
some (`ec2instancesinfo.py`), dated by the module's pseudo-version (or `--date`). The third,
`--from-karpenter PATH`, reads the Price List figures Karpenter's generator wrote into its Go module
`github.com/aws/karpenter-provider-aws` (`karpentertable.py`; us-east-1 only), dated by the table's
`generated at` line.

Each region asked is written with its own date and source (`regions`). Newer figures win: a
region the file already holds with a newer date keeps its figures, and only the types they lack are
added from the older source, named in the region's `supplement`. Regions not asked keep what the
file had (a file of the first format, without `regions`, keeps its top-level date for them). A
region asked with no usable price is an error (exit 1) and the file is left as it was.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.cloudprovider.aws import ec2instancesinfo, karpentertable
from controller.cloudprovider.aws.api import AWSApi, Boto3Transport, Transport
from controller.cloudprovider.aws.pricing import PriceFileError, fetch_on_demand, provenance, read_price_file
from controller.cloudprovider.errors import CloudProviderError

DEFAULT_OUTPUT = Path(__file__).parent / "data" / "prices.json"
REGENERATE = "regenerate with python -m controller.cloudprovider.aws.pricegen (README, AWS: prices)"
SOURCE = (
    "AWS Price List API, AmazonEC2 on-demand, Linux, shared tenancy, no pre-installed software, "
    "capacity status Used (USD per hour)"
)
FILE_SOURCE = (
    "On-demand EC2 prices, Linux, shared tenancy, USD per hour, per commercial region; each region's "
    f"date and source in regions; {REGENERATE}"
)


def ec2instancesinfo_source(version: str) -> str:
    copy = f"Go module {ec2instancesinfo.MODULE}@{version}" if version else f"a copy of {ec2instancesinfo.MODULE}"
    return (
        "ec2instances.info instances.json (the data behind instances.vantage.sh, derived from the AWS Price "
        f"List: Linux on-demand, USD per hour) as shipped in {copy}"
    )


def karpenter_source(path: Path, generated: datetime.date | None) -> str:
    version = ec2instancesinfo.module_version(path, karpentertable.MODULE)
    copy = f"Go module {karpentertable.MODULE}@{version}" if version else f"a copy of {karpentertable.MODULE}"
    when = f" on {generated.isoformat()}" if generated else ""
    return f"{SOURCE}, as Karpenter's generator fetched them{when} into {karpentertable.TABLE.as_posix()} of {copy}"


def merge(
    doc: Mapping[str, Any], found: Mapping[str, Mapping[str, float]], date: datetime.date, source: str
) -> dict[str, Any]:
    """The price file `doc` with each region of `found` dated `date` from `source` (newer figures win)."""
    on_demand = {r: dict(t) for r, t in (doc.get("onDemand") or {}).items()}
    regions = {r: provenance(doc, r) for r in on_demand}
    for region, prices in found.items():
        held = regions.get(region) or {}
        if on_demand.get(region) and str(held.get("date", "")) > date.isoformat():
            older = set((held.get("supplement") or {}).get("types") or ())
            kept = {t: p for t, p in on_demand[region].items() if t not in older}
            added = {t: p for t, p in prices.items() if t not in kept}
            on_demand[region] = {**kept, **added}
            held = {k: v for k, v in held.items() if k != "supplement"}
            if added:
                held["supplement"] = {"date": date.isoformat(), "source": source, "types": sorted(added)}
            regions[region] = held
        else:
            on_demand[region] = dict(prices)
            regions[region] = {"date": date.isoformat(), "source": source}
    return {
        "source": FILE_SOURCE,
        "regions": {r: p for r, p in sorted(regions.items()) if p.get("date")},  # an undated region stays so
        "onDemand": {r: dict(sorted(on_demand[r].items())) for r in sorted(on_demand)},
    }


def _existing(output: Path) -> dict[str, Any]:
    return read_price_file(output) if output.exists() else {"onDemand": {}}


def _write(output: Path, doc: Mapping[str, Any]) -> None:
    output.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def generate(
    transport: Transport, regions: Sequence[str], output: Path, today: datetime.date | None = None
) -> dict[str, Any]:
    """Fetch the regions' prices from the Price List API and write the file; returns the document."""
    api = AWSApi(transport)
    doc = _existing(output)
    found: dict[str, dict[str, float]] = {}
    for region in regions:
        prices = fetch_on_demand(api, region)
        if not prices:
            raise PriceFileError(f"{region}: the Price List API returned no usable on-demand price")
        found[region] = prices
    out = merge(doc, found, today or datetime.datetime.now(datetime.UTC).date(), SOURCE)
    _write(output, out)
    return out


def _from_source(
    path: Path,
    every: Mapping[str, Mapping[str, float]],
    regions: Sequence[str],
    output: Path,
    dated: tuple[datetime.date, str],
) -> dict[str, Any]:
    """The commercial regions asked (all when none) of a parsed source, merged into the file."""
    date, source = dated
    missing = [r for r in regions if not every.get(r)]
    if missing:
        raise PriceFileError(f"{path}: no usable Linux on-demand price for {', '.join(missing)}")
    if not every:
        raise PriceFileError(f"{path}: no usable Linux on-demand price in any commercial region")
    found = {r: every[r] for r in regions} if regions else every
    out = merge(_existing(output), found, date, source)
    _write(output, out)
    return out


def _commercial_only(regions: Sequence[str]) -> None:
    for region in regions:
        if not ec2instancesinfo.commercial(region):
            raise PriceFileError(f"{region}: not a commercial AWS region (partition aws)")


def generate_from_ec2instancesinfo(
    path: Path, regions: Sequence[str], output: Path, date: datetime.date | None = None
) -> dict[str, Any]:
    """The commercial regions' prices (all, or those asked) from an instances.json; writes the file."""
    version = ec2instancesinfo.module_version(path)
    date = date or ec2instancesinfo.module_date(version)
    if date is None:
        raise PriceFileError(f"{path}: no module pseudo-version in the path to date the figures by: give --date")
    _commercial_only(regions)
    try:
        every = ec2instancesinfo.read(path)
    except ec2instancesinfo.SourceError as err:
        raise PriceFileError(str(err)) from err
    return _from_source(path, every, regions, output, (date, ec2instancesinfo_source(version)))


def generate_from_karpenter(
    path: Path, regions: Sequence[str], output: Path, date: datetime.date | None = None
) -> dict[str, Any]:
    """The commercial regions' prices (all, or those asked) from Karpenter's generated table; writes the file."""
    _commercial_only(regions)
    try:
        every, generated = karpentertable.read(path)
    except ec2instancesinfo.SourceError as err:
        raise PriceFileError(str(err)) from err
    date = date or generated
    if date is None:
        raise PriceFileError(f"{path}: no 'generated at' line to date the figures by: give --date")
    return _from_source(path, every, regions, output, (date, karpenter_source(path, generated)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.cloudprovider.aws.pricegen",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--region", action="append", default=[], help="region to price (repeatable)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--endpoint-url", help="endpoint URL override of the pricing API")
    parser.add_argument(
        "--from-ec2instances-info", type=Path, metavar="PATH",
        help="read ec2instances.info's instances.json (or the directory of the Go module that ships it) "
        "instead of calling the Price List API; every commercial region unless --region is given",
    )  # fmt: skip
    parser.add_argument(
        "--from-karpenter", type=Path, metavar="PATH",
        help="read Karpenter's generated price table (pkg/providers/pricing/zz_generated.pricing_aws.go, or the "
        "directory of the Go module github.com/aws/karpenter-provider-aws that ships it)",
    )  # fmt: skip
    parser.add_argument(
        "--date", type=datetime.date.fromisoformat, help="the date of a source's figures (default: the module's "
        "pseudo-version date for --from-ec2instances-info, the table's 'generated at' for --from-karpenter)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    if args.from_ec2instances_info is not None and args.from_karpenter is not None:
        parser.error("--from-ec2instances-info and --from-karpenter: one source at a time")
    if args.from_ec2instances_info is None and args.from_karpenter is None and not args.region:
        parser.error(
            "--region is required with the Price List API (or give --from-ec2instances-info or --from-karpenter)"
        )
    try:
        if args.from_ec2instances_info is not None:
            doc = generate_from_ec2instancesinfo(args.from_ec2instances_info, args.region, args.output, args.date)
        elif args.from_karpenter is not None:
            doc = generate_from_karpenter(args.from_karpenter, args.region, args.output, args.date)
        else:
            doc = generate(Boto3Transport("us-east-1", args.endpoint_url), args.region, args.output)
    except (CloudProviderError, PriceFileError) as err:
        print(f"pricegen: {err}", file=sys.stderr)
        return 1
    asked = args.region or sorted(doc["onDemand"])
    counts = ", ".join(f"{r}: {len(doc['onDemand'][r])} types" for r in asked)
    print(f"wrote {args.output} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
