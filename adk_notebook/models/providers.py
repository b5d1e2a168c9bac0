"""Providers: where a model's requests go and how they are authorised.

A model translates our types to one wire format and back (gemini.py, openai.py, anthropic.py);
a provider owns the rest: the API key (given, or read from the environment when a request is
sent), the base URL, the headers and the HTTP client. Every server that speaks OpenAI's Chat
Completions is a provider of the one `OpenAIModel`, and what it does differently is data on its
`OpenAIProfile`, read by the model's body builder.

```
GeminiProvider       GeminiModel     GOOGLE_API_KEY | GEMINI_API_KEY   x-goog-api-key
AnthropicProvider    AnthropicModel  ANTHROPIC_API_KEY                 x-api-key
OpenAIProvider       OpenAIModel     OPENAI_API_KEY, OPENAI_BASE_URL   Bearer (no key needed off api.openai.com)
DeepSeekProvider | GroqProvider | OpenRouterProvider                   Bearer, DEEPSEEK_ / GROQ_ / OPENROUTER_API_KEY
OllamaProvider (OLLAMA_HOST) | VLLMProvider | OpenAICompatibleProvider(name, base_url=...)   no key unless given
```
e.g. `OpenAIModel("deepseek-chat", provider=DeepSeekProvider())`. A provider is made without
its key: the key is needed only to send, so a model's request body can always be shown, and a
key set in the environment after the model was made is used by its next request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, TypeVar, Unpack
from urllib.parse import urlsplit

from ..core.errors import AdkError
from .http import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TIMEOUT,
    HttpTransport,
    RetryPolicy,
    _checked_base_url,
    _redact_url,
)
from .keys import (
    ANTHROPIC_KEYS,
    GEMINI_KEYS,
    OPENAI_KEYS,
    api_key_from_env,
    missing_api_key,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OPENAI_COMPATIBLE",
    "AnthropicProvider",
    "Connection",
    "DeepSeekProvider",
    "GeminiProvider",
    "GroqProvider",
    "OllamaProvider",
    "OpenAICompatibleProvider",
    "OpenAIProfile",
    "OpenAIProvider",
    "OpenRouterProvider",
    "Provider",
    "VLLMProvider",
    "chosen_provider",
    "openai_provider",
]

P = TypeVar("P", bound="Provider")

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_VERSION = "2023-06-01"


class Connection(TypedDict, total=False):
    """How a provider sends: what every provider (and every model's shorthand) accepts.

    Attributes:
        api_key: The key; by default read from the provider's environment variables when a
            request is sent. Never shown in reprs, logs or errors.
        headers: Sent with every request (e.g. OpenRouter's "HTTP-Referer"); values never shown.
        http_client: An `httpx.AsyncClient` to send requests with (you own it and close it).
        retry: How 429s, 5xx and dropped connections are retried.
        timeout: Seconds one call may take in all: connecting, sending, and reading the answer
            to its last streamed event, retries included (``deadline_exceeded`` past it).
        idle_timeout: Seconds to wait for the connection or for the next bytes of the answer;
            a stall before the answer starts is retried while `timeout` leaves time.
    """

    api_key: str | None
    headers: dict[str, str] | None
    http_client: httpx.AsyncClient | None
    retry: RetryPolicy | None
    timeout: float | None
    idle_timeout: float


class Provider:
    """A model provider: API key lookup, base URL, headers and the HTTP transport.

    Subclasses are data: `name` (in messages and model strings), `default_base_url`,
    `key_variables` (where the key is looked up, in order), `model_class` and `key_help` (for
    the error that says which key to set), `key_header` and `key_format` (how the key is
    sent), and `api_headers` (what the API always wants).

    Args:
        base_url: The API root; by default the provider's own.
        **connection: api_key, headers, http_client, retry, timeout, idle_timeout (`Connection`).

    Raises:
        AdkError: (config, invalid_input, ``missing_base_url``) for a provider with no default
            base URL when none is given.
    """

    name: str = "provider"
    default_base_url: ClassVar[str | None] = None
    key_variables: ClassVar[tuple[str, ...]] = ()
    model_class: ClassVar[str] = "the model"
    key_help: ClassVar[str] = ""
    key_header: ClassVar[str] = "authorization"
    key_format: ClassVar[str] = "Bearer {}"
    api_headers: ClassVar[dict[str, str]] = {}

    def __init__(self, *, base_url: str | None = None, **connection: Unpack[Connection]) -> None:
        url = base_url or self._default_base_url()
        if not url:
            raise AdkError.config(
                f"{type(self).__name__}({self.name!r}) needs base_url= (the server's API root, e.g. "
                "'http://localhost:11434/v1').",
                code="missing_base_url",
            )
        # A base_url that cannot be used is an error now, not at the first request.
        _checked_base_url(self.name, url)
        self.base_url = url.rstrip("/")
        self.headers = dict(connection.get("headers") or {})
        self.http_client = connection.get("http_client")
        self.retry = connection.get("retry") or RetryPolicy()
        self.timeout = connection.get("timeout", DEFAULT_TIMEOUT)
        self.idle_timeout = connection.get("idle_timeout", DEFAULT_IDLE_TIMEOUT)
        self._api_key = connection.get("api_key") or None
        self._transport: HttpTransport | None = None
        self._sent_key: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} base_url={_redact_url(self.base_url)!r}>"

    def _default_base_url(self) -> str | None:
        return self.default_base_url

    def key_required(self) -> bool:
        """Whether requests need a key (a local server needs none)."""
        return bool(self.key_variables)

    def api_key(self) -> str | None:
        """The key the next request would carry: the one given, else the environment's now."""
        return self._api_key or api_key_from_env(self.key_variables)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """The headers that carry `api_key`, and those the API always wants."""
        key = {self.key_header: self.key_format.format(api_key)} if api_key else {}
        return {**self.api_headers, **key}

    def check_key(self) -> str | None:
        """The key requests would carry now (None for a server that needs none).

        Raises:
            AdkError: (config, unauthorized, ``missing_api_key``), naming the variable to set,
                when requests need a key and none is set.
        """
        key = self.api_key()
        if key is None and self.key_required():
            raise self.missing_key()
        return key

    def missing_key(self) -> AdkError:
        remedy = f"pass {self.model_class}(api_key=...)" + (f" ({self.key_help})" if self.key_help else "")
        return missing_api_key(self.model_class, self.key_variables, remedy)

    @property
    def transport(self) -> HttpTransport:
        """The transport for the next request, carrying the key set now.

        Made on first use from this provider's settings, and again when the key changed.

        Raises:
            AdkError: (config, unauthorized, ``missing_api_key``) when a key is needed and none is set.
        """
        key = self.check_key()
        if self._transport is None or key != self._sent_key:
            self._transport = HttpTransport(
                provider=self.name,
                base_url=self.base_url,
                headers={**self.headers, **self.auth_headers(key)},
                timeout=self.timeout,
                idle_timeout=self.idle_timeout,
                retry=self.retry,
                http_client=self.http_client,
            )
            self._sent_key = key
        return self._transport

    async def aclose(self) -> None:
        """Close the HTTP connections this provider opened."""
        if self._transport is not None:
            await self._transport.aclose()


class GeminiProvider(Provider):
    """Google's Generative Language API (AI Studio keys), for `GeminiModel`."""

    name = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    key_variables = GEMINI_KEYS
    model_class = "GeminiModel"
    key_help = "keys: https://aistudio.google.com/apikey"

    key_header = "x-goog-api-key"
    key_format = "{}"


class AnthropicProvider(Provider):
    """Anthropic's Messages API, for `AnthropicModel`."""

    name = "anthropic"
    default_base_url = "https://api.anthropic.com"
    key_variables = ANTHROPIC_KEYS
    model_class = "AnthropicModel"
    key_help = "keys: https://console.anthropic.com/settings/keys"

    key_header = "x-api-key"
    key_format = "{}"
    api_headers: ClassVar[dict[str, str]] = {"anthropic-version": ANTHROPIC_VERSION}


@dataclass(frozen=True, slots=True)
class OpenAIProfile:
    """What one Chat Completions server does its own way; `OpenAIModel` builds its body from it.

    Attributes:
        max_tokens_field: The body field of the answer's token limit.
        top_k: Whether the server accepts `top_k` (not an OpenAI field; some servers reject it).
        json_schema: Whether `response_format` may carry a JSON schema; else it is
            ``json_object`` and the schema travels in a system message.
    """

    max_tokens_field: str = "max_tokens"
    top_k: bool = True
    json_schema: bool = True


class OpenAICompatibleProvider(Provider):
    """Any server that speaks OpenAI's Chat Completions: llama.cpp's server, a proxy, your own.

    Args:
        name: The server's name in messages and in `model_id` ("llama.cpp", "proxy", ...).
        base_url: The API root ending in "/v1".
        profile: What it does its own way (default: what most servers accept).
        **connection: api_key (sent as a Bearer token; none by default), headers, http_client,
            retry, timeout, idle_timeout.
    """

    name = "openai-compatible"
    model_class = "OpenAIModel"
    profile: OpenAIProfile = OpenAIProfile()

    def __init__(
        self,
        name: str | None = None,
        *,
        base_url: str | None = None,
        profile: OpenAIProfile | None = None,
        **connection: Unpack[Connection],
    ) -> None:
        if name:
            self.name = name
        if profile is not None:
            self.profile = profile
        super().__init__(base_url=base_url, **connection)


class OpenAIProvider(OpenAICompatibleProvider):
    """OpenAI itself; with OPENAI_BASE_URL (or base_url=) any compatible server, which then needs no key."""

    name = "openai"
    default_base_url = OPENAI_BASE_URL
    key_variables = OPENAI_KEYS
    key_help = "for a local OpenAI-compatible server, pass base_url= instead"
    profile = OpenAIProfile(max_tokens_field="max_completion_tokens", top_k=False)

    def _default_base_url(self) -> str | None:
        return os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL

    def key_required(self) -> bool:
        # OpenAI always wants a key; a local server at OPENAI_BASE_URL may need none.
        return self.base_url == OPENAI_BASE_URL


class DeepSeekProvider(OpenAICompatibleProvider):
    """DeepSeek's API: no `top_k`, and structured output only as ``json_object``."""

    name = "deepseek"
    default_base_url = "https://api.deepseek.com"
    key_variables = ("DEEPSEEK_API_KEY",)
    profile = OpenAIProfile(top_k=False, json_schema=False)


class GroqProvider(OpenAICompatibleProvider):
    """Groq's OpenAI-compatible API: no `top_k`."""

    name = "groq"
    default_base_url = "https://api.groq.com/openai/v1"
    key_variables = ("GROQ_API_KEY",)
    profile = OpenAIProfile(top_k=False)


class OpenRouterProvider(OpenAICompatibleProvider):
    """OpenRouter, many vendors' models behind one Chat Completions API (headers= for its
    "HTTP-Referer" and "X-Title")."""

    name = "openrouter"
    default_base_url = "https://openrouter.ai/api/v1"
    key_variables = ("OPENROUTER_API_KEY",)


class OllamaProvider(OpenAICompatibleProvider):
    """Ollama's OpenAI-compatible API at OLLAMA_HOST (default http://localhost:11434); no key."""

    name = "ollama"

    def _default_base_url(self) -> str:
        """OLLAMA_HOST as Ollama reads it ("host", "host:port" or a URL) plus "/v1"."""
        host = (os.environ.get("OLLAMA_HOST") or "").strip() or "http://localhost:11434"
        parts = urlsplit(host if "://" in host else "http://" + host)
        hostname = parts.hostname or "127.0.0.1"
        if hostname in ("0.0.0.0", "::"):  # a bind address, not one to connect to
            hostname = "127.0.0.1"
        if ":" in hostname:
            hostname = f"[{hostname}]"
        port = parts.port or (443 if parts.scheme == "https" else 11434)
        path = parts.path.rstrip("/")
        return f"{parts.scheme}://{hostname}:{port}{path}" + ("" if path.endswith("/v1") else "/v1")


class VLLMProvider(OpenAICompatibleProvider):
    """vLLM's OpenAI-compatible server (`vllm serve`, default http://localhost:8000/v1)."""

    name = "vllm"
    default_base_url = "http://localhost:8000/v1"


#: The named Chat Completions providers, by the name their model strings use ("deepseek:...").
OPENAI_COMPATIBLE: dict[str, type[OpenAICompatibleProvider]] = {
    cls.name: cls
    for cls in (
        OpenAIProvider,
        OllamaProvider,
        DeepSeekProvider,
        GroqProvider,
        OpenRouterProvider,
        VLLMProvider,
    )
}


def openai_provider(
    name: str | None = None,
    *,
    base_url: str | None = None,
    **connection: Unpack[Connection],
) -> OpenAICompatibleProvider:
    """The Chat Completions provider called `name` (default "openai"); any other name is a plain
    compatible server at `base_url`."""
    name = name or "openai"
    known = OPENAI_COMPATIBLE.get(name)
    if known is None:
        return OpenAICompatibleProvider(name, base_url=base_url, **connection)
    return known(base_url=base_url, **connection)


_SHORTHAND_DEFAULTS: dict[str, Any] = {
    "timeout": DEFAULT_TIMEOUT,
    "idle_timeout": DEFAULT_IDLE_TIMEOUT,
}


def chosen_provider(model_class: str, provider: P | None, make: Callable[..., P], **shorthand: Any) -> P:
    """A model's provider: `provider` when one is passed, else `make(**shorthand)`.

    The shorthand (api_key=, base_url=, http_client=, ...) builds the model's own provider; a
    provider passed in has its own, so a shorthand option given beside it is an error rather
    than silently ignored.
    """
    if provider is None:
        return make(**shorthand)
    given = sorted(k for k, v in shorthand.items() if v is not None and v != _SHORTHAND_DEFAULTS.get(k))
    if given:
        raise AdkError.config(
            f"{model_class}(provider=...) takes its connection from the provider: pass {', '.join(given)} to "
            f"{type(provider).__name__}(...) instead.",
            code="conflicting_options",
        )
    return provider
