"""Server text with the server's secrets hidden, where it enters: answers, errors, the SDK's logs.

A server may repeat what it was given (an env value, the Authorization header, the bearer token
alone) in an error, a result, a progress line or a log line. Everything a server says passes
through `redacted` (answers) or `redacted_error` (errors) once, on its way out of the SDK,
so whatever is made from it later (the model's function response, the AdkError and its repr,
trace spans, `%adk mcp`) never sees the values. Its stderr is redacted as it is read
(`_stderr.py`); the SDK logs what it receives at DEBUG, so its loggers get `LOG_FILTER`.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, TypeVar

from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from ..core.errors import AdkError
from ..models.keys import Secrets

__all__ = ["LOG_FILTER", "redacted", "redacted_error", "watch"]

T = TypeVar("T")
_BYTES_FIELDS = frozenset({"data", "blob"})  # base64: scanning is harmless, replacing would corrupt it


def redacted(secrets: Secrets, value: T) -> T:
    """`value` (an SDK result model, or JSON-like data) with every secret hidden, in place for models."""
    if not secrets:
        return value
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            field = getattr(value, name)
            if name in _BYTES_FIELDS and isinstance(field, str):
                continue
            if isinstance(field, (str, dict, list, BaseModel)):
                object.__setattr__(value, name, redacted(secrets, field))
        return value
    if isinstance(value, list):
        return [redacted(secrets, item) for item in value]  # type: ignore[return-value]  # the same shape
    if isinstance(value, dict):
        return {secrets.scrub(str(k)): redacted(secrets, v) for k, v in value.items()}  # type: ignore[return-value]  # the same shape
    if isinstance(value, str):
        return secrets.scrub(value)  # type: ignore[return-value]  # a str for a str
    return value


def redacted_error(secrets: Secrets, exc: T) -> T:
    """A protocol error (the server's own words) as a new MCPError with its secrets hidden, and an
    AdkError made from what the server sent likewise; any other exception (the transport's
    words) as it is: messages made from those redact them."""
    if not secrets:
        return exc
    if isinstance(exc, AdkError):
        return secrets.error(exc)  # type: ignore[return-value]  # an AdkError for an AdkError
    if isinstance(exc, MCPError):
        return MCPError(exc.code, secrets.scrub(exc.message), redacted(secrets, exc.error.data))  # type: ignore[return-value]  # an MCPError for an MCPError
    return exc


# -- the SDK's logs ------------------------------------------------------------------------------
_watched: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def watch(owner: Any) -> None:
    """Hide `owner.secrets` (a server spec's) in the SDK's log records while `owner` lives, and
    put the filter on every `mcp` logger there is by now (the SDK's modules are loaded)."""
    _watched[id(owner)] = owner
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if (name == "mcp" or name.startswith("mcp.")) and isinstance(logger, logging.Logger):
            if LOG_FILTER not in logger.filters:
                logger.addFilter(LOG_FILTER)


class _LogFilter(logging.Filter):
    """Rewrites a record's message (and its traceback) with every watched secret hidden."""

    def filter(self, record: logging.LogRecord) -> bool:
        owners = list(_watched.values())
        if not owners:
            return True
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, None
        for owner in owners:
            message = owner.secrets.scrub(message)
        record.msg, record.args = message, None
        return True


LOG_FILTER = _LogFilter()
