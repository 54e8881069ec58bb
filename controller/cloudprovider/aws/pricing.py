"""EC2 prices: on-demand per instance type, spot per (type, zone) (spec §4.4, issue 10 §2).

On-demand prices start from a price file — the committed `data/prices.json` (public Price List
facts for every commercial region, made by `pricegen.py`) or the user's own file in the same
format — and are replaced by the Price List API (`pricing` `GetProducts`: Linux, shared tenancy, no
pre-installed software) when it answers (never with `aws.isolatedVPC`). The file says where each
region's figures come from and their date: `regions: {region: {"date", "source"}}`, with an
optional `supplement: {"date", "source", "types": [...]}` naming the types whose figures come from
an older source; a file without `regions` (the first format) dates every region with its top-level
`date` and `source`. Spot prices come from `DescribeSpotPriceHistory`
(latest per type and zone); until they arrive, spot = on-demand. A type without a known price
has no available offering. A malformed price document is skipped with a warning; a refresh that
yields nothing keeps the prices it had. `version` changes with every change, so the catalog
built from the prices can be cached.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from controller.cloudprovider.aws.api import AWSApi

log = logging.getLogger(__name__)

PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}


class PriceFileError(ValueError):
    """A price file that cannot be used; the message names the file and the entry."""


class PriceDocumentError(ValueError):
    """One GetProducts document that is not a usable on-demand price."""


def read_price_file(path: str | Path | None = None) -> dict[str, Any]:
    """The price file (the committed one when `path` is None), checked."""
    where = str(path) if path else "the built-in price file"
    try:
        if path:
            text = Path(path).read_text(encoding="utf-8")
        else:
            text = resources.files("controller.cloudprovider.aws").joinpath("data/prices.json").read_text("utf-8")
        doc = json.loads(text)
    except (OSError, json.JSONDecodeError) as err:
        raise PriceFileError(f"{where}: cannot read: {err}") from err
    if not isinstance(doc, Mapping) or not isinstance(doc.get("onDemand"), Mapping):
        raise PriceFileError(f'{where}: expected an object with "onDemand": {{region: {{type: price}}}}')
    for region, table in doc["onDemand"].items():
        if not isinstance(table, Mapping):
            raise PriceFileError(f"{where}: onDemand.{region}: expected a mapping of instance type to price")
        for name, price in table.items():
            if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
                raise PriceFileError(f"{where}: onDemand.{region}.{name}: not a price: {price!r}")
    if "date" in doc:
        _check_date(where, "date", doc["date"])
    regions = doc.get("regions", {})
    if not isinstance(regions, Mapping):
        raise PriceFileError(f"{where}: regions: expected a mapping of region to its date and source")
    for region, prov in regions.items():
        _check_provenance(where, f"regions.{region}", prov)
        supplement = prov.get("supplement")
        if supplement is not None:
            _check_provenance(where, f"regions.{region}.supplement", supplement)
            types = supplement.get("types")
            if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
                raise PriceFileError(f"{where}: regions.{region}.supplement.types: expected a list of instance types")
    return dict(doc)


def _check_date(where: str, field: str, value: Any) -> None:
    try:
        datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise PriceFileError(f"{where}: {field}: not a YYYY-MM-DD date: {value!r}") from None


def _check_provenance(where: str, field: str, prov: Any) -> None:
    if not isinstance(prov, Mapping):
        raise PriceFileError(f'{where}: {field}: expected {{"date": "YYYY-MM-DD", "source": "..."}}')
    _check_date(where, f"{field}.date", prov.get("date"))
    if not isinstance(prov.get("source"), str):
        raise PriceFileError(f"{where}: {field}.source: expected a text naming where the figures come from")


def provenance(doc: Mapping[str, Any], region: str) -> dict[str, Any]:
    """Where a region's figures come from: its `regions` entry, else the file's own date and source."""
    found = (doc.get("regions") or {}).get(region)
    if found is not None:
        return dict(found)
    return {"date": str(doc.get("date", "")), "source": str(doc.get("source", ""))}


def parse_product(document: str | Mapping[str, Any]) -> tuple[str, float]:
    """(instance type, USD per hour) of one Price List product document (PriceDocumentError otherwise)."""
    try:
        doc = json.loads(document) if isinstance(document, str) else document
        name = doc["product"]["attributes"]["instanceType"]
        prices = []
        for term in doc["terms"]["OnDemand"].values():
            for dim in term["priceDimensions"].values():
                prices.append(float(dim["pricePerUnit"]["USD"]))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise PriceDocumentError(f"not an on-demand price document ({type(err).__name__}: {err})") from err
    if not isinstance(name, str) or not name or not prices:
        raise PriceDocumentError("no instance type or no on-demand price in the document")
    return name, max(prices)


def parse_products(documents: Iterable[str | Mapping[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for i, document in enumerate(documents):
        try:
            name, price = parse_product(document)
        except PriceDocumentError as err:
            log.warning("ignoring price document %d: %s", i, err)
            continue
        if price > 0:  # zero-priced entries are reservations or placeholders
            out[name] = price
    return out


def fetch_on_demand(api: AWSApi, region: str) -> dict[str, float]:
    filters = [
        {"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in {**PRODUCT_FILTERS, "regionCode": region}.items()
    ]
    docs = api.pages(
        "pricing",
        "get_products",
        "PriceList",
        f"AmazonEC2 {region}",
        ServiceCode="AmazonEC2",
        Filters=filters,
        FormatVersion="aws_v1",
    )
    return parse_products(docs)


class Prices:
    def __init__(self, region: str, price_file: Mapping[str, Any] | None = None) -> None:
        doc = price_file if price_file is not None else read_price_file()
        self.region = region
        prov = provenance(doc, region)
        self.date, self.source = str(prov.get("date", "")), str(prov.get("source", ""))
        supplement = prov.get("supplement") or {}
        self.supplement_date = str(supplement.get("date", ""))
        self.supplemented = frozenset(supplement.get("types") or ())  # figures of that older date
        self._on_demand: dict[str, float] = {k: float(v) for k, v in (doc["onDemand"].get(region) or {}).items()}
        self._spot: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.version = 0
        self.from_api = False  # on-demand figures from the Price List API (not the file's) since a refresh
        if not self._on_demand:
            log.warning("no on-demand prices for %s in the price file; waiting for the pricing API", region)
        else:
            older = f", {len(self.supplemented)} of them dated {self.supplement_date}" if self.supplemented else ""
            log.info(
                "on-demand prices of %d instance types in %s from the price file, dated %s%s",
                len(self._on_demand), region, self.date or "(no date)", older,
            )  # fmt: skip

    def describe(self) -> str:
        """Where the on-demand figures come from, for a person (the file's date and source)."""
        if self.from_api:
            return f"on-demand prices of {self.region} from the AWS Price List API"
        if not self._on_demand:
            return f"no on-demand prices of {self.region} (not in the price file)"
        older = f"; {len(self.supplemented)} types from {self.supplement_date}" if self.supplemented else ""
        return (
            f"on-demand prices of {len(self._on_demand)} types in {self.region} from the price file, "
            f"dated {self.date or '(no date)'}{older}: {self.source}"
        )

    def on_demand(self, instance_type: str) -> float | None:
        return self._on_demand.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return self._spot.get((instance_type, zone), self._on_demand.get(instance_type))

    def estimates(self) -> list[tuple[str, str, str, float]]:
        """Every known price as (instance type, capacity type, zone — "" for on-demand, price)."""
        with self._lock:
            on_demand, spot = dict(self._on_demand), dict(self._spot)
        return [(t, "on-demand", "", p) for t, p in sorted(on_demand.items())] + [
            (t, "spot", zone, p) for (t, zone), p in sorted(spot.items())
        ]

    def refresh_on_demand(self, api: AWSApi) -> int:
        prices = fetch_on_demand(api, self.region)
        if not prices:
            log.warning(
                "the pricing API returned no usable on-demand price for %s; keeping %d known prices",
                self.region,
                len(self._on_demand),
            )
            return 0
        with self._lock:
            self._on_demand = prices
            self.from_api = True
            self.version += 1
        return len(prices)

    def refresh_spot(self, api: AWSApi) -> int:
        history = api.pages(
            "ec2", "describe_spot_price_history", "SpotPriceHistory", "Linux/UNIX", ProductDescriptions=["Linux/UNIX"]
        )
        latest: dict[tuple[str, str], tuple[Any, float]] = {}
        for entry in history:
            try:
                key = (str(entry["InstanceType"]), str(entry["AvailabilityZone"]))
                stamp, price = entry.get("Timestamp"), float(entry["SpotPrice"])
            except (KeyError, TypeError, ValueError) as err:
                log.warning("ignoring spot price entry %r: %s", entry, err)
                continue
            if key not in latest or (stamp is not None and latest[key][0] is not None and stamp > latest[key][0]):
                latest[key] = (stamp, price)
        if not latest:
            return 0
        with self._lock:
            self._spot = {k: v for k, (_, v) in latest.items()}
            self.version += 1
        return len(latest)
