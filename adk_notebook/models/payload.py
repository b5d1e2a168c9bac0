"""Provider JSON in, typed values out: the one place where a malformed answer becomes an AdkError.

```
Payload(provider, secrets)                     one per model
    loads(text, field)                         a body, a stream chunk: JSON, or invalid_response
    arguments(raw, field)                      tool-call arguments, at most MAX_DEPTH deep
    checked_depth(value, field)                a kept value (arguments an object carried), same bound
    get_str / get_int / get_bool (obj, key, at)   obj[key] of that type; None when absent or null
    get_dict / get_list (obj, key, at)         the same for containers; {} / [] when absent or null
    get_dicts(obj, key, at)                    a list whose items are all objects
    object(value, field)                       a whole payload that must be an object
    final(content)                             the complete answer, scrubbed once more
    wrong(field, value, expected)              the error for a field of another type
    invalid(field, problem)                    the error for any other malformed field
    error(category, code, message, **details)  every other error the provider reports
```
A field of the wrong type raises AdkError(model, internal, ``invalid_response``) whose message
and `details["field"]` name the field by its path in the payload (``choices[0].delta.content``)
and whose `details["provider"]` names the provider; a null reads as "not given". Every error
made here goes through the provider's `Secrets`, so a key echoed back (in an error message, an
excerpt) is never shown. The streamed text path of a provider checks its few fields inline,
with `wrong` for the error, so a chunk costs no more than a type test per field.
"""

from __future__ import annotations

from typing import Any

from ..core.content import Content
from ..core.errors import AdkError, ErrorCategory
from ..core.json_text import JsonTooDeep, check_depth, parse_json
from .keys import Secrets

__all__ = ["Payload"]

_EXCERPT = 200
_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list", dict: "an object"}


class Payload:
    """Typed reads from one provider's JSON (see the module docstring)."""

    __slots__ = ("provider", "secrets")

    def __init__(self, provider: str, secrets: Secrets) -> None:
        self.provider = provider
        self.secrets = secrets

    # -- whole texts ---------------------------------------------------------------------------
    def loads(self, text: str, field: str) -> Any:
        """Parse a JSON text; `field` names it in the error ("response body", "stream chunk")."""
        try:
            return parse_json(text)
        except ValueError as exc:
            raise self.invalid(field, f"is not JSON ({exc}): {excerpt(text)}") from None

    def arguments(self, raw: str, field: str) -> Any:
        """Tool-call arguments text, parsed: a ValueError when it is not JSON (the model is told and
        may try again), an AdkError when it nests deeper than the runtime keeps."""
        try:
            value = parse_json(raw)
        except JsonTooDeep as exc:
            raise self.invalid(field, str(exc)) from None
        return self.checked_depth(value, field)

    def checked_depth(self, value: Any, field: str) -> Any:
        """`value` itself, once it is known to nest no deeper than the runtime keeps."""
        try:
            check_depth(value)
        except ValueError as exc:
            raise self.invalid(field, str(exc)) from None
        return value

    # -- typed fields --------------------------------------------------------------------------
    def get_str(self, obj: dict[str, Any], key: str, at: str = "") -> str | None:
        value = obj.get(key)
        if value is None or type(value) is str:
            return value
        raise self.wrong(path(at, key), value, str)

    def get_int(self, obj: dict[str, Any], key: str, at: str = "") -> int | None:
        value = obj.get(key)
        if value is None or type(value) is int:
            return value
        raise self.wrong(path(at, key), value, int)

    def get_bool(self, obj: dict[str, Any], key: str, at: str = "") -> bool | None:
        value = obj.get(key)
        if value is None or type(value) is bool:
            return value
        raise self.wrong(path(at, key), value, bool)

    def get_dict(self, obj: dict[str, Any], key: str, at: str = "") -> dict[str, Any]:
        """An object field; {} when absent or null."""
        value = obj.get(key)
        if type(value) is dict:
            return value
        if value is None:
            return {}
        raise self.wrong(path(at, key), value, dict)

    def get_list(self, obj: dict[str, Any], key: str, at: str = "") -> list[Any]:
        """A list field; [] when absent or null."""
        value = obj.get(key)
        if type(value) is list:
            return value
        if value is None:
            return []
        raise self.wrong(path(at, key), value, list)

    def get_dicts(self, obj: dict[str, Any], key: str, at: str = "") -> list[dict[str, Any]]:
        """A list field whose items are all objects."""
        items = self.get_list(obj, key, at)
        for i, item in enumerate(items):
            if type(item) is not dict:
                raise self.wrong(f"{path(at, key)}[{i}]", item, dict)
        return items

    def object(self, value: Any, field: str) -> dict[str, Any]:
        """A whole payload (a body, a chunk) that must be an object."""
        if type(value) is dict:
            return value
        raise self.wrong(field, value, dict)

    def final(self, content: Content) -> Content:
        """The complete answer with every secret scrubbed from its texts and calls, in place.

        Each streamed chunk was scrubbed as it came; a key cut across two chunks is whole only
        once the provider has joined them, here.
        """
        if not self.secrets:
            return content
        scrub = self.secrets.scrub
        for part in content.parts:
            if part.text is not None:
                part.text = scrub(part.text)
            call = part.function_call
            if call is not None:
                call.name, call.args = scrub(call.name), self.secrets.scrub_value(call.args)
        return content

    # -- errors --------------------------------------------------------------------------------
    def wrong(self, field: str, value: Any, expected: type) -> AdkError:
        return self.invalid(field, f"is {describe(value)}, where {_KINDS[expected]} belongs")

    def invalid(self, field: str, problem: str) -> AdkError:
        return self.error(
            ErrorCategory.INTERNAL,
            "invalid_response",
            f"{self.provider} sent a malformed answer: `{field}` {problem}. If this keeps happening, check that "
            "base_url points at a server of this kind.",
            field=field,
        )

    def error(self, category: ErrorCategory | str, code: str, message: str, **details: Any) -> AdkError:
        """An AdkError about this provider's answer, with every secret scrubbed from it."""
        error = AdkError("model", category, code, message, details={"provider": self.provider, **details})
        return self.secrets.error(error)


def path(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def excerpt(text: str) -> str:
    return repr(text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…")


def describe(value: Any) -> str:
    """What a value is, without printing all of it (it may be huge or nested thousands deep)."""
    if value is None:
        return "null"
    kind = _KINDS.get(type(value), type(value).__name__)
    if isinstance(value, (list, dict)):
        return f"{kind} of {len(value)} item{'s' if len(value) != 1 else ''}"
    shown = repr(value)
    return f"{kind} ({shown if len(shown) <= 40 else shown[:39] + '…'})"
