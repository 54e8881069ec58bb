"""On-demand prices from Karpenter's generated price table, a source of the price file (issue 19, part 6).

Karpenter's AWS provider ships the Linux on-demand prices it fetched from the AWS Price List API as
Go source, `pkg/providers/pricing/zz_generated.pricing_aws.go` of the Go module
`github.com/aws/karpenter-provider-aws` (`go mod download` fetches it), headed
`// generated at <RFC 3339 time> for <region>` and laid out as

    var InitialOnDemandPricesAWS = map[string]map[ec2types.InstanceType]float64{
        "us-east-1": {
            "a1.2xlarge": 0.204000, "a1.4xlarge": 0.408000, …

`parse(text)` reads that map line by line as data — a region's key opens its block, each
`"type": price` pair in it is a figure — and never evaluates anything. Pairs outside a region block
and prices that are not positive numbers are skipped, counted in one warning; only commercial
regions are kept (`ec2instancesinfo.commercial`). `generated_at(text)` is the table's date. The
generator that writes the price file is `pricegen.py`.
"""

from __future__ import annotations

import datetime
import logging
import math
import re
from collections import Counter
from pathlib import Path

from controller.cloudprovider.aws.ec2instancesinfo import SourceError, commercial

log = logging.getLogger(__name__)

MODULE = "github.com/aws/karpenter-provider-aws"
TABLE = Path("pkg") / "providers" / "pricing" / "zz_generated.pricing_aws.go"
_MAP = re.compile(r"^\s*var\s+InitialOnDemandPricesAWS\s*=")
_REGION = re.compile(r'^\s*"([a-z0-9-]+)":\s*\{\s*(?://.*)?$')
_PAIR = re.compile(r'"([a-z0-9][a-z0-9\-]*\.[a-z0-9\-]+)":\s*([^,\s}]+)')
_GENERATED = re.compile(r"^//\s*generated at\s+(\S+)")


def generated_at(text: str) -> datetime.date | None:
    """The UTC date of the table's `// generated at …` line (None when it has none)."""
    for line in text.splitlines():
        match = _GENERATED.match(line.strip())
        if match:
            try:
                return (
                    datetime.datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
                    .astimezone(datetime.UTC)
                    .date()
                )
            except ValueError:
                return None
    return None


def parse(text: str) -> dict[str, dict[str, float]]:
    """{commercial region: {instance type: on-demand USD per hour}} of the table's AWS map."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _MAP.match(line)), None)
    if start is None:
        raise SourceError("no InitialOnDemandPricesAWS map in the file")
    out: dict[str, dict[str, float]] = {}
    skipped: Counter[str] = Counter()
    region: str | None = None
    depth = 0
    for line in lines[start:]:
        code = line.split("//", 1)[0]
        opened = _REGION.match(line)
        if opened and depth == 1:
            region = opened.group(1)
        for name, raw in _PAIR.findall(code):
            try:
                price = float(raw)
            except ValueError:
                price = math.nan
            if region is None or depth != 2:
                skipped["prices outside a region's block"] += 1
            elif not (math.isfinite(price) and price > 0):
                skipped["prices that are not a positive number"] += 1
            elif commercial(region):
                out.setdefault(region, {})[name] = price
        depth += code.count("{") - code.count("}")
        if depth <= 1:
            region = None
        if depth <= 0:
            break
    for what, count in sorted(skipped.items()):
        log.warning("karpenter price table: skipped %d %s", count, what)
    return {r: dict(sorted(p.items())) for r, p in sorted(out.items())}


def read(path: Path) -> tuple[dict[str, dict[str, float]], datetime.date | None]:
    """(`parse`, `generated_at`) of the table file, or of a module directory's table."""
    file = path / TABLE if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SourceError(f"{file}: cannot read: {err}") from err
    try:
        return parse(text), generated_at(text)
    except SourceError as err:
        raise SourceError(f"{file}: {err}") from err
