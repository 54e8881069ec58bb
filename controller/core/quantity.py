"""Kubernetes resource quantities and Go durations, parsed with Kubernetes semantics.

Pure. One module shared by the API types (validation of `limits`, `kubeReserved`, eviction
thresholds), the scheduler (resource arithmetic) and the simulated cloud. Quantities are kept
as exact `Decimal` values; the scheduler works on integers through `milli_value()` (cpu) and
`int_value()` (everything else), both rounded up as Kubernetes does.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# sign, number (digits with an optional fraction, or a bare fraction), then a suffix:
# a binary SI suffix, a decimal SI suffix or a decimal exponent (`1e3`, `5E-2`).
_QUANTITY_RE = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>[KMGTPE]i)|(?P<dec>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity (or duration)."""


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Parse `100m`, `1Gi`, `1e3`, `0.5`, `1000` (or a number) into an exact Decimal.

    Raises QuantityError with a message that quotes the value when it is not a quantity.
    """
    if isinstance(value, bool):
        raise QuantityError(f"quantity {value!r} must be a string or a number")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"quantity {value!r} is not a finite number")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantity {value!r} must be a string or a number")
    text = value.strip()
    match = _QUANTITY_RE.fullmatch(text) if len(text) <= 64 else None
    if match is None:
        raise QuantityError(f"quantities must match the regular expression of a Kubernetes quantity: {value!r}")
    try:
        number = Decimal(match.group("num"))
        with localcontext() as ctx:
            ctx.prec = 80
            if match.group("bin"):
                return number * _BINARY[match.group("bin")]
            if match.group("exp") is not None:
                exponent = int(match.group("exp"))
                if abs(exponent) > 40:
                    raise QuantityError(f"quantity {value!r} is out of range")
                return number.scaleb(exponent)
            return number.scaleb(_DECIMAL[match.group("dec") or ""])
    except (InvalidOperation, ValueError) as err:
        if isinstance(err, QuantityError):
            raise
        raise QuantityError(f"quantity {value!r} could not be parsed") from err


def milli_value(value: str | int | float | Decimal) -> int:
    """The quantity in thousandths, rounded up (`100m` -> 100, `1.5` -> 1500)."""
    return int((parse_quantity(value) * 1000).to_integral_value(rounding=ROUND_CEILING))


def int_value(value: str | int | float | Decimal) -> int:
    """The quantity as a whole number, rounded up (`1Gi` -> 1073741824, `100m` -> 1)."""
    return int(parse_quantity(value).to_integral_value(rounding=ROUND_CEILING))


def format_milli(milli: int) -> str:
    """Canonical text of a cpu-like quantity given in thousandths (`1930m`, `2`)."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"


def format_bytes(value: int) -> str:
    """Canonical text of a byte quantity, using the largest exact binary suffix (`7Gi`, `574Mi`)."""
    if value == 0:
        return "0"
    for suffix, factor in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


_DURATION_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "\u00b5s": Decimal("1e-6"),
    "\u03bcs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(value: str) -> Decimal:
    """Parse a Go duration (`1m30s`, `3m`, `1.5h`, `300ms`, `0`) into seconds.

    Raises QuantityError when the text is not a Go duration.
    """
    if not isinstance(value, str):
        raise QuantityError(f"duration {value!r} must be a string")
    text = value
    sign = Decimal(1)
    if text[:1] in "+-" and text:
        sign = Decimal(-1) if text[0] == "-" else Decimal(1)
        text = text[1:]
    if text == "0":
        return Decimal(0)
    if not text or len(text) > 64:
        raise QuantityError(f"invalid duration {value!r}")
    total = Decimal(0)
    pos = 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None or match.group(1) in ("", "."):
            raise QuantityError(f"invalid duration {value!r}")
        total += Decimal(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * total
