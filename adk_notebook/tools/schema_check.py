"""JSON-schema dicts checked with `jsonschema`, each problem worded for the model that must fix it.

Pydantic models validate with pydantic; this is for the schemas users and MCP servers write as
dicts (tool parameters, output schemas). The schema's `$schema` picks the draft (2020-12 when
it names none) and the formats in `FORMATS` are checked (any other `format` is an annotation,
as JSON Schema allows). Every problem becomes one "path: what is wrong" line, e.g.
`days: must be <= 7`. jsonschema loads with the first such schema, not with the package.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import re
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..core.error_codes import ErrorCode
from ..core.errors import AdkError

if TYPE_CHECKING:
    from jsonschema import FormatChecker, Validator
    from jsonschema.exceptions import ValidationError

__all__ = ["FORMATS", "JsonSchemaCheck", "import_jsonschema"]

FORMATS = (
    "date-time",
    "date",
    "time",
    "email",
    "idn-email",
    "uri",
    "uri-reference",
    "uuid",
    "ipv4",
    "ipv6",
    "regex",
)
"""The `format` values checked: jsonschema's own checks plus the two validators we depend on,
so every install checks the same ones (those a schema's draft defines)."""
_IRI_SYNTAX = "rfc3987_syntax"

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: True is an int to Python, not to JSON
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)
_LONGEST_FALLBACK = 300


class JsonSchemaCheck:
    """A JSON schema compiled once, checked against many values.

    Args:
        schema: The JSON schema.
        root: How a path names the value itself: "" for tool arguments (`days: ...`),
            "(root)" for an answer (`(root).days: ...`).

    Raises:
        AdkError: `invalid_schema`, the schema itself is not valid JSON Schema.
    """

    def __init__(self, schema: dict[str, Any], *, root: str = "") -> None:
        import_jsonschema()
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import Draft202012Validator, validator_for

        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            where = _path("", exc.absolute_path) or "the top level"
            raise AdkError.config(
                f"This JSON schema is not valid: at {where}, {exc.message}. Fix the schema.",
                code=ErrorCode.INVALID_SCHEMA,
            ) from None
        self._validator = cls(schema, format_checker=_format_checker(cls))
        self._root = root

    def problems(self, value: Any) -> list[str]:
        """Each way `value` breaks the schema, as "path: problem" lines ([] when it fits)."""
        errors = self._validator.iter_errors(value)
        lines = [line for error in errors for line in _describe(error, self._root)]
        return list(dict.fromkeys(lines))  # `required` errs once per missing key


def import_jsonschema() -> None:
    """Import jsonschema without building rfc3987_syntax's grammar, which takes seconds.

    jsonschema's package always imports its `_format` module, and that imports `rfc3987_syntax`
    when it is installed (Jupyter installs it) for the "iri" formats alone; `rfc3987_syntax`
    compiles a Lark grammar as it loads (4-5 s here), a stalled cell. So for that one import a
    stand-in sits in sys.modules whose `is_valid_syntax` imports the real module on first call,
    and leaves right after. jsonschema keeps every check it had, for any other user of it in
    this process too, and only an actual "iri" check (never ours: not in FORMATS) loads the
    grammar. Blocking the import instead would be simpler but would silently drop jsonschema's
    "iri" checks for everyone else in the kernel.
    """
    if (
        "jsonschema" in sys.modules
        or _IRI_SYNTAX in sys.modules
        or importlib.util.find_spec(_IRI_SYNTAX) is None  # jsonschema skips "iri" then
    ):
        return

    def is_valid_syntax(term: str, value: str) -> bool:
        real: Any = importlib.import_module(_IRI_SYNTAX)  # the stand-in has left by now
        return bool(real.is_valid_syntax(term, value))

    stand_in = ModuleType(_IRI_SYNTAX, "Loads rfc3987_syntax on the first call.")
    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]  # built at run time
    sys.modules[_IRI_SYNTAX] = stand_in
    try:
        import jsonschema  # noqa: F401  # loaded here, beside its stand-in
    finally:
        if sys.modules.get(_IRI_SYNTAX) is stand_in:
            del sys.modules[_IRI_SYNTAX]


