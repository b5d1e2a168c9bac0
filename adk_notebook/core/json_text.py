"""JSON from text we did not write (provider answers, a model's output): json.loads, bounded.

`parse_json(text)` gives `json.loads`' results and errors, with one difference: a value nested
too deeply for Python's parser (it raises RecursionError) is a `JsonTooDeep`, a ValueError like
every other unusable text. `check_depth(value)` refuses a parsed value nested more than
`MAX_DEPTH` deep, the bound on what the runtime keeps (tool arguments, output-schema answers):
anything deeper would fail later, far from its cause, in whatever walks it (a JSON encoder, a
schema check, a deep copy). `json_kind` and `shown` name a value read from a file in an error
message as the file spells it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "JsonTooDeep", "check_depth", "json_kind", "parse_json", "shown"]

#: The deepest nesting kept: `{}` and `[]` are depth 1, `{"a": []}` depth 2.
MAX_DEPTH = 100

_raw_decode = json.JSONDecoder().raw_decode


class JsonTooDeep(ValueError):
    """JSON nested deeper than the runtime keeps."""


def parse_json(text: str) -> Any:
    """`json.loads`, in one decoder call for the usual stream chunk (no surrounding whitespace).

    Anything else (whitespace, trailing junk, invalid JSON) goes to `json.loads`, so results
    and errors are exactly its own; nesting too deep for the parser raises `JsonTooDeep`.
    """
    try:
        try:
            value, end = _raw_decode(text)
        except ValueError:
            return json.loads(text)
        return value if end == len(text) else json.loads(text)
    except RecursionError:
        raise JsonTooDeep("it is nested too deeply to be read") from None


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise `JsonTooDeep` when `value` (dicts and lists) nests more than `limit` deep.

    Iterative, so it measures any depth without recursing, and it stops at the first branch
    past the limit.
    """
    if not isinstance(value, (dict, list)):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise JsonTooDeep(f"it is nested more than {limit} levels deep")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words: "an object", "a list", "a string", "a number", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


def shown(value: Any) -> str:
    """A value as a JSON file spells it, cut short: `"FUZZY"`, `true`, `NaN`; containers by kind."""
    if isinstance(value, dict | list):
        return json_kind(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."
