"""A small JSON-schema checker for the schemas users write by hand (output schemas, tool parameters).

It covers what such schemas use in practice — types, properties, required,
additionalProperties, items, enum/const, anyOf/oneOf, numeric and size bounds — and accepts
what it does not know rather than rejecting it. No dependency: pydantic models validate with
pydantic; this is for plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterator
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


def schema_problems(value: Any, schema: dict[str, Any], path: str = "(root)") -> list[str]:
    """Each way `value` breaks `schema`, as "path: problem" lines ([] when it fits)."""
    return list(_check(value, schema, path))


def _check(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        if not any(not list(_check(value, option, path)) for option in options):
            yield f"{path}: does not match any of the allowed shapes"
        return
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
    yield from _check_bounds(value, schema, path)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                yield f"{path}.{key}: required"
        for key, item in value.items():
            if key in properties:
                yield from _check(item, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                yield f"{path}.{key}: not allowed"
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from _check(item, schema["additionalProperties"], f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _check(item, schema["items"], f"{path}[{i}]")


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES.get(name, object))


def _check_bounds(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{path}: must be >= {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{path}: must be <= {schema['maximum']}"
    sized = value if isinstance(value, (str, list)) else None
    if sized is not None:
        kind = "Length" if isinstance(value, str) else "Items"
        if f"min{kind}" in schema and len(sized) < schema[f"min{kind}"]:
            yield f"{path}: needs at least {schema[f'min{kind}']} {'characters' if kind == 'Length' else 'items'}"
        if f"max{kind}" in schema and len(sized) > schema[f"max{kind}"]:
            yield f"{path}: allows at most {schema[f'max{kind}']} {'characters' if kind == 'Length' else 'items'}"
