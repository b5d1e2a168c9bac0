"""What reading google-adk's eval files shares: its field spelling, and problems told as lines.

A damaged file is reported as one line per problem, each naming the file, where in it (the
case, the field's path) and what the field should be, in the file's own JSON words ("a list",
"an object", `true`), never pydantic's internals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from ..core.json_text import parse_json, shown

__all__ = ["MAX_PROBLEMS", "FileModel", "Loc", "field_path", "problem_lines", "read_json"]

#: Problems listed in one error; the rest are counted.
MAX_PROBLEMS = 10

Loc = tuple[int | str, ...]


class FileModel(BaseModel):
    """google-adk's EvalBaseModel (camelCase accepted too), plus: unknown fields are kept, and
    NaN / Infinity are no numbers (JSON has none; Python's reader lets them through)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", allow_inf_nan=False)


def read_json(path: Path, what: str, fail: Callable[[str], Exception]) -> Any:
    """The JSON value in `path`; `fail(message)` for a file that cannot be read, is empty or is not JSON."""
    name = repr(str(path))
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise fail(f"cannot read the {what} {name}: {exc.strerror or exc}.") from exc
    except UnicodeDecodeError as exc:
        raise fail(f"{name} is not UTF-8 text (byte {exc.start}); save the {what} as UTF-8 JSON.") from None
    if not text.strip():
        raise fail(f"{name} is empty; it should hold JSON, e.g. {_EXAMPLES.get(what, '{...}')}.")
    try:
        return parse_json(text)
    except ValueError as exc:
        raise fail(f"{name} is cut short or is not JSON: {exc}.") from None


_EXAMPLES = {
    "eval set": '{"eval_set_id": "...", "eval_cases": [...]}',
    "test_config.json": '{"criteria": {"tool_trajectory_avg_score": 1.0}}',
}


def problem_lines(exc: ValidationError, where: Callable[[Loc], tuple[str, str]]) -> list[str]:
    """One line per problem of `exc`: `where(loc)` gives its prefix (file, case) and the field's
    path, and the line says what the field should be and what it was."""
    errors = exc.errors(include_url=False)
    lines = []
    for error in errors[:MAX_PROBLEMS]:
        prefix, path = where(error["loc"])
        lines.append(f"{prefix}{path + ' ' if path else ''}{_expected(error)}")
    if len(errors) > MAX_PROBLEMS:
        lines.append(f"... and {len(errors) - MAX_PROBLEMS} more problems.")
    return lines


def field_path(loc: Loc, base: str = "") -> str:
    """`conversation[0].user_content` for ("conversation", 0, "userContent"), after `base`."""
    path = base
    for step in loc:
        path += f"[{step}]" if isinstance(step, int) else f"{'.' if path else ''}{to_snake(step)}"
    return path


_SHOULD_BE = {
    "missing": "is missing",
    "list_type": "should be a list",
    "dict_type": "should be an object",
    "model_type": "should be an object",
    "model_attributes_type": "should be an object",
    "string_type": "should be a string",
    "int_type": "should be a whole number",
    "int_parsing": "should be a whole number",
    "int_from_float": "should be a whole number",
    "float_type": "should be a number",
    "float_parsing": "should be a number",
    "finite_number": "should be a finite number (NaN and Infinity are not JSON)",
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
}


def _expected(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in _SHOULD_BE:
        said = _SHOULD_BE[kind]
    elif kind == "greater_than":
        said = f"should be above {ctx['gt']}"
    elif kind == "greater_than_equal":
        said = f"should be at least {ctx['ge']}"
    elif kind == "less_than_equal":
        said = f"should be at most {ctx['le']}"
    elif kind == "value_error":
        said = str(ctx.get("error", error["msg"]))
    else:
        said = str(error["msg"])
    if kind == "missing" or (kind == "value_error" and isinstance(error["input"], dict | list)):
        return said  # a check of a whole object says what is wrong with it
    return f"{said} (got {shown(error['input'])})"
