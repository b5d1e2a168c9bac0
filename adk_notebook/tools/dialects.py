"""One walk over JSON schemas, and the dialects of it that providers are sent.

A JSON schema nests schemas under a few keywords (`properties`, `items`, `anyOf`, ...) beside
plain data (`default`, `enum`, `required`). `map_subschemas` is the one place that knows which
is which, so a property that happens to be called "title" or "$ref" is never mistaken for a
keyword. Every rewrite (inlining `$ref`, dropping titles, Gemini's subset, Anthropic's
structured-output subset) is a rule for one node, applied through `rewrite_schema`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core.error_codes import ErrorCode
from ..core.errors import AdkError

__all__ = [
    "anthropic_output_schema",
    "drop_titles",
    "gemini_schema",
    "inline_refs",
    "map_subschemas",
    "rewrite_schema",
    "MAX_INLINED_NODES",
    "UnusableSchema",
]

MAX_INLINED_NODES = 5000  # schema nodes a schema may have once its $refs are inlined

# Keywords whose values are schemas, maps of schemas or lists of schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})  # `items` as a list: draft 4-7 tuples
_SCHEMA_VALUES = frozenset(
    {
        "items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
        "not", "contains", "propertyNames", "if", "then", "else", "contentSchema",
    }
)  # fmt: skip

_GEMINI_KEYS = frozenset(
    {
        "type", "format", "description", "nullable", "enum", "properties", "required", "items",
        "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern",
        "anyOf", "propertyOrdering", "default",
    }
)  # fmt: skip
_GEMINI_FORMATS = {
    "string": {"enum", "date-time"},
    "number": {"float", "double"},
    "integer": {"int32", "int64"},
}

# Anthropic's structured outputs refuse these; they move into the description instead.
_ANTHROPIC_UNSUPPORTED = frozenset(
    {
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    }
)  # fmt: skip
_ANTHROPIC_FORMATS = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    }
)


def map_subschemas(node: dict[str, Any], fn: Callable[[Any], Any]) -> dict[str, Any]:
    """A copy of a schema node with `fn` applied to each of its direct subschemas."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: fn(child) for name, child in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [fn(child) for child in value]
        elif key in _SCHEMA_VALUES and isinstance(value, dict):
            out[key] = fn(value)
        else:
            out[key] = value
    return out


