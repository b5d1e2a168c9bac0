"""Values a session can keep and a provider can send: strict JSON whose text UTF-8 can encode.

Python's `json` lets two kinds of value through that every later request then fails on (httpx
encodes a body as UTF-8 with `allow_nan=False`; PostgreSQL's jsonb is as strict):

- text holding surrogate code points: an emoji whose JSON-escaped halves a stream split across
  two chunks ("\\ud83d", then "\\ude00"), a file name read with `errors="surrogateescape"`.
  `repair_text` pairs the halves that meet and replaces a lone one with U+FFFD; `repaired`
  does that throughout a value.
- NaN and ±Infinity, and objects JSON has no form for (a datetime, a set): `json_problem`
  names the first one by its path, so an error message can say where to look.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["json_problem", "repair_text", "repaired"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNICODE = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # a text to search for surrogates
_STRICT = json.JSONEncoder(allow_nan=False)
_SCALARS = (str, int, float, bool, type(None))


def repair_text(text: str) -> str:
    """`text` with surrogate halves that meet paired into one character and lone ones made U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def repaired(value: Any) -> Any:
    """A JSON value with `repair_text` applied to every string and key in it (the same object when none needs it).

    The value is written as JSON text, repaired as one string and read back (surrogates are never
    part of JSON's syntax, so the text stays valid): one pass in C, whatever the depth. When it
    needed repair, tuples come back as lists. A value that is not JSON is returned as it is
    (`json_problem` says why).
    """
    if isinstance(value, str):
        return repair_text(value)
    try:
        text = _UNICODE.encode(value)
    except (TypeError, ValueError, RecursionError):
        return value
    if _SURROGATE.search(text) is None:
        return value
    try:
        return json.loads(repair_text(text))
    except RecursionError:  # deeper than the decoder goes: json_problem refuses it as too deep
        return value


def json_problem(value: Any, root: str = "the value") -> str | None:
    """Why `value` is not strict JSON, naming the first culprit by its path from `root`; None when it is.

    Strict JSON: dicts, lists and tuples of str, int, float (finite), bool and None; dict keys
    of those scalar types (JSON makes them strings, as `json.dumps` does).
    """
    try:
        _STRICT.encode(value)
        return None
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        problem = _problem(value, root, set())
    except RecursionError:
        problem = None
    return problem or f"{root} is nested too deeply for JSON"


def _problem(item: Any, path: str, ancestors: set[int]) -> str | None:
    if isinstance(item, float) and not math.isfinite(item):
        return f"{path} is {item!r} (NaN and Infinity are not JSON; use None, or the value as a string)"
    if isinstance(item, _SCALARS):
        return None
    if not isinstance(item, (dict, list, tuple)):
        return f"{path} is a {type(item).__name__}, which JSON has no form for"
    if id(item) in ancestors:
        return f"{path} contains itself"
    ancestors.add(id(item))
    try:
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, _SCALARS):
                    return f"{path} has a key {key!r} of type {type(key).__name__} (JSON keys are strings)"
                if problem := _problem(child, f"{path}[{key!r}]", ancestors):
                    return problem
        else:
            for index, child in enumerate(item):
                if problem := _problem(child, f"{path}[{index}]", ancestors):
                    return problem
    finally:
        ancestors.discard(id(item))
    return None
