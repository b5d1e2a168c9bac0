"""A small JSON-schema checker for the schemas users write by hand (output schemas, tool parameters).

It covers the keywords such schemas use: type, enum, const, anyOf/oneOf/allOf, properties,
required, additionalProperties, min/maxProperties, items, prefixItems, min/maxItems,
uniqueItems, minimum/maximum, exclusiveMinimum/exclusiveMaximum, multipleOf, min/maxLength,
pattern and the common formats (date, date-time, time, email, uuid, uri). Keywords it does
not know are ignored. No dependency: pydantic models validate with pydantic; this is for dicts.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

__all__ = ["schema_problems"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    return check


_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _parses(datetime.date.fromisoformat),
    "date-time": lambda s: "T" in s.upper() and _parses(datetime.datetime.fromisoformat)(s),
    "time": _parses(datetime.time.fromisoformat),
    "uuid": _parses(uuid.UUID),
    "email": lambda s: _EMAIL.match(s) is not None,
    "uri": lambda s: _URI.match(s) is not None,
}


def schema_problems(value: Any, schema: dict[str, Any], path: str = "(root)") -> list[str]:
    """Each way `value` breaks `schema`, as "path: problem" lines ([] when it fits)."""
    return list(_check(value, schema, path))


def _check(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema and not any(not schema_problems(value, option, path) for option in schema[combinator]):
            yield f"{path}: does not match any of the allowed shapes"
            return
    for part in schema.get("allOf", ()):
        yield from _check(value, part, path)
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, name) for name in names):
            yield f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield f"{path}: must be one of {schema['enum']}"
    if "const" in schema and value != schema["const"]:
        yield f"{path}: must be {schema['const']!r}"
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield from _check_number(value, schema, path)
    elif isinstance(value, str):
        yield from _check_string(value, schema, path)
    elif isinstance(value, list):
        yield from _check_array(value, schema, path)
    elif isinstance(value, dict):
        yield from _check_object(value, schema, path)


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES.get(name, object))


def _check_number(value: float, schema: dict[str, Any], path: str) -> Iterator[str]:
    if "minimum" in schema and value < schema["minimum"]:
        yield f"{path}: must be >= {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        yield f"{path}: must be <= {schema['maximum']}"
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        yield f"{path}: must be > {schema['exclusiveMinimum']}"
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        yield f"{path}: must be < {schema['exclusiveMaximum']}"
    step = schema.get("multipleOf")
    if step and abs(value / step - round(value / step)) > 1e-9:
        yield f"{path}: must be a multiple of {step}"


def _check_string(value: str, schema: dict[str, Any], path: str) -> Iterator[str]:
    if "minLength" in schema and len(value) < schema["minLength"]:
        yield f"{path}: needs at least {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield f"{path}: allows at most {schema['maxLength']} characters"
    if "pattern" in schema and _regex(schema["pattern"]).search(value) is None:
        yield f"{path}: must match the pattern {schema['pattern']}"
    check = _FORMATS.get(schema.get("format", ""))
    if check is not None and not check(value):
        yield f"{path}: must be a valid {schema['format']}"


def _check_array(value: list[Any], schema: dict[str, Any], path: str) -> Iterator[str]:
    if "minItems" in schema and len(value) < schema["minItems"]:
        yield f"{path}: needs at least {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        yield f"{path}: allows at most {schema['maxItems']} items"
    if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) < len(value):
        yield f"{path}: items must be unique"
    prefix = schema.get("prefixItems", [])
    for i, (item, item_schema) in enumerate(zip(value, prefix)):
        yield from _check(item, item_schema, f"{path}[{i}]")
    rest = schema.get("items")
    if rest is False and len(value) > len(prefix):
        yield f"{path}: allows at most {len(prefix)} items"
    elif isinstance(rest, dict):
        for i in range(len(prefix), len(value)):
            yield from _check(value[i], rest, f"{path}[{i}]")


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str) -> Iterator[str]:
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        yield f"{path}: needs at least {schema['minProperties']} properties"
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        yield f"{path}: allows at most {schema['maxProperties']} properties"
    properties = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            yield f"{path}.{key}: required"
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in properties:
            yield from _check(item, properties[key], f"{path}.{key}")
        elif extra is False:
            yield f"{path}.{key}: not allowed"
        elif isinstance(extra, dict):
            yield from _check(item, extra, f"{path}.{key}")


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