def rewrite_schema(schema: Any, rule: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """`schema` with `rule` applied to every schema node, each before the subschemas it keeps.

    `true` / `false` schemas are left as they are.
    """
    if not isinstance(schema, dict):
        return schema
    return map_subschemas(rule(schema), lambda child: rewrite_schema(child, rule))


class UnusableSchema(AdkError, ValueError):
    """A schema whose `$ref`s cannot be inlined: recursive, dangling, remote, or too large
    once expanded. A ValueError too, for callers that caught the ValueError it used to be."""

    def __init__(self, message: str) -> None:
        super().__init__("config", "invalid_input", ErrorCode.INVALID_SCHEMA, message)


def inline_refs(schema: dict[str, Any], *, max_nodes: int = MAX_INLINED_NODES) -> dict[str, Any]:
    """Replace each local `$ref` by the definition it points to, and drop `$defs`.

    Keywords beside a `$ref` (a field's description or default) win over the definition's.
    Bounded: a definition used many times at many levels grows exponentially once written out
    (2 KB of nested `$ref`s became megabytes per request), so past `max_nodes` schema nodes it stops.

    Raises:
        UnusableSchema: a definition refers to itself, a `$ref` is missing or not local, or
            the schema written out would pass `max_nodes`.
    """
    made = 0

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        nonlocal made
        if not isinstance(node, dict):
            return node
        made += 1
        if made > max_nodes:
            raise UnusableSchema(
                f"it expands past {max_nodes} schema nodes once its $refs are written out (Gemini "
                "needs them written out); define fewer nested, repeated references"
            )
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise UnusableSchema(f"cannot inline {ref!r}: a $ref must be a string")
            if ref in seen:
                raise UnusableSchema(
                    f"{ref.rsplit('/', 1)[-1]!r} refers to itself (a recursive model); tool "
                    "schemas must be finite, so limit the nesting with a non-recursive model"
                )
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return resolve({**_lookup(schema, ref), **siblings}, seen | {ref})
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            siblings = {key: value for key, value in node.items() if key != "allOf"}
            return resolve({**node["allOf"][0], **siblings}, seen)
        kept = {key: value for key, value in node.items() if key not in ("$defs", "definitions")}
        return map_subschemas(kept, lambda child: resolve(child, seen))

    return resolve(schema, frozenset())


def drop_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without the `title` of any node (pydantic's titles only repeat the names)."""
    return rewrite_schema(schema, lambda node: {k: v for k, v in node.items() if k != "title"})


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema into the subset Gemini's `functionDeclarations` accept.

    Gemini rejects unknown keywords, non-string enums and most string formats, and spells
    "may be null" as `nullable` rather than `anyOf` with a null branch.
    """
    return rewrite_schema(inline_refs(schema), _gemini_node)


def anthropic_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Narrow a JSON schema to what Anthropic's structured outputs accept.

    Every object is closed with `additionalProperties: false`, `oneOf` becomes `anyOf`, and the
    bounds and formats it refuses move into the description (the agent still validates the
    answer against the full schema).
    """
    return rewrite_schema(inline_refs(schema), _anthropic_node)


def _gemini_node(node: dict[str, Any]) -> dict[str, Any]:
    node = _gemini_nullable(node)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    if node.get("type") == "array" and "items" not in node and node.get("prefixItems"):
        node["items"] = _tuple_items(node["prefixItems"])
    if "enum" in node and not all(isinstance(value, str) for value in node["enum"]):
        allowed = ", ".join(json.dumps(value) for value in node.pop("enum"))
        node["description"] = _with_note(node.get("description"), f"One of: {allowed}.")
    kind = node.get("type")
    if node.get("format") not in _GEMINI_FORMATS.get(kind if isinstance(kind, str) else "", ()):
        node.pop("format", None)
    return {key: value for key, value in node.items() if key in _GEMINI_KEYS}


def _gemini_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {"type": "null"}]` and `type: [X, "null"]` become X with `nullable: true`."""
    node = dict(node)
    kinds = node.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [kind for kind in kinds if kind != "null"]
        node.update(nullable=True, type=rest[0] if len(rest) == 1 else rest)
    branches = node.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        rest = [branch for branch in branches if branch != {"type": "null"}]
        node["nullable"] = True
        del node["anyOf"]
        if len(rest) == 1:
            return _gemini_nullable({**rest[0], **node})
        node["anyOf"] = rest
    return node


def _tuple_items(prefix: list[Any]) -> Any:
    """Gemini has no tuples: one item schema that admits every position."""
    unique = [item for index, item in enumerate(prefix) if item not in prefix[:index]]
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def _anthropic_node(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    moved: list[str] = []
    for key, value in node.items():
        if key in _ANTHROPIC_UNSUPPORTED or (key == "minItems" and value not in (0, 1)):
            moved.append(f"{key}: {json.dumps(value)}")
        elif key == "format" and value not in _ANTHROPIC_FORMATS:
            moved.append(f"format: {value}")
        elif key != "title":
            out[key] = value
    if "oneOf" in out:  # not supported; anyOf admits the same answers here
        out["anyOf"] = out.pop("oneOf")
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    if moved:
        out["description"] = _with_note(out.get("description"), f"({', '.join(moved)})")
    return out


def _with_note(description: str | None, note: str) -> str:
    return f"{description} {note}" if description else note


def _lookup(root: dict[str, Any], ref: str) -> dict[str, Any]:
    """Follow a local JSON pointer such as `#/$defs/Address`."""
    if not ref.startswith("#"):
        raise UnusableSchema(f"cannot inline {ref!r}: only local references ('#/...') are supported")
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise UnusableSchema(f"cannot inline {ref!r}: no such definition in the schema")
        node = node[part]
    if not isinstance(node, dict):
        raise UnusableSchema(f"cannot inline {ref!r}: it does not point at a schema object")
    return node
