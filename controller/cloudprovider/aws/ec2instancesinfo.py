"""On-demand prices from ec2instances.info's `instances.json`, a source of the price file (issue 19, part 6).

ec2instances.info (the data behind instances.vantage.sh) derives its figures from the public AWS
Price List; the Go module `github.com/cristim/ec2-instances-info` ships a dated copy of that data as
`data/instances.json`, so `go mod download` fetches every commercial region's prices where the Price
List API cannot be reached. The file is a list of instance types, each
`{"instance_type": "m5.large", "pricing": {region: {"linux": {"ondemand": "0.096", …}, …}, …}}`.

`parse(doc)` keeps the Linux on-demand price (USD per hour) of each type in each commercial region:
an entry that is not such an object, a type without a name and a price that is not a positive
number are skipped, each kind counted in one warning. A region is commercial (`commercial`) when it
belongs to the `aws` partition as the AWS SDK's own endpoint data describes it (botocore's
`endpoints.json`, `regionRegex` of each partition): GovCloud (`us-gov-*`), China (`cn-*`), the
isolated partitions (`us-iso*`, `eu-isoe-*`) and the European Sovereign Cloud fall in partitions of
their own, and Local and Wavelength Zones (`us-east-1-atl-1`, `us-east-1-wl1`) are no regions.
`module_version(path)` and `module_date(version)` tell which copy a path holds and its date (a Go
pseudo-version carries its commit's UTC time). The generator that writes the file is `pricegen.py`.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MODULE = "github.com/cristim/ec2-instances-info"
COMMERCIAL_PARTITION = "aws"
_PSEUDO_TIME = re.compile(r"-(?:0\.)?(\d{14})-[0-9a-f]{12}$")


class SourceError(ValueError):
    """An instances.json that cannot be used at all (unreadable, not a list)."""


@functools.cache
def _partitions() -> tuple[tuple[str, re.Pattern[str]], ...]:
    from botocore.loaders import Loader

    data = Loader().load_data("endpoints")
    return tuple((str(p["partition"]), re.compile(str(p["regionRegex"]))) for p in data["partitions"])


def partition_of(region: str) -> str:
    """The partition whose region pattern the name matches ("" when none: not a region)."""
    found = [name for name, pattern in _partitions() if pattern.match(region)]
    return found[0] if len(found) == 1 else ""


def commercial(region: str) -> bool:
    return partition_of(region) == COMMERCIAL_PARTITION


def _price(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def parse(doc: Any) -> dict[str, dict[str, float]]:
    """{commercial region: {instance type: Linux on-demand USD per hour}}; bad entries skipped."""
    if not isinstance(doc, list):
        raise SourceError(f"expected a list of instance types, not {type(doc).__name__}")
    out: dict[str, dict[str, float]] = {}
    skipped: Counter[str] = Counter()
    for entry in doc:
        name = entry.get("instance_type") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name.strip():
            skipped["entries without an instance_type"] += 1
            continue
        pricing = entry.get("pricing")
        if not isinstance(pricing, Mapping):
            skipped["types without a pricing object"] += 1
            continue
        for region, by_os in pricing.items():
            if not isinstance(region, str) or not commercial(region):
                continue
            if not isinstance(by_os, Mapping):
                skipped["region entries that are not an object"] += 1
                continue
            linux = by_os.get("linux")
            if linux is None:
                continue  # not sold with Linux there (e.g. Ubuntu Pro only): no figure, nothing wrong
            price = _price(linux.get("ondemand")) if isinstance(linux, Mapping) else None
            if price is None:
                skipped["Linux on-demand prices that are not a positive number"] += 1
                continue
            out.setdefault(region, {})[name.strip()] = price
    for what, count in sorted(skipped.items()):
        log.warning("instances.json: skipped %d %s", count, what)
    return {region: dict(sorted(prices.items())) for region, prices in sorted(out.items())}


def read(path: Path) -> dict[str, dict[str, float]]:
    """`parse` of a file, or of a module directory's `data/instances.json`."""
    file = path / "data" / "instances.json" if path.is_dir() else path
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SourceError(f"{file}: cannot read: {err}") from err
    try:
        return parse(doc)
    except SourceError as err:
        raise SourceError(f"{file}: {err}") from err


def module_version(path: Path, module: str = MODULE) -> str:
    """The version of `module` a path in the Go module cache names ("" when it names none)."""
    match = re.search(re.escape(module) + r"@(v[0-9A-Za-z.\-+]+)", str(path.resolve()))
    return match.group(1) if match else ""


def module_date(version: str) -> datetime.date | None:
    """The UTC date of a pseudo-version's commit (v0.0.0-20250528091325-32acf84f42eb → 2025-05-28)."""
    match = _PSEUDO_TIME.search(version)
    if not match:
        return None
    try:
        return datetime.datetime.strptime(match.group(1), "%Y%m%d%H%M%S").date()
    except ValueError:
        return None
