"""Read a Provisioner or AWSNodeTemplate document the way the webhooks admit it.

Pure. `check_provisioner()` / `check_awsnodetemplate()` run the schema and the validation rules
and return every field error; `load_provisioner()` / `load_awsnodetemplate()` default, validate
and convert into the typed objects, raising `InvalidObjectError` (whose text names every field at
fault). The webhooks, `karpy simulate` and the controller all read documents through here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marshmallow import Schema, ValidationError

from controller.apis.awsnodetemplate import AWSNodeTemplate, validate_awsnodetemplate
from controller.apis.defaults import default_provisioner
from controller.apis.errors import FieldError, InvalidObjectError
from controller.apis.provisioner import Provisioner
from controller.apis.schemas import AWS_NODE_TEMPLATE, PROVISIONER, schema_errors
from controller.apis.validation import validate_provisioner


def read(obj: Any, schema: Schema) -> tuple[dict[str, Any] | None, list[FieldError]]:
    """The schema-checked document, or None and the shape/type errors."""
    if not isinstance(obj, dict):
        return None, [FieldError("the object must be a JSON/YAML mapping", ("<root>",))]
    try:
        loaded = schema.load(obj)
    except ValidationError as err:
        return None, schema_errors(err.messages)
    if not isinstance(loaded, dict):
        return None, [FieldError("the object could not be read", ("<root>",))]
    return loaded, []


def _check(
    obj: Any, schema: Schema, rules: Callable[[dict[str, Any]], list[FieldError]]
) -> tuple[dict[str, Any] | None, list[FieldError]]:
    loaded, errors = read(obj, schema)
    if loaded is None:
        return None, errors
    return loaded, rules(loaded)


def check_provisioner(obj: Any) -> list[FieldError]:
    """Every error of a Provisioner document as stored (no defaulting)."""
    return _check(obj, PROVISIONER, validate_provisioner)[1]


def check_awsnodetemplate(obj: Any) -> list[FieldError]:
    """Every error of an AWSNodeTemplate document."""
    return _check(obj, AWS_NODE_TEMPLATE, validate_awsnodetemplate)[1]


def load_provisioner(obj: Any) -> Provisioner:
    """Default, validate and convert a Provisioner document; raises InvalidObjectError."""
    if not isinstance(obj, dict):
        raise InvalidObjectError([FieldError("the object must be a JSON/YAML mapping", ("<root>",))])
    loaded, errors = _check(default_provisioner(obj), PROVISIONER, validate_provisioner)
    if errors or loaded is None:
        raise InvalidObjectError(errors)
    return Provisioner.from_wire(loaded)


def load_awsnodetemplate(obj: Any) -> AWSNodeTemplate:
    """Validate and convert an AWSNodeTemplate document; raises InvalidObjectError."""
    loaded, errors = _check(obj, AWS_NODE_TEMPLATE, validate_awsnodetemplate)
    if errors or loaded is None:
        raise InvalidObjectError(errors)
    return AWSNodeTemplate.from_wire(loaded)
