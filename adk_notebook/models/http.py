"""The one place where model providers talk HTTP: retries, errors, deadlines, server-sent events.

```
HttpTransport(provider=, base_url=, headers=, timeout=, idle_timeout=, retry=, http_client=)
    post_json(path, body)          -> dict                                  one JSON answer
    stream_sse(path, body)         -> AsyncIterator[ServerSentEvent]        a streamed answer
    stream_sse_batches(path, body) -> AsyncIterator[list[(event, data)]]    the same, per read
    payload                        the provider's typed reader of what came back (payload.py)
    aclose()
```
Every failure is an `AdkError(component="model")` whose category follows the HTTP status
(400/422 invalid_input, 401 unauthorized, 403 forbidden, 404 not_found, 408/504 and timeouts
timeout, 429 rate_limited, other 5xx and connection errors unavailable) and whose message
carries the provider's own words. What `AdkError.is_retryable()` says is worth another attempt
is retried (429, 500/502/503/504, connection failures and stalls), with exponential backoff
honouring `Retry-After` (a 5xx whose body cannot even be decoded too). A stream is retried only before its first event; a break after that is `unavailable` /
``stream_interrupted``, never a silent truncation.

Time: `timeout` bounds one call as a whole, from connecting to the last event of the answer,
retries and their waits included (``deadline_exceeded``); `idle_timeout` bounds each wait for
the network (connect, a read), and a stall before the first event is retried while the call
has time left. One server-sent event may hold at most `max_event_bytes` (``event_too_large``),
so a stream without event boundaries cannot grow the decoder's buffer without bound; the
decoder's work is linear in the bytes received.

Secrets: the credentials the transport was configured with (every header value, the user and
password of `base_url`, sent as Basic auth and never in the URL) never appear in a repr, a log
line, an error message or an event. Every text that comes from the provider (each body, each
event's data) passes through `Secrets.scrub` before anything reads it, and every error made
here or by the provider's `payload` is scrubbed once more (keys.py).

httpx is imported when the first request is made, so `import adk_notebook` stays fast. An
`httpx.AsyncClient` is bound to the event loop it first ran on, and a notebook may run agents on
several loops (a worker thread per run, `asyncio.run` per call); so, unless you pass your own
`http_client`, the transport keeps one client per live event loop, closes it when
`asyncio.run` shuts that loop down, and drops the clients of closed loops.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from ..core.errors import AdkError, ErrorCategory
from .keys import Secrets
from .payload import Payload

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport", "RetryPolicy", "ServerSentEvent", "SseDecoder", "SseEventTooLarge"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: The longest `Retry-After` we wait for; a server asking for more gets its error raised at once.
MAX_RETRY_AFTER = 60.0
#: The default bound on one call, stream included (long answers from slow models fit in it).
DEFAULT_TIMEOUT = 600.0
#: The default bound on one wait for the network: connecting, or the next bytes of an answer.
DEFAULT_IDLE_TIMEOUT = 60.0
#: The most bytes one server-sent event may hold (a Gemini answer with images fits well below).
MAX_EVENT_BYTES = 64 << 20
_MESSAGE_LIMIT = 500
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
    """JSON and SSE over HTTP for one provider, with retries, deadlines and error mapping.

    Args:
        provider: The provider's name for messages ("openai", "gemini", ...).
        base_url: Prefix of every request path, e.g. "https://api.openai.com/v1". A user and
            password in it are sent as Basic auth, never shown. Checked here: one that cannot
            be used is an AdkError (config, invalid_input, ``invalid_base_url``).
        headers: Sent with every request (API keys go here; no value is ever shown).
        timeout: Seconds one call may take in all, from connecting to the last event of the
            answer, retries included; None for no bound.
        idle_timeout: Seconds (or an `httpx.Timeout`) for each wait on the network: connect,
            write, pool, and each read of the answer.
        retry: How failures are retried: those `AdkError.is_retryable()` says are worth it.
        max_event_bytes: The most bytes one server-sent event may hold.
        http_client: An `httpx.AsyncClient` to use instead of the transport's own. You own it:
            `aclose()` leaves it open, and it must be used on the event loop it was made for.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: dict[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        idle_timeout: float | httpx.Timeout = DEFAULT_IDLE_TIMEOUT,
        retry: RetryPolicy = RetryPolicy(),
        max_event_bytes: int = MAX_EVENT_BYTES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.provider = provider
        self.base_url, userinfo = _checked_base_url(provider, base_url)
        self.retry = retry
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.max_event_bytes = max_event_bytes
        self._headers = {"user-agent": "adk-notebook", **{k.lower(): v for k, v in (headers or {}).items()}}
        if userinfo is not None:  # as httpx would send it, but with the URL kept clean for its logs
            token = base64.b64encode(f"{userinfo[0]}:{userinfo[1]}".encode()).decode("ascii")
            self._headers["authorization"] = f"Basic {token}"
        self.secrets = Secrets.of(self._headers, userinfo)
        self.payload = Payload(provider, self.secrets)
        self._scrub: Callable[[str], str] | None = self.secrets.scrub if self.secrets else None  # for the decoder
        self._given_client = http_client
        self._clients: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], httpx.AsyncClient, Any]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<HttpTransport provider={self.provider!r} base_url={_redact_url(self.base_url)!r}>"

    # -- public API ---------------------------------------------------------------------------

    async def post_json(
        self, path: str, body: dict[str, Any], *, params: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """POST `body` as JSON and return the JSON answer (an object), retrying transient failures."""
        import httpx

        deadline = self._deadline()
        attempt = 0
        cause: BaseException | None
        while True:
            client = await self._client()
            request = self._request(client, path, body, params, self._headers)
            try:
                response = await self._before(deadline, client.send(request, stream=True))
                try:
                    if response.status_code < 300:
                        try:
                            await self._before(deadline, response.aread())
                        except httpx.DecodingError as exc:
                            raise self._undecodable(response, exc) from None
                        data = self.payload.loads(self.secrets.scrub(response.text), "response body")
                        return self.payload.object(data, "response body")
                    content = await self._error_body(response, deadline)
                finally:
                    await response.aclose()
            except httpx.TransportError as exc:
                error, cause = self._transport_error(exc), exc
            else:
                error, cause = self._status_error(response.status_code, response.headers, content), None
            attempt = await self._wait_or_raise(error, cause, attempt, deadline)

    async def stream_sse(
        self, path: str, body: dict[str, Any], *, params: dict[str, str] | None = None
    ) -> AsyncGenerator[ServerSentEvent, None]:
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
    ) -> AsyncGenerator[list[tuple[str | None, str]], None]:
        """`stream_sse` for hot paths: the `(event, data)` pairs of each network read, as one list.

        One async step per read instead of one per event (or per line), and tuples instead of
        objects: what a provider parsing thousands of chunks per answer wants. Same retries,
        deadline and errors as `stream_sse`.
        """
        import httpx

        headers = {**self._headers, "accept": "text/event-stream"}
        deadline = self._deadline()
        attempt = 0
        while True:
            client = await self._client()
            request = self._request(client, path, body, params, headers)
            started = False
            try:
                response = await self._before(deadline, client.send(request, stream=True))
                try:
                    if response.status_code >= 300:
                        content = await self._error_body(response, deadline)
                        error, cause = self._status_error(response.status_code, response.headers, content), None
                    else:
                        decoder = SseDecoder(self.max_event_bytes, self._scrub)
                        reads = response.aiter_bytes()
                        while True:
                            try:
                                chunk = await self._before(deadline, anext(reads))
                            except StopAsyncIteration:
                                break
                            batch = decoder.feed(chunk)
                            if batch:
                                started = True
                                yield batch
                        batch = decoder.close()
                        if batch:
                            yield batch
                        return
                except httpx.DecodingError as exc:
                    raise self._undecodable(response, exc) from None
                except SseEventTooLarge as exc:
                    raise self._too_large(exc) from None
                finally:
                    await response.aclose()
            except httpx.TransportError as exc:
                if started:
                    raise self._error(
                        ErrorCategory.UNAVAILABLE,
                        "stream_interrupted",
                        f"The {self.provider} stream broke off after it had started ({_describe(exc)}); "
                        "the answer is incomplete. Run the request again.",
                    ) from self._shown(exc)
                error, cause = self._transport_error(exc), exc
            attempt = await self._wait_or_raise(error, cause, attempt, deadline)

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

    # -- requests and clients -----------------------------------------------------------------

    def _request(
        self,
        client: httpx.AsyncClient,
        path: str,
        body: dict[str, Any],
        params: dict[str, str] | None,
        headers: dict[str, str],
    ) -> httpx.Request:
        import httpx

        try:
            return client.build_request("POST", self.base_url + path, json=body, params=params, headers=headers)
        except httpx.InvalidURL as exc:  # the base_url was checked: what is left is the path (a model name)
            raise self._error(
                ErrorCategory.INVALID_INPUT,
                "invalid_url",
                f"{self.provider}: the request URL for {path!r} cannot be built ({exc}); check the model name.",
                details={"provider": self.provider, "field": "model"},
            ) from None

    async def _client(self) -> httpx.AsyncClient:
        """This event loop's client: httpx connections cannot move from one loop to another."""
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        import httpx

        idle = self.idle_timeout if isinstance(self.idle_timeout, httpx.Timeout) else httpx.Timeout(self.idle_timeout)
        client = httpx.AsyncClient(timeout=idle, verify=_ssl_context())
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

    # -- the deadline -------------------------------------------------------------------------

    def _deadline(self) -> float | None:
        """When this call must be over, on the running loop's clock (None: no bound)."""
        return None if self.timeout is None else asyncio.get_running_loop().time() + self.timeout

    async def _before(self, deadline: float | None, step: Awaitable[T]) -> T:
        """Await one network step (connect and send, one read), cut off at the call's deadline.

        The bound covers only this await, never a `yield` of the stream around it: a timeout
        across a yield would cancel whatever the consumer awaits at that moment.
        """
        if deadline is None:
            return await step
        limit = asyncio.timeout_at(deadline)
        try:
            async with limit:
                return await step
        except TimeoutError:
            if not limit.expired():
                raise
            raise self._error(
                ErrorCategory.TIMEOUT,
                "deadline_exceeded",
                f"{self.provider} did not finish its answer within timeout={self.timeout:g} s (the bound on one "
                "call: connecting, sending and reading the answer to its last event, retries included). "
                "For long answers pass a larger timeout= to the model; otherwise check the server.",
                details={"provider": self.provider},
            ) from None

    # -- retries ------------------------------------------------------------------------------

    async def _wait_or_raise(
        self, error: AdkError, cause: BaseException | None, attempt: int, deadline: float | None
    ) -> int:
        """Sleep before the next attempt and return its number, or raise `error` if none is due."""
        if not error.is_retryable() or attempt >= self.retry.max_retries:
            raise error from self._shown(cause)
        if error.retry_after is not None:
            if error.retry_after > MAX_RETRY_AFTER:
                raise error from self._shown(cause)
            delay = error.retry_after
        else:
            delay = self.retry.backoff(attempt)
        if deadline is not None and asyncio.get_running_loop().time() + delay >= deadline:
            raise error from self._shown(cause)  # the next attempt could not finish in time
        logger.info(
            "%s: %s; retry %d of %d in %.2f s", self.provider, error.message, attempt + 1, self.retry.max_retries, delay
        )
        await asyncio.sleep(delay)
        return attempt + 1

    # -- errors -------------------------------------------------------------------------------

    def _error(self, category: ErrorCategory, code: str, message: str, **kwargs: Any) -> AdkError:
        return self.secrets.error(AdkError("model", category, code, message, **kwargs))

    def _shown(self, cause: BaseException | None) -> BaseException | None:
        """`cause`, to chain to an error, unless its text (printed in tracebacks) shows a secret."""
        if cause is None:
            return None
        return cause if self.secrets.scrub(str(cause)) == str(cause) else None

    def _status_error(self, status: int, headers: httpx.Headers, content: bytes) -> AdkError:
        category = _STATUS_CATEGORY.get(status) or (
            ErrorCategory.UNAVAILABLE if status >= 500 else ErrorCategory.INVALID_INPUT
        )
        detail = _provider_message(content)
        message = f"{self.provider} returned HTTP {status}"
        message += f": {self._excerpt(detail)}" if detail else "."
        if status == 401:
            message += " Check the API key (set the provider's environment variable or pass api_key=)."
        elif status == 403:
            message += " The API key is valid but not allowed to do this (project, region or model access)."
        elif status == 404:
            message += " Check the model name and the base URL."
        error = self._error(category, f"http_{status}", message, details={"provider": self.provider, "status": status})
        if error.is_retryable():
            error.retry_after = _retry_after(headers)
        return error

    async def _error_body(self, response: httpx.Response, deadline: float | None) -> bytes:
        """The body of an error answer, for its message: a body that cannot be decoded says so."""
        import httpx

        try:
            return await self._before(deadline, response.aread())
        except httpx.DecodingError:
            encoding = response.headers.get("content-encoding", "")
            return f"(a body that cannot be decoded as its Content-Encoding {encoding!r} says)".encode()

    def _undecodable(self, response: httpx.Response, exc: Exception) -> AdkError:
        encoding = response.headers.get("content-encoding", "")
        return self.payload.invalid("Content-Encoding", f"says {encoding!r}, but the body cannot be decoded so ({exc})")

    def _too_large(self, exc: SseEventTooLarge) -> AdkError:
        return self.payload.error(
            ErrorCategory.INTERNAL,
            "event_too_large",
            f"{self.provider} sent one server-sent event of more than {exc.limit / (1 << 20):g} MiB "
            "(or bytes that never end an event); the stream was stopped there. Check the server.",
            limit=exc.limit,
        )

    def _transport_error(self, exc: httpx.TransportError) -> AdkError:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            category, code, what = ErrorCategory.TIMEOUT, "timeout", "timed out"
        elif isinstance(exc, httpx.ConnectError):
            category, code, what = ErrorCategory.UNAVAILABLE, "connect_failed", "could not be reached"
        elif isinstance(exc, httpx.ProxyError):  # the proxy said no: trying again will not change that
            category, code, what = ErrorCategory.FORBIDDEN, "proxy_refused", "was refused by the proxy"
        elif isinstance(exc, httpx.UnsupportedProtocol):
            category, code, what = ErrorCategory.INVALID_INPUT, "unsupported_protocol", "cannot be spoken to"
        else:
            category, code, what = ErrorCategory.UNAVAILABLE, "connection_error", "dropped the connection"
        message = f"{self.provider} at {_redact_url(self.base_url)} {what} ({_describe(exc)})."
        return self._error(category, code, message, details={"provider": self.provider})

    def _excerpt(self, text: str) -> str:
        text = text.strip()
        return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


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


