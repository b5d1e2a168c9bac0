"""HttpTransport against a real loopback server: retries, error mapping, SSE, clients per loop."""

from __future__ import annotations

import asyncio
import email.utils
import json
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback import LoopbackServer, Reply, sse

from adk_notebook import AdkError
from adk_notebook.core.json_text import parse_json
from adk_notebook.models.http import HttpTransport, RetryPolicy, ServerSentEvent

KEY = "sk-" + "test-SECRET-0123456789"
FAST = RetryPolicy(max_retries=3, initial_delay=0.01, max_delay=0.05)
SSE_HEADERS = {"Content-Type": "text/event-stream"}


def transport(url: str, **kwargs) -> HttpTransport:
    kwargs.setdefault("retry", FAST)
    return HttpTransport(provider="acme", base_url=url, headers={"Authorization": f"Bearer {KEY}"}, **kwargs)


async def collect(t: HttpTransport, path: str = "/stream") -> list[ServerSentEvent]:
    return [e async for e in t.stream_sse(path, {"q": 1})]


# -- post_json ------------------------------------------------------------------------------------


async def test_post_json_sends_headers_and_body() -> None:
    with LoopbackServer([Reply(200, {"ok": True})]) as server:
        t = transport(server.url + "/v1/")
        assert await t.post_json("/things", {"a": 1}, params={"alt": "x"}) == {"ok": True}
        await t.aclose()
    request = server.requests[0]
    assert request.path == "/v1/things?alt=x"
    assert request.json() == {"a": 1}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"


async def test_429_with_retry_after_seconds_is_honoured() -> None:
    limited = Reply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "0.3"})
    with LoopbackServer([limited, Reply(200, {"ok": 1})]) as server:
        t = transport(server.url)
        started = time.perf_counter()
        assert await t.post_json("/x", {}) == {"ok": 1}
        waited = time.perf_counter() - started
        await t.aclose()
    assert len(server.requests) == 2
    assert 0.28 <= waited < 1.5  # Retry-After (0.3 s) beats the 0.01 s backoff


async def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(time.time() + 1.2, usegmt=True)  # whole seconds: waits 0.2-1.2 s
    with LoopbackServer([Reply(503, "busy", headers={"Retry-After": when}), Reply(200, {"ok": 1})]) as server:
        t = transport(server.url)
        started = time.perf_counter()
        await t.post_json("/x", {})
        assert 0.15 <= time.perf_counter() - started < 2.5
        await t.aclose()
    assert len(server.requests) == 2


