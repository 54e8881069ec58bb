"""Object metadata validation shared by every karpy API type (Provisioner, AWSNodeTemplate).

Pure. Neighbours: `validation.py` (Provisioner rules) and `awsnodetemplate.py` (AWSNodeTemplate
rules) both start from `validate_metadata()`.
"""

from __future__ import annotations

from typing import Any

from controller.apis.errors import FieldError
from controller.core import labels as L


def validate_metadata(meta: dict[str, Any]) -> list[FieldError]:
    """Name (or generateName) required; a name must be a DNS-1035 label."""
    name = meta.get("name")
    if not name:
        generate = meta.get("generateName")
        if not generate:
            return [FieldError("missing field(s)", ("metadata.name",))]
        if not L.is_dns1035_label(str(generate).rstrip("-") or "x"):
            return [FieldError(f"not a DNS 1035 label prefix: {generate!r}", ("metadata.generateName",))]
        return []
    if not L.is_dns1035_label(name):
        return [
            FieldError(
                f"not a DNS 1035 label: [a DNS-1035 label must consist of lower case alphanumeric characters "
                f"or '-', start with an alphabetic character, and end with an alphanumeric character, "
                f"at most 63 characters] (got {name!r})",
                ("metadata.name",),
            )
        ]
    return []
