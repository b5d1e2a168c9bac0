"""Tool names: what every model provider accepts, checked when a tool is defined."""

from __future__ import annotations

import re

from ..core.errors import AdkError

__all__ = ["check_tool_name"]

# The names every provider accepts (OpenAI and Anthropic allow no dots; Gemini allows more).
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def check_tool_name(name: str) -> str:
    """Provider APIs accept only short identifier-like names; say so before a request fails."""
    if not isinstance(name, str) or not _VALID_NAME.fullmatch(name):
        raise AdkError.config(
            f"Tool name {name!r} is not accepted by model providers: it must start with a letter or "
            "underscore and contain only letters, digits, '_' or '-', at most 64 characters "
            "(e.g. 'get_weather'); pass name=... to choose another.",
            code="invalid_tool_name",
        )
    return name
