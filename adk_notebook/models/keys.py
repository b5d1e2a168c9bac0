"""API keys: read from the usual environment variables, one error that says which to set, and
`Secrets`, the one function that hides every credential a provider was configured with.

The keys themselves are only ever placed in request headers by the providers; nothing here
prints or stores them.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.errors import AdkError

__all__ = ["ANTHROPIC_KEYS", "GEMINI_KEYS", "OPENAI_KEYS", "Secrets", "api_key_from_env", "missing_api_key"]

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
        "config",
        "unauthorized",
        "missing_api_key",
        f"{what} needs an API key: set the {names} environment variable, or {remedy}.",
        details={"variables": list(variables)},
    )


#: Shorter values are not hidden: they cannot be credentials worth the name, and hiding them would
#: blank ordinary words (and could cut a JSON text apart) wherever they occur.
MIN_SECRET_LENGTH = 8
#: Headers the transport itself sets: their values are public.
_PUBLIC_HEADERS = frozenset({"user-agent", "accept", "content-type", "anthropic-version"})
MASK = "***"


class Secrets:
    """The credential values one provider was configured with, and `scrub`, which hides them.

    Every header value (the API key, and each of `extra_headers`, whatever its name: Cookie,
    X-Auth, ...), the pieces of those values a server might echo alone (the token after
    "Bearer ", each cookie's value), and the user and password of the base URL. The transport
    passes every text that comes from the provider through `scrub` before anything reads it.
    """

    __slots__ = ("values",)

    def __init__(self, values: Iterable[str] = (), *, min_length: int = MIN_SECRET_LENGTH) -> None:
        kept = {v for v in values if isinstance(v, str) and len(v) >= min_length}
        self.values = tuple(sorted(kept, key=len, reverse=True))  # longest first: "Bearer k" before "k"

    @classmethod
    def of(
        cls,
        headers: Mapping[str, str],
        userinfo: tuple[str, str] | None = None,
        *,
        also: Iterable[str] = (),
        min_length: int = MIN_SECRET_LENGTH,
    ) -> Secrets:
        """The secrets of these headers and userinfo, and the values `also` names."""
        values: list[str] = list(also)
        for name, value in headers.items():
            if name.lower() not in _PUBLIC_HEADERS:
                values += _pieces(value)
        if userinfo is not None:
            user, password = userinfo
            values += [user, password, f"{user}:{password}"]
        return cls(values, min_length=min_length)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __repr__(self) -> str:
        return f"<Secrets: {len(self.values)} values>"

    def scrub(self, text: str) -> str:
        """`text` with every secret replaced by ``***``."""
        for secret in self.values:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def scrub_value(self, value: Any) -> Any:
        """A JSON-like value (error details, tool arguments) with every string scrubbed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub_value(k): self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.scrub_value(v) for v in value)
        return value

    def error(self, error: AdkError) -> AdkError:
        """`error` with its message, code and details scrubbed (itself when nothing shows a secret)."""
        if not self.values:
            return error
        message, code, details = self.scrub(error.message), self.scrub(error.code), self.scrub_value(error.details)
        if (message, code, details) == (error.message, error.code, error.details):
            return error
        return AdkError(error.component, error.category, code, message, retry_after=error.retry_after, details=details)


def _pieces(value: str) -> list[str]:
    """A header value, and the parts of it a server might echo on their own."""
    value = value.strip()
    pieces = [value]
    scheme, _, token = value.partition(" ")
    if token and scheme.isalpha():  # "Bearer <token>", "Basic <base64>"
        pieces.append(token.strip())
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
            except ValueError:
                pass
            else:
                pieces += [decoded, decoded.partition(":")[2]]
    for item in value.split(";"):  # cookies: "a=1; session=<value>"
        _, sep, rest = item.strip().partition("=")
        if sep:
            pieces += [item.strip(), rest.strip()]
    return pieces
