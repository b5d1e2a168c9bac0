"""The one place where model providers talk HTTP: retries, errors, server-sent events.

```
HttpTransport(provider=, base_url=, headers=, timeout=, retry=, http_client=)
    post_json(path, body)          -> dict                                  one JSON answer
    stream_sse(path, body)         -> AsyncIterator[ServerSentEvent]        a streamed answer
    stream_sse_batches(path, body) -> AsyncIterator[list[(event, data)]]    the same, per read
    aclose()
```
Every failure is an `AdkError(component="model")` whose category follows the HTTP status
(400/422 invalid_input, 401 unauthorized, 403 forbidden, 404 not_found, 408/504 and timeouts
timeout, 429 rate_limited, other 5xx and connection errors unavailable) and whose message
carries the provider's own words. 429, 500/502/503/504 and connection failures are retried
with exponential backoff honouring `Retry-After`. A stream is retried only before its first
event; a break after that is `unavailable` / ``stream_interrupted``, never a silent truncation.

Header values (API keys) never appear in a repr, a log line or an error message: they are
scrubbed from the provider's error text too.

httpx is imported when the first request is made, so `import adk_notebook` stays fast. An
`httpx.AsyncClient` is bound to the event loop it first ran on, and a notebook may run agents on
several loops (a worker thread per run, `asyncio.run` per call); so, unless you pass your own
`http_client`, the transport keeps one client per live event loop, closes it when
`asyncio.run` shuts that loop down, and drops the clients of closed loops.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..core.errors import AdkError, ErrorCategory

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport", "RetryPolicy", "ServerSentEvent", "SseDecoder", "parse_json"]

logger = logging.getLogger(__name__)

#: Statuses worth another attempt: rate limits and transient server trouble.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: The longest `Retry-After` we wait for; a server asking for more gets its error raised at once.
MAX_RETRY_AFTER = 60.0
_MESSAGE_LIMIT = 500
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization"})
_SECRET_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token"})
_STATUS_CATEGORY = {
    400: ErrorCategory.INVALID_INPUT,
    401: ErrorCategory.UNAUTHORIZED,
    403: ErrorCategory.FORBIDDEN,
    404: ErrorCategory.NOT_FOUND,
    408: ErrorCategory.TIMEOUT,
    413: ErrorCategory.INVALID_INPUT,
    422: ErrorCategory.INVALID_INPUT,
    429: ErrorCategory.RATE_LIMITED,
    504: ErrorCategory.TIMEOUT,
}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient failures are retried.

    Attributes:
        max_retries: Attempts after the first one (0 turns retries off).
        initial_delay: Seconds before the first retry; the delay doubles on each retry.
        max_delay: Cap on the backoff delay. A server's `Retry-After` above it is still honoured,
            up to 60 seconds.
    """

    max_retries: int = 3
    initial_delay: float = 0.25
    max_delay: float = 5.0

    def backoff(self, attempt: int) -> float:
        """The delay before retry number `attempt + 1` when the server named none."""
        return min(self.initial_delay * (2**attempt), self.max_delay)


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One server-sent event: its `event:` name (None when unnamed) and its data lines joined by "\\n".

    `data` is given as sent, including sentinels such as OpenAI's ``[DONE]``: the provider decides.
    """

    event: str | None
    data: str


class HttpTransport:
    """JSON and SSE over HTTP for one provider, with retries and error mapping.

    Args:
        provider: The provider's name for messages ("openai", "gemini", ...).
        base_url: Prefix of every request path, e.g. "https://api.openai.com/v1".
        headers: Sent with every request (API keys go here; they are never shown).
        timeout: Seconds (or an `httpx.Timeout`) for connect, read, write and pool waits.
        retry: The retry policy for 429, 5xx and connection failures.
        http_client: An `httpx.AsyncClient` to use instead of the transport's own. You own it:
            `aclose()` leaves it open, and it must be used on the event loop it was made for.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: dict[str, str] | None = None,
        timeout: float | httpx.Timeout = 60.0,
        retry: RetryPolicy = RetryPolicy(),
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self.timeout = timeout
        self._headers = {"user-agent": "adk-notebook", **{k.lower(): v for k, v in (headers or {}).items()}}
        self._secrets = _secrets_of(self._headers)
        self._given_client = http_client
        self._clients: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], httpx.AsyncClient, Any]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<HttpTransport provider={self.provider!r} base_url={_redact_url(self.base_url)!r}>"

    # -- public API ---------------------------------------------------------------------------

    async def post_json(self, path: str, body: dict[str, Any], *, params: dict[str, str] | None = None) -> dict[str, Any]:
        """POST `body` as JSON and return the JSON answer, retrying transient failures."""
        import httpx

        attempt = 0
        while True:
            client = await self._client()
            request = client.build_request("POST", self.base_url + path, json=body, params=params, headers=self._headers)
            try:
                response = await client.send(request)
            except httpx.TransportError as exc:
                error, cause = self._transport_error(exc), exc
            else:
                if response.status_code < 300:
                    try:
                        data = response.json()
                    except ValueError as exc:
                        raise self._error(
                            ErrorCategory.INTERNAL,
                            "invalid_response",
                            f"{self.provider} answered with something that is not JSON: {self._excerpt(response.text)}",
                        ) from exc
                    if not isinstance(data, dict):
                        raise self._error(
                            ErrorCategory.INTERNAL, "invalid_response", f"{self.provider} answered with JSON that is not an object."
                        )
                    return data
                error, cause = self._status_error(response.status_code, response.headers, response.content), None
            attempt = await self._wait_or_raise(error, cause, attempt)

    async def stream_sse(
        self, path: str, body: dict[str, Any], *, params: dict[str, str] | None = None
    ) -> AsyncIterator[ServerSentEvent]:
        """POST `body` and yield the server-sent events of the answer as they arrive.

        Failures before the first event are retried like `post_json`; after it, a broken
        stream raises `AdkError` (unavailable, code ``stream_interrupted``).
        """
        async with aclosing(self.stream_sse_batches(path, body, params=params)) as batches:
            async for batch in batches:
                for name, data in batch:
                    yield ServerSentEvent(name, data)

    async def stream_sse_batches(
        self, path: str, body: dict[str, Any], *, params: dict[str, str] | None = None
    ) -> AsyncIterator[list[tuple[str | None, str]]]:
        """`stream_sse` for hot paths: the `(event, data)` pairs of each network read, as one list.

        One async step per read instead of one per event (or per line), and tuples instead of
        objects: what a provider parsing thousands of chunks per answer wants. Same retries
        and errors as `stream_sse`.
        """
        import httpx

        headers = {**self._headers, "accept": "text/event-stream"}
        attempt = 0
        while True:
            client = await self._client()
            request = client.build_request("POST", self.base_url + path, json=body, params=params, headers=headers)
            started = False
            try:
                response = await client.send(request, stream=True)
                try:
                    if response.status_code >= 300:
                        content = await response.aread()
                        error, cause = self._status_error(response.status_code, response.headers, content), None
                    else:
                        decoder = SseDecoder()
                        async for chunk in response.aiter_bytes():
                            batch = decoder.feed(chunk)
                            if batch:
                                started = True
                                yield batch
                        batch = decoder.close()
                        if batch:
                            yield batch
                        return
                finally:
                    await response.aclose()
            except httpx.TransportError as exc:
                if started:
                    raise self._error(
                        ErrorCategory.UNAVAILABLE,
                        "stream_interrupted",
                        f"The {self.provider} stream broke off after it had started ({self._scrub(_describe(exc))}); "
                        "the answer is incomplete. Run the request again.",
                    ) from exc
                error, cause = self._transport_error(exc), exc
            attempt = await self._wait_or_raise(error, cause, attempt)

    async def aclose(self) -> None:
        """Close the clients this transport made (never a client passed in as `http_client`)."""
        with self._lock:
            entries = list(self._clients.values())
            self._clients.clear()
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for ref, _, keeper in entries:
            loop = ref()
            if loop is None or loop.is_closed():
                continue
            if loop is current:
                await keeper.aclose()
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(keeper.aclose(), loop)

    async def __aenter__(self) -> HttpTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- clients per event loop ---------------------------------------------------------------

    async def _client(self) -> httpx.AsyncClient:
        """This event loop's client: httpx connections cannot move from one loop to another."""
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        import httpx

        timeout = self.timeout if isinstance(self.timeout, httpx.Timeout) else httpx.Timeout(self.timeout)
        client = httpx.AsyncClient(timeout=timeout, verify=_ssl_context())
        # The keeper is an async generator parked inside try/finally: when `asyncio.run` ends
        # the loop, its shutdown_asyncgens() closes the keeper, which closes the client while
        # the loop can still close sockets (no leaked connections, no ResourceWarning).
        keeper = _keep_open(client)
        await keeper.__anext__()
        with self._lock:
            # Drop the clients of loops that are gone: their connections cannot be used again.
            for key, (ref, _, _) in list(self._clients.items()):
                old = ref()
                if old is None or old.is_closed():
                    del self._clients[key]
            self._clients[id(loop)] = (weakref.ref(loop), client, keeper)
        return client

    # -- retries ------------------------------------------------------------------------------

    async def _wait_or_raise(self, error: AdkError, cause: BaseException | None, attempt: int) -> int:
        """Sleep before the next attempt and return its number, or raise `error` if none is due."""
        retryable = error.details.get("retryable", False)
        if not retryable or attempt >= self.retry.max_retries:
            raise error from cause
        if error.retry_after is not None:
            if error.retry_after > MAX_RETRY_AFTER:
                raise error from cause
            delay = error.retry_after
        else:
            delay = self.retry.backoff(attempt)
        logger.info("%s: %s; retry %d of %d in %.2f s", self.provider, error.message, attempt + 1, self.retry.max_retries, delay)
        await asyncio.sleep(delay)
        return attempt + 1

    # -- errors -------------------------------------------------------------------------------

    def _error(self, category: ErrorCategory, code: str, message: str, **kwargs: Any) -> AdkError:
        return AdkError("model", category, code, self._scrub(message), **kwargs)

    def _status_error(self, status: int, headers: httpx.Headers, content: bytes) -> AdkError:
        category = _STATUS_CATEGORY.get(status) or (ErrorCategory.UNAVAILABLE if status >= 500 else ErrorCategory.INVALID_INPUT)
        detail = _provider_message(content)
        message = f"{self.provider} returned HTTP {status}"
        message += f": {self._excerpt(detail)}" if detail else "."
        if status == 401:
            message += " Check the API key (set the provider's environment variable or pass api_key=)."
        elif status == 403:
            message += " The API key is valid but not allowed to do this (project, region or model access)."
        elif status == 404:
            message += " Check the model name and the base URL."
        retry_after = _retry_after(headers) if status in RETRY_STATUSES else None
        details: dict[str, Any] = {"provider": self.provider, "status": status, "retryable": status in RETRY_STATUSES}
        return self._error(category, f"http_{status}", message, retry_after=retry_after, details=details)

    def _transport_error(self, exc: httpx.TransportError) -> AdkError:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            category, code, what = ErrorCategory.TIMEOUT, "timeout", "timed out"
        elif isinstance(exc, httpx.ConnectError):
            category, code, what = ErrorCategory.UNAVAILABLE, "connect_failed", "could not be reached"
        else:
            category, code, what = ErrorCategory.UNAVAILABLE, "connection_error", "dropped the connection"
        message = f"{self.provider} at {_redact_url(self.base_url)} {what} ({_describe(exc)})."
        retryable = not isinstance(exc, (httpx.UnsupportedProtocol, httpx.ProxyError))
        return self._error(category, code, message, details={"provider": self.provider, "retryable": retryable})

    def _excerpt(self, text: str) -> str:
        text = self._scrub(text.strip())
        return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