async def test_retry_after_above_max_delay_is_honoured_but_not_past_60s() -> None:
    policy = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05)
    with LoopbackServer([Reply(429, "slow", headers={"Retry-After": "0.25"}), Reply(200, {"ok": 1})]) as server:
        t = transport(server.url, retry=policy)
        started = time.perf_counter()
        await t.post_json("/x", {})
        assert time.perf_counter() - started >= 0.24  # above max_delay, still honoured
        await t.aclose()
    with LoopbackServer([Reply(429, {"error": {"message": "daily quota"}}, headers={"Retry-After": "3600"})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert len(server.requests) == 1  # an hour is not worth blocking a notebook for
    assert info.value.category == "rate_limited" and info.value.retry_after == 3600
    assert "daily quota" in info.value.message


async def test_500_until_retries_run_out() -> None:
    with LoopbackServer([Reply(500, {"error": {"message": "boom"}})] * 5) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert len(server.requests) == 4  # 1 + max_retries
    error = info.value
    assert (error.component, error.category, error.code) == ("model", "unavailable", "http_500")
    assert error.is_retryable()
    assert "acme" in error.message and "boom" in error.message


async def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=3, initial_delay=0.05, max_delay=0.12)
    assert [policy.backoff(i) for i in range(4)] == [0.05, 0.1, 0.12, 0.12]
    with LoopbackServer([Reply(502, "bad gateway")] * 4) as server:
        t = transport(server.url, retry=policy)
        started = time.perf_counter()
        with pytest.raises(AdkError):
            await t.post_json("/x", {})
        assert 0.26 <= time.perf_counter() - started < 1.5  # 0.05 + 0.1 + 0.12
        await t.aclose()


@pytest.mark.parametrize(
    ("status", "category", "hint"),
    [
        (400, "invalid_input", ""),
        (401, "unauthorized", "API key"),
        (403, "forbidden", ""),
        (404, "not_found", "model name"),
        (408, "timeout", ""),
        (422, "invalid_input", ""),
    ],
)
async def test_status_to_category_without_retry(status: int, category: str, hint: str) -> None:
    with LoopbackServer([Reply(status, {"error": {"message": f"provider says {status}"}})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert len(server.requests) == 1
    assert info.value.category == category and info.value.component == "model"
    assert f"provider says {status}" in info.value.message and hint in info.value.message
    assert info.value.details["status"] == status and info.value.details["provider"] == "acme"


async def test_504_is_retried_then_a_timeout() -> None:
    with LoopbackServer([Reply(504, "gateway timeout")] * 4) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert len(server.requests) == 4 and info.value.category == "timeout"


async def test_error_text_is_truncated_and_scrubbed_of_the_key() -> None:
    body = f"Incorrect API key provided: {KEY}. " + "x" * 2000
    with LoopbackServer([Reply(401, body, headers={"Content-Type": "text/plain"})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    error = info.value
    assert KEY not in str(error) and KEY not in repr(error) and "***" in error.message
    assert len(error.message) < 700
    assert KEY not in repr(t) and "Bearer" not in repr(t)


async def test_ollama_style_error_string() -> None:
    with LoopbackServer([Reply(404, {"error": "model 'llama9' not found, try pulling it first"})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert "model 'llama9' not found" in info.value.message and info.value.category == "not_found"


async def test_connection_refused_is_retried_then_unavailable() -> None:
    with LoopbackServer() as server:
        url = server.url
    t = transport(url)  # the server is gone: nothing listens on that port any more
    with pytest.raises(AdkError) as info:
        await t.post_json("/x", {})
    await t.aclose()
    assert info.value.category == "unavailable" and info.value.code == "connect_failed"
    assert isinstance(info.value.__cause__, Exception)


async def test_non_json_answer_is_a_clear_error() -> None:
    with LoopbackServer([Reply(200, "<html>proxy</html>", headers={"Content-Type": "text/html"})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    assert info.value.code == "invalid_response" and "<html>proxy" in info.value.message


# -- stream_sse -----------------------------------------------------------------------------------


async def test_sse_parsing_follows_the_spec() -> None:
    body = [
        "\ufeff: a comment\r\n",
        'event: message_start\r\ndata: {"a":\r\ndata:  1}\r\n\r\n',  # two data lines; one space stripped
        "data:no-space\n\n",
        "id: 7\nretry: 100\n\n",  # no data: no event
        "data: x\rdata: y\r\r",  # bare CR line ends
        "event: ping\n",
        "data",  # a field with no colon: empty data line
        "\n\n",
        "data: [DONE]\n\n",
        "data: last without blank line",
    ]
    with LoopbackServer([Reply(200, body, headers=SSE_HEADERS)]) as server:
        t = transport(server.url)
        events = await collect(t)
        await t.aclose()
    assert events == [
        ServerSentEvent("message_start", '{"a":\n 1}'),
        ServerSentEvent(None, "no-space"),
        ServerSentEvent(None, "x\ny"),
        ServerSentEvent("ping", ""),
        ServerSentEvent(None, "[DONE]"),
        ServerSentEvent(None, "last without blank line"),
    ]
    assert server.requests[0].headers["accept"] == "text/event-stream"


async def test_stream_retries_before_the_first_event() -> None:
    replies = [
        Reply(503, {"error": {"message": "overloaded"}}),
        Reply(200, sse({"n": 1}), headers=SSE_HEADERS, drop_after=0),  # headers, then the socket closes
        Reply(200, sse({"n": 1}, {"n": 2}), headers=SSE_HEADERS),
    ]
    with LoopbackServer(replies) as server:
        t = transport(server.url)
        events = await collect(t)
        await t.aclose()
    assert [e.data for e in events] == ['{"n": 1}', '{"n": 2}']
    assert len(server.requests) == 3


async def test_stream_broken_after_events_is_interrupted_not_truncated() -> None:
    replies = [Reply(200, sse({"n": 1}, {"n": 2}, {"n": 3}), headers=SSE_HEADERS, drop_after=2)]
    with LoopbackServer(replies) as server:
        t = transport(server.url)
        seen = []
        with pytest.raises(AdkError) as info:
            async for event in t.stream_sse("/s", {}):
                seen.append(event.data)
        await t.aclose()
    assert seen == ['{"n": 1}', '{"n": 2}']
    assert (info.value.category, info.value.code) == ("unavailable", "stream_interrupted")
    assert len(server.requests) == 1  # never retried once events have flowed


async def test_stream_read_timeout_before_first_event_is_retried() -> None:
    slow = Reply(200, [": waiting\n\n", "data: late\n\n"], headers=SSE_HEADERS, chunk_delay=1.0)
    fast = Reply(200, sse("on time"), headers=SSE_HEADERS)
    with LoopbackServer([slow, fast]) as server:
        t = transport(server.url, idle_timeout=0.3)
        events = await collect(t)
        await t.aclose()
    assert [e.data for e in events] == ["on time"] and len(server.requests) == 2


async def test_stream_read_timeout_exhausted_is_a_timeout() -> None:
    slow = Reply(200, [": waiting\n\n", "data: late\n\n"], headers=SSE_HEADERS, chunk_delay=1.0)
    with LoopbackServer([slow, slow]) as server:
        t = transport(server.url, idle_timeout=0.2, retry=RetryPolicy(max_retries=1, initial_delay=0.01))
        with pytest.raises(AdkError) as info:
            await collect(t)
        await t.aclose()
    assert (info.value.category, info.value.code) == ("timeout", "timeout") and len(server.requests) == 2


async def test_stream_status_error_uses_the_body() -> None:
    with LoopbackServer([Reply(400, {"error": {"message": "messages: too long"}})]) as server:
        t = transport(server.url)
        with pytest.raises(AdkError) as info:
            await collect(t)
        await t.aclose()
    assert info.value.category == "invalid_input" and "messages: too long" in info.value.message


async def test_closing_a_stream_early_releases_the_connection() -> None:
    with LoopbackServer(
        [Reply(200, sse(*[{"n": i} for i in range(50)]), headers=SSE_HEADERS), Reply(200, {"ok": 1})]
    ) as server:
        t = transport(server.url)
        stream = t.stream_sse("/s", {})
        async for _ in stream:
            break
        await stream.aclose()
        assert await t.post_json("/x", {}) == {"ok": 1}
        await t.aclose()


# -- clients and event loops ----------------------------------------------------------------------


def test_one_transport_on_many_event_loops() -> None:
    """asyncio.run per call, and worker threads with their own loops, all share one transport."""
    with LoopbackServer([Reply(200, {"n": i}) for i in range(6)]) as server:
        t = transport(server.url)
        assert asyncio.run(t.post_json("/x", {}))["n"] == 0
        (first_client,) = [entry[1] for entry in t._clients.values()]
        assert first_client.is_closed  # closed by asyncio.run's shutdown, while its loop still ran
        assert asyncio.run(t.post_json("/x", {}))["n"] == 1  # the first loop is closed now
        assert len(t._clients) == 1  # the dead loop's client was dropped

        results: list[int] = []
        errors: list[BaseException] = []

        def worker() -> None:
            async def go() -> None:
                results.append((await t.post_json("/x", {}))["n"])
                await asyncio.sleep(0.05)
                results.append((await t.post_json("/x", {}))["n"])

            try:
                asyncio.run(go())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors and sorted(results) == [2, 3, 4, 5]


async def test_a_given_client_is_used_and_left_open() -> None:
    import httpx

    with LoopbackServer([Reply(200, {"ok": 1})]) as server:
        async with httpx.AsyncClient() as client:
            t = HttpTransport(provider="acme", base_url=server.url, http_client=client)
            assert await t.post_json("/x", {}) == {"ok": 1}
            await t.aclose()
            assert not client.is_closed


def test_import_adk_notebook_does_not_import_httpx() -> None:
    code = "import sys, adk_notebook, adk_notebook.models.openai; assert 'httpx' not in sys.modules, 'httpx imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 10_000])
def test_sse_decoder_is_independent_of_how_the_bytes_are_cut(size: int) -> None:
    """CRLF or CR split across reads, a UTF-8 character split across reads, blank-line runs."""
    from adk_notebook.models.http import SseDecoder

    raw = '\ufeffdata: héllo 🌍\r\n\r\n\r\n: ping\r\rdata: a\rdata: b\r\revent: e\ndata: {"x": 1}\n\n\n\ndata: end'.encode()
    decoder = SseDecoder()
    events = []
    for i in range(0, len(raw), size):
        events += decoder.feed(raw[i : i + size])
    events += decoder.close()
    assert events == [(None, "héllo 🌍"), (None, "a\nb"), ("e", '{"x": 1}'), (None, "end")]


def test_one_big_event_in_small_reads_is_decoded_in_linear_time() -> None:
    """16 MB of one event in 4 KB reads: joined once at its end, not re-copied and re-searched per read.

    Quadratic decoding took minutes here; linear takes a fraction of a second, so the bound is generous.
    """
    from adk_notebook.models.http import SseDecoder

    payload = b"x" * (16 << 20)
    raw = b"event: big\ndata: " + payload + b"\n\ndata: next\n\n"
    decoder = SseDecoder()
    events = []
    started = time.perf_counter()
    for i in range(0, len(raw), 4096):
        events += decoder.feed(raw[i : i + 4096])
    took = time.perf_counter() - started
    assert [(name, len(data)) for name, data in events] == [("big", len(payload)), (None, 4)]
    assert took < 5.0, f"{took:.1f} s for one 16 MB event"


def test_an_event_past_the_cap_is_refused_however_it_arrives() -> None:
    from adk_notebook.models.http import SseDecoder, SseEventTooLarge

    big = b"data: " + b"y" * 2000 + b"\n\n"
    for size in (1, 100, 4096):  # in pieces that never contain its end...
        decoder = SseDecoder(max_event_bytes=1000)
        with pytest.raises(SseEventTooLarge):
            for i in range(0, len(big), size):
                decoder.feed(big[i : i + size])
    with pytest.raises(SseEventTooLarge):  # ...or in one read with its end
        SseDecoder(max_event_bytes=1000).feed(b"data: ok\n\n" + big)
    decoder = SseDecoder(max_event_bytes=1000)  # events under the cap pass, however many
    assert len(decoder.feed(b"data: ok\n\n" * 500)) == 500


# -- parse_json: the stream chunk decoder ----------------------------------------------------------

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_AROUND = st.sampled_from(["", " ", "\n", "\t \r\n", "x", ",", "}", " {}", "]", "\u00a0"])


def _loads_outcome(parse: Any, text: str) -> tuple[str, str]:
    try:
        return "value", repr(parse(text))
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=400, deadline=None)
@given(value=_JSON_VALUES, before=_AROUND, after=_AROUND)
def test_parse_json_answers_and_fails_exactly_like_json_loads(value: Any, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    assert _loads_outcome(parse_json, text) == _loads_outcome(json.loads, text)


@pytest.mark.parametrize("text", ["", " ", "NaN", "-Infinity", "1e999", '"\\ud800"', "[1, 2", '{"a": 1}{"b": 2}', "01"])
def test_parse_json_edge_cases_match_json_loads(text: str) -> None:
    assert _loads_outcome(parse_json, text) == _loads_outcome(json.loads, text)
