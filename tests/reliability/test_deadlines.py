"""Servers that never finish: a model's `timeout=` bounds the whole call, a run has a time limit, an event a size cap.

Loopback servers that keep the connection busy without ever ending the answer, so a timeout
per read never fires:
- SSE comments forever (": keep-alive" every 50 ms),
- answer text forever, in each provider's own format,
- a complete answer trickled one byte a second,
- bytes with no event boundary at all (one `data:` line that never ends).
Each must end with an AdkError within the model's `timeout=` (generously: plus a second), the
session keeping no partial text; the endless line ends at the cap on one event's size, before
the deadline.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loopback import LoopbackServer, Reply
from recorded import PROVIDERS, SSE_HEADERS, encode_sse

from adk_notebook import AdkError, Content, InMemorySessionService, LlmAgent, LlmRequest
from adk_notebook.models.http import HttpTransport, RetryPolicy

TIMEOUT = 1.0
SLACK = 1.0  # generous: these machines are shared


def text_events(provider: str) -> tuple[list[str], Iterator[str]]:
    """The opening events of a text answer, and an endless supply of text deltas, as SSE chunks."""
    if provider == "openai":
        head = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}

        def delta(i: int) -> dict[str, Any]:
            return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}

        return encode_sse([(None, head)]), (encode_sse([(None, delta(i))])[0] for i in itertools.count())
    if provider == "gemini":
        return [], (encode_sse([(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": f"w{i} "}]}}]})])[0]
                    for i in itertools.count())
    start = [("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
             ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    return encode_sse(start), (encode_sse([("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                                     "delta": {"type": "text_delta", "text": f"w{i} "}})])[0]
                               for i in itertools.count())


def comments_forever() -> Iterator[str]:
    while True:
        yield ": keep-alive\n\n"


def endless(provider: str) -> Callable[[], Iterator[str]]:
    head, deltas = text_events(provider)
    return lambda: itertools.chain(head, deltas)


def trickle(provider: str) -> Callable[[], Iterator[bytes]]:
    p = PROVIDERS[provider]
    raw = "".join(encode_sse(p.stream())).encode()
    return lambda: (raw[i : i + 1] for i in range(len(raw)))


def no_boundary() -> Iterator[bytes]:
    yield b"data: "
    while True:
        yield b"x" * 65536


SERVERS = {
    "SSE comments forever": (lambda provider: Reply(200, comments_forever, headers=SSE_HEADERS, chunk_delay=0.05)),
    "text forever": (lambda provider: Reply(200, endless(provider), headers=SSE_HEADERS, chunk_delay=0.01)),
    "a byte a second": (lambda provider: Reply(200, trickle(provider), headers=SSE_HEADERS, chunk_delay=1.0)),
}


@pytest.mark.parametrize("behaviour", list(SERVERS))
@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_the_model_timeout_bounds_the_whole_call(provider: str, behaviour: str, tally: Any) -> None:
    p = PROVIDERS[provider]
    sessions = InMemorySessionService()
    with LoopbackServer([SERVERS[behaviour](provider)]) as server:
        agent = LlmAgent(name="bot", model=p.model(server.url, timeout=TIMEOUT))
        with tally.case(f"deadline: {provider} {behaviour}"):
            started = time.perf_counter()
            with pytest.raises(AdkError) as info:
                await agent.run_async("Hi", session_id="s", session_service=sessions)
            took = time.perf_counter() - started
            error = info.value
            assert (error.component, error.category.value, error.code) == ("model", "timeout", "deadline_exceeded"), repr(error)
            assert error.details.get("provider") == provider and "timeout=1" in error.message
            assert TIMEOUT - 0.05 <= took < TIMEOUT + SLACK, f"the call took {took:.2f} s"
            assert len(server.requests) == 1  # past its deadline a call is not retried
            session = await sessions.get(app_name="bot", user_id="user", session_id="s")
            assert [e.author for e in session.events] == ["user"]  # no partial text was kept


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_bytes_without_an_event_boundary_stop_at_the_event_cap(provider: str, tally: Any) -> None:
    p = PROVIDERS[provider]
    with LoopbackServer([Reply(200, no_boundary, headers=SSE_HEADERS)]) as server:
        agent = LlmAgent(name="bot", model=p.model(server.url, timeout=30.0))
        with tally.case(f"deadline: {provider} bytes without an event boundary"):
            with pytest.raises(AdkError) as info:
                await agent.run_async("Hi")
            error = info.value
            assert (error.component, error.category.value, error.code) == ("model", "internal", "event_too_large"), repr(error)
            assert error.details.get("provider") == provider and "MiB" in error.message


async def test_the_transport_holds_at_most_one_capped_event() -> None:
    """The decoder's buffer stops at `max_event_bytes`: the error comes as the cap is passed, not at the end."""
    sent = 0

    def counted() -> Iterator[bytes]:
        nonlocal sent
        for chunk in no_boundary():
            sent += len(chunk)
            yield chunk

    with LoopbackServer([Reply(200, counted, headers=SSE_HEADERS)]) as server:
        transport = HttpTransport(provider="acme", base_url=server.url, max_event_bytes=1 << 20,
                                  retry=RetryPolicy(max_retries=0))
        with pytest.raises(AdkError) as info:
            async for _ in transport.stream_sse("/s", {}):
                pass
        await transport.aclose()
    assert info.value.code == "event_too_large" and "1 MiB" in info.value.message
    assert sent < 8 << 20  # the client stopped reading soon after the cap (the server writes ahead a little)


async def test_a_stall_before_the_first_event_is_still_retried_within_the_deadline() -> None:
    """The idle limit (per read) is separate: a stalled attempt is retried while the call has time left."""
    p = PROVIDERS["openai"]
    stalled = Reply(200, [": waiting\n\n", *encode_sse(p.stream())], headers=SSE_HEADERS, chunk_delay=2.0)
    with LoopbackServer([stalled, p.reply(p.stream())]) as server:
        model = p.model(server.url, timeout=10.0, idle_timeout=0.3)
        started = time.perf_counter()
        [*_, answer] = [r async for r in model.generate_content(LlmRequest(contents=[Content.user("Hi")]), stream=True)]
        assert time.perf_counter() - started < 3.0
        assert len(server.requests) == 2 and answer.content.function_calls()[0].args == {"city": "Tokyo"}