@functools.cache
def _format_checker(cls: type[Validator]) -> FormatChecker:
    """The draft's own format checks, narrowed to `FORMATS`.

    Taken from the draft's checker, not by name from `FormatChecker`'s registry: that one holds
    the last draft registered per name (draft 3's "time" wants no offset).
    """
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name in FORMATS:
        if name in cls.FORMAT_CHECKER.checkers:
            check, raises = cls.FORMAT_CHECKER.checkers[name]
            checker.checks(name, raises)(check)
    return checker


def _describe(error: ValidationError, root: str) -> list[str]:
    path = _path(root, error.absolute_path)
    keyword, value = error.validator, error.instance
    expected: Any = error.validator_value
    if keyword == "required" and isinstance(value, dict):
        return [f"{_path(path, [key])}: required" for key in expected if key not in value]
    if keyword == "dependentRequired" and isinstance(value, dict):
        return [
            f"{_path(path, [needed])}: required when {given!r} is given"
            for given, needs in expected.items()
            if given in value
            for needed in needs
            if needed not in value
        ]
    if keyword == "additionalProperties" and expected is False and isinstance(value, dict):
        extra = _additional(value, error.schema)
        return [f"{_path(path, [key])}: not allowed" for key in extra]
    problem = _problem(error, expected)
    return [f"{path}: {problem}" if path else problem]


def _problem(error: ValidationError, expected: Any) -> str:
    keyword = error.validator
    if keyword is None:  # the `false` schema
        return "not allowed"
    if keyword == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(names)}, got {_json_type(error.instance)}"
    if keyword == "oneOf" and not error.context:  # jsonschema explains a miss by branch
        return "matches more than one of the allowed shapes, but must match exactly one"
    if keyword == "items" and expected is False:
        schema: Any = error.schema
        return f"allows at most {len(schema.get('prefixItems', []))} items"
    template = _SAYS.get(str(keyword))
    if template is None:
        text = error.message  # jsonschema's words quote the value, which may be large
        return text if len(text) <= _LONGEST_FALLBACK else f"{text[:_LONGEST_FALLBACK]}…"
    return template.format(expected, json=json.dumps(expected, default=str))


_SAYS = {
    "enum": "must be one of {json}",
    "const": "must be {json}",
    "minimum": "must be >= {0}",
    "maximum": "must be <= {0}",
    "exclusiveMinimum": "must be > {0}",
    "exclusiveMaximum": "must be < {0}",
    "multipleOf": "must be a multiple of {0}",
    "minLength": "needs at least {0} characters",
    "maxLength": "allows at most {0} characters",
    "pattern": "must match the pattern {0}",
    "format": "must be a valid {0}",
    "minItems": "needs at least {0} items",
    "maxItems": "allows at most {0} items",
    "uniqueItems": "items must be unique",
    "minProperties": "needs at least {0} properties",
    "maxProperties": "allows at most {0} properties",
    "anyOf": "does not match any of the allowed shapes",
    "oneOf": "does not match any of the allowed shapes",
    "not": "must not match {json}",
    "contains": "needs an item that matches {json}",
}


def _additional(value: dict[str, Any], schema: Any) -> list[str]:
    """The keys of `value` that neither `properties` nor `patternProperties` of `schema` cover."""
    named = schema.get("properties", {})
    patterns = [re.compile(pattern) for pattern in schema.get("patternProperties", {})]
    return [key for key in value if key not in named and not any(p.search(key) for p in patterns)]


def _json_type(value: Any) -> str:
    return next(
        (name for kind, name in _JSON_TYPES if isinstance(value, kind)),
        type(value).__name__,
    )


def _path(path: str, parts: Any) -> str:
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path
