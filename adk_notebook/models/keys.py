"""API keys: read from the usual environment variables, and one error that says which to set.

The keys themselves are only ever placed in request headers by the providers; nothing here
prints or stores them.
"""

from __future__ import annotations

import os

from ..core.errors import AdkError

__all__ = ["ANTHROPIC_KEYS", "GEMINI_KEYS", "OPENAI_KEYS", "api_key_from_env", "missing_api_key"]

# Where each provider's key is looked for, in order.
GEMINI_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
OPENAI_KEYS = ("OPENAI_API_KEY",)
ANTHROPIC_KEYS = ("ANTHROPIC_API_KEY",)


def api_key_from_env(variables: tuple[str, ...]) -> str | None:
    """The first non-empty value among `variables`, or None."""
    for variable in variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return None


def missing_api_key(what: str, variables: tuple[str, ...], remedy: str) -> AdkError:
    """The error for a provider that needs a key none of `variables` holds.

    Args:
        what: Who needs it, e.g. "Model 'openai:gpt-4o-mini'" or "GeminiModel".
        variables: The environment variables that would provide it, in order.
        remedy: The other way out, e.g. "pass GeminiModel(api_key=...)".
    """
    names = " or ".join(variables)
    # How to set a variable depends on where the user is: the notebook and the terminal add that.
    return AdkError(
        "config", "unauthorized", "missing_api_key",
        f"{what} needs an API key: set the {names} environment variable, or {remedy}.",
        details={"variables": list(variables)},
    )