def _checked_base_url(provider: str, url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without a trailing slash and without its user:password (returned apart), once it is
    known to be one httpx can send to; else the error that says what is wrong with it."""
    problem = ""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        problem = str(exc)
    else:
        if parts.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parts.hostname:
            problem = "it names no host"
        elif any(c.isspace() or not c.isprintable() for c in parts.netloc):
            problem = "its host contains spaces or control characters"
    if problem:
        raise AdkError(
            "config", "invalid_input", "invalid_base_url",
            f"{provider}: base_url {_redact_url(url)!r} cannot be used: {problem}. Pass the API root, "
            "e.g. 'https://api.openai.com/v1' or 'http://localhost:11434/v1'.",
            details={"provider": provider, "field": "base_url"},
        )  # fmt: skip
    userinfo = None
    if parts.username is not None or parts.password is not None:
        userinfo = (unquote(parts.username or ""), unquote(parts.password or ""))
    clean = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))
    return clean.rstrip("/"), userinfo


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


class SseEventTooLarge(ValueError):
    """One server-sent event grew past the decoder's `max_event_bytes`."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"one server-sent event holds more than {limit} bytes")
        self.limit = limit


class SseDecoder:
    """Server-sent events from bytes, per the WHATWG HTML spec ("Parsing an event stream").

    `feed(bytes)` returns the `(event, data)` pairs completed so far; `close()` the last one.
    Lines may end in CRLF, LF or CR (also split across reads); comments are skipped; the
    `data:` lines of one event are joined with "\n"; `id:` and `retry:` are ignored; a
    leading BOM is dropped. An event still pending when the stream ends cleanly is
    dispatched (the body's framing was complete, so its data is too); the spec would drop
    it, which would hide an answer. Blocks are decoded as UTF-8 only once complete, so a
    character split across reads is never mangled.

    Linear in the bytes fed: the reads of an unfinished event are kept as a list and joined
    once, when the event ends, and only the newest read is searched for the end. An event
    longer than `max_event_bytes` raises `SseEventTooLarge` as soon as it passes the limit.
    `scrub`, when given, rewrites the text of each completed block before it is split into
    events (the transport hides secrets there).
    """

    __slots__ = ("_cr", "_first", "_limit", "_pending", "_scrub", "_size")

    def __init__(self, max_event_bytes: int | None = None, scrub: Callable[[str], str] | None = None) -> None:
        self._pending: list[bytes] = []  # the reads of the event not yet complete
        self._size = 0
        self._cr = False  # the last read ended in CR: it ends a line whether or not LF follows
        self._first = True
        self._limit = max_event_bytes
        self._scrub = scrub

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        if self._cr:
            chunk = b"\r" + chunk
            self._cr = False
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                chunk = chunk[:-1]
                self._cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pending = self._pending
        cut = chunk.rfind(b"\n\n")
        if cut >= 0:  # the last event boundary is in this read
            complete = b"".join((*pending, chunk[:cut])) if pending else chunk[:cut]
            rest = chunk[cut + 2 :]
        elif pending and chunk[:1] == b"\n" and pending[-1].endswith(b"\n"):  # ...or where it meets the last one
            complete = b"".join(pending)[:-1]
            rest = chunk[1:]
        else:
            if chunk:
                pending.append(chunk)
                self._size += len(chunk)
                if self._limit is not None and self._size > self._limit:
                    raise SseEventTooLarge(self._limit)
            return []
        self._pending = [rest] if rest else []
        self._size = len(rest)
        limit = self._limit
        if limit is not None and (
            self._size > limit
            or (len(complete) > limit and any(len(block) > limit for block in complete.split(b"\n\n")))
        ):
            raise SseEventTooLarge(limit)
        return self._events(complete.decode("utf-8", "replace"))

    def close(self) -> list[tuple[str | None, str]]:
        """The events left when the stream ends."""
        buffer = b"".join(self._pending)
        self._pending, self._size, self._cr = [], 0, False
        return self._events(buffer.decode("utf-8", "replace")) if buffer.strip() else []

    def _events(self, text: str) -> list[tuple[str | None, str]]:
        if self._first:
            self._first = False
            text = text.removeprefix("\ufeff")
        if self._scrub is not None:
            text = self._scrub(text)
        out: list[tuple[str | None, str]] = []
        for block in text.split("\n\n") if "\n\n" in text else (text,):  # one big event: no copy to split
            if block.startswith("data: ") and "\n" not in block:  # the common case: one data line
                out.append((None, block[6:]))
            elif block:
                _parse_block(block, out)
        return out


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
