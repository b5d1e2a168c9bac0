"""Structured output: the schema an agent's final answer must match, and its validation.

A pydantic model validates with pydantic and gives the model instance back. A JSON-schema
dict validates with the small checker below, which covers what output schemas use in
practice (types, properties, required, additionalProperties, items, enum/const, anyOf,
bounds); anything it does not know it does not reject.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core.errors import AdkError
from ..tools.schema import model_json_schema

__all__ = ["OutputSchema"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


class OutputSchema:
    """A pydantic model class or a JSON schema dict, ready to check answers against."""

    def __init__(self, schema: type[BaseModel] | dict[str, Any]) -> None:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model: type[BaseModel] | None = schema
        elif isinstance(schema, dict):
            self.model = None
        else:
            raise AdkError.config(
                f"output_schema must be a pydantic model class or a JSON schema dict, got {type(schema).__name__}.",
                code="invalid_output_schema",
            )
        self.json_schema = model_json_schema(schema)

    def instruction(self) -> str:
        """The line added to the system instruction, for providers that do not enforce schemas."""
        return (
            "Reply with only a JSON object (no prose, no code fences) that matches this JSON schema:\n"
            + json.dumps(self.json_schema, ensure_ascii=False)
        )

    def validate(self, text: str) -> Any:
        """Parse and check an answer; raise ValueError with a message the model can act on."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text
        if self.model is not None:
            try:
                return self.model.model_validate_json(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)
                )
                raise ValueError(problems) from None
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the answer is not valid JSON ({exc.msg} at position {exc.pos})") from None
        problems = list(_check(value, self.json_schema, "(root)"))
        if problems:
            raise ValueError("; ".join(problems))
        return value

    def dump(self, value: Any) -> Any:
        """A JSON-ready form of a validated value, for session state."""
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _check(value: Any, schema: dict[str, Any], path: str) -> Any:
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


def _check_bounds(value: Any, schema: dict[str, Any], path: str) -> Any:
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
