"""Generate the on-demand price file from the AWS Price List API.

    python -m controller.cloudprovider.aws.pricegen --region us-east-1 [--region eu-west-1 …] \\
        [--output controller/cloudprovider/aws/data/prices.json] [--endpoint-url URL]

Calls `pricing` `GetProducts` (service AmazonEC2; Linux, shared tenancy, no pre-installed
software, capacity status Used; served from us-east-1 whatever the region asked) with the
credentials of the environment (the `pricing:GetProducts` permission suffices), parses every
document as the controller does (`pricing.parse_products`, malformed ones skipped with a
warning), and writes `{"date": "<UTC date>", "source": …, "onDemand": {region: {type: USD/h}}}`.
Regions not asked keep the prices the output file already had. A region with no usable price is
an error (exit 1) and the file is left as it was.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller.cloudprovider.aws.api import AWSApi, Boto3Transport, Transport
from controller.cloudprovider.aws.pricing import PriceFileError, fetch_on_demand, read_price_file
from controller.cloudprovider.errors import CloudProviderError

DEFAULT_OUTPUT = Path(__file__).parent / "data" / "prices.json"
SOURCE = (
    "AWS Price List, AmazonEC2 on-demand, Linux, shared tenancy, no pre-installed software, capacity status Used "
    "(USD per hour); regenerate with python -m controller.cloudprovider.aws.pricegen"
)


def generate(
    transport: Transport, regions: Sequence[str], output: Path, today: datetime.date | None = None
) -> dict[str, Any]:
    """Fetch the regions' prices and write the file; returns the document (raises on failure)."""
    api = AWSApi(transport)
    doc: dict[str, Any] = {"onDemand": {}}
    if output.exists():
        doc = read_price_file(output)
    on_demand = dict(doc.get("onDemand") or {})
    for region in regions:
        prices = fetch_on_demand(api, region)
        if not prices:
            raise PriceFileError(f"{region}: the Price List API returned no usable on-demand price")
        on_demand[region] = dict(sorted(prices.items()))
    out = {
        "date": (today or datetime.datetime.now(datetime.UTC).date()).isoformat(),
        "source": SOURCE,
        "onDemand": dict(sorted(on_demand.items())),
    }
    output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.cloudprovider.aws.pricegen", description=__doc__)
    parser.add_argument("--region", action="append", required=True, help="region to price (repeatable)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--endpoint-url", help="endpoint URL override of the pricing API")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        doc = generate(Boto3Transport("us-east-1", args.endpoint_url), args.region, args.output)
    except (CloudProviderError, PriceFileError) as err:
        print(f"pricegen: {err}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{r}: {len(doc['onDemand'][r])} types" for r in args.region)
    print(f"wrote {args.output} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