async def _keep_open(client: httpx.AsyncClient) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.aclose()


_SSL_CONTEXT: Any = None


def _ssl_context() -> Any:
    """One verified SSL context for all clients: building one costs ~50 ms (loading CA certs)."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import httpx

        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


def _secrets_of(headers: dict[str, str]) -> tuple[str, ...]:
    """The header values that must never be shown: whole values and the token after "Bearer "."""
    found: set[str] = set()
    for name, value in headers.items():
        if name in _SECRET_HEADERS or "key" in name or "token" in name or "secret" in name:
            value = value.strip()
            if len(value) >= 4:
                found.add(value)
            scheme, _, token = value.partition(" ")
            if token and len(token.strip()) >= 4:
                found.add(token.strip())
    return tuple(sorted(found, key=len, reverse=True))


def _redact_url(url: str) -> str:
    """Drop credentials and secret query parameters from a URL before showing it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(
        f"{k}=***" if k.lower() in _SECRET_PARAMS else f"{k}={v}" if sep else k
        for k, sep, v in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _provider_message(content: bytes) -> str:
    """The provider's own words from an error body: JSON `error.message` (and kin) or the text."""
    text = content.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, list) and data:  # Gemini's streaming endpoint wraps errors in a list
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            for key in ("message", "detail", "msg"):
                value = error.get(key)
                if isinstance(value, str) and value:
                    return value
                if key == "detail" and value:
                    return json.dumps(value)
    return text


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class SseDecoder:
    """Server-sent events from bytes, per the WHATWG HTML spec ("Parsing an event stream").

    `feed(bytes)` returns the `(event, data)` pairs completed so far; `close()` the last one.
    Lines may end in CRLF, LF or CR (also split across reads); comments are skipped; the
    `data:` lines of one event are joined with "\n"; `id:` and `retry:` are ignored; a
    leading BOM is dropped. An event still pending when the stream ends cleanly is
    dispatched (the body's framing was complete, so its data is too); the spec would drop
    it, which would hide an answer. Blocks are decoded as UTF-8 only once complete, so a
    character split across reads is never mangled.
    """

    __slots__ = ("_buffer", "_cr", "_first")

    def __init__(self) -> None:
        self._buffer = b""
        self._cr = False  # the last read ended in CR: it ends a line whether or not LF follows
        self._first = True

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                chunk = chunk[:-1]
                self._cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer + chunk if self._buffer else chunk
        complete, sep, rest = buffer.rpartition(b"\n\n")
        if not sep:
            self._buffer = buffer
            return []
        self._buffer = rest
        return self._events(complete.decode("utf-8", "replace"))

    def close(self) -> list[tuple[str | None, str]]:
        """The events left when the stream ends."""
        buffer, self._buffer, self._cr = self._buffer, b"", False
        return self._events(buffer.decode("utf-8", "replace")) if buffer.strip() else []

    def _events(self, text: str) -> list[tuple[str | None, str]]:
        if self._first:
            self._first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        out: list[tuple[str | None, str]] = []
        for block in text.split("\n\n"):
            if block.startswith("data: ") and "\n" not in block:  # the common case: one data line
                out.append((None, block[6:]))
            elif block:
                _parse_block(block, out)
        return out


_raw_decode = json.JSONDecoder().raw_decode


def parse_json(text: str) -> Any:
    """`json.loads`, in one decoder call for the usual stream chunk (no surrounding whitespace).

    Anything else (whitespace, trailing junk, invalid JSON) goes to `json.loads`, so results
    and errors are exactly its own.
    """
    try:
        value, end = _raw_decode(text)
    except ValueError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _parse_block(block: str, out: list[tuple[str | None, str]]) -> None:
    data: list[str] = []
    event: str | None = None
    for line in block.split("\n"):
        if not line:  # a blank line (only possible at the start of a block): dispatch
            if data:
                out.append((event, "\n".join(data)))
                data = []
            event = None
            continue
        if line[0] == ":":
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        out.append((event, "\n".join(data)))
