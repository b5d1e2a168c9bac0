"""Servers that never finish: a model's `timeout=` bounds the whole call, a run has a time limit, an event a size cap.

Loopback servers that keep the connection busy without ever ending the answer, so a timeout
per read never fires:
- SSE comments forever (": keep-alive" every 50 ms),
- answer text forever, in each provider's own format,
- a complete answer trickled one byte a second,
- bytes with no event boundary at all (one `data:` line that never ends).
Each must end with an AdkError within the model's `timeout=` (generously: plus a second), the
session keeping no partial text; the endless line ends at the cap on one event's size, before
the deadline. `RunConfig(time_limit=)` ends a run whose model or tool would go on for ever,
and the session keeps every call answered.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from loopback import LoopbackServer, Reply
from recorded import PROVIDERS, SSE_HEADERS, encode_sse

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    RunConfig,
    Runner,
    ScriptedModel,
    tool,
)
from adk_notebook.models.http import HttpTransport, RetryPolicy

TIMEOUT = 1.0
SLACK = 1.0  # generous: these machines are shared


def text_events(provider: str) -> tuple[list[str], Iterator[str]]:
    """The opening events of a text answer, and an endless supply of text deltas, as SSE chunks."""
    if provider == "openai":
        head = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}

        def delta(i: int) -> dict[str, Any]:
            return {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": f"w{i} "}}],
            }

        return encode_sse([(None, head)]), (encode_sse([(None, delta(i))])[0] for i in itertools.count())
    if provider == "gemini":
        return [], (
            encode_sse([(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": f"w{i} "}]}}]})])[0]
            for i in itertools.count()
        )
    start = [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    return encode_sse(start), (
        encode_sse(
            [
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"w{i} "}},
                )
            ]
        )[0]
        for i in itertools.count()
    )


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
            assert (error.component, error.category.value, error.code) == ("model", "timeout", "deadline_exceeded"), (
                repr(error)
            )
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
            assert (error.component, error.category.value, error.code) == ("model", "internal", "event_too_large"), (
                repr(error)
            )
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
        transport = HttpTransport(
            provider="acme", base_url=server.url, max_event_bytes=1 << 20, retry=RetryPolicy(max_retries=0)
        )
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


# -- a time limit for the whole run ---------------------------------------------------------------


async def test_a_run_time_limit_ends_a_model_that_streams_forever(tally: Any) -> None:
    p = PROVIDERS["openai"]
    sessions = InMemorySessionService()
    with LoopbackServer([Reply(200, endless("openai"), headers=SSE_HEADERS, chunk_delay=0.01)]) as server:
        agent = LlmAgent(name="bot", model=p.model(server.url))  # the model's own timeout is 600 s
        with tally.case("deadline: run time limit, model streaming forever"):
            started = time.perf_counter()
            with pytest.raises(AdkError) as info:
                await agent.run_async("Hi", session_id="s", session_service=sessions, time_limit=TIMEOUT)
            took = time.perf_counter() - started
            assert (info.value.category.value, info.value.code) == ("timeout", "run_time_limit"), repr(info.value)
            assert "time_limit=1" in info.value.message
            assert TIMEOUT - 0.05 <= took < TIMEOUT + SLACK
            session = await sessions.get(app_name="bot", user_id="user", session_id="s")
            assert [e.author for e in session.events] == ["user"]


async def test_a_run_time_limit_ends_a_tool_that_never_returns(tally: Any) -> None:
    @tool
    async def wait_forever() -> dict:
        """Wait."""
        await asyncio.sleep(3600)
        return {}

    sessions = InMemorySessionService()
    model = ScriptedModel([FunctionCall("wait_forever", {}), "done"])
    agent = LlmAgent(name="bot", model=model, tools=[wait_forever])
    with tally.case("deadline: run time limit, tool that never returns"):
        started = time.perf_counter()
        with pytest.raises(AdkError) as info:
            await agent.run_async("Go", session_id="s", session_service=sessions, time_limit=0.5)
        assert info.value.code == "run_time_limit" and time.perf_counter() - started < 0.5 + SLACK
        session = await sessions.get(app_name="bot", user_id="user", session_id="s")
        calls = [c.id for e in session.events for c in e.function_calls()]
        answers = {r.id: r.response for e in session.events for r in e.function_responses()}
        assert calls and all(c in answers for c in calls), "every stored call is answered"
        assert json.dumps(answers)  # and the session goes on:
        assert (await agent.run_async("Again", session_id="s", session_service=sessions)).text == "done"


async def test_a_run_time_limit_never_cancels_the_consumer_and_ends_at_its_next_step() -> None:
    """The limit passes while the consumer (a widget, say) is busy between events: its await goes on
    undisturbed, and the run ends at the next step with every stored call answered."""

    @tool
    def noop() -> dict:
        """Do nothing."""
        return {}

    sessions = InMemorySessionService()
    await sessions.create(app_name="bot", user_id="u", session_id="s")
    agent = LlmAgent(name="bot", model=ScriptedModel([FunctionCall("noop", {}), "done"]), tools=[noop])
    runner = Runner(app_name="bot", agent=agent, session_service=sessions)
    stream = runner.run(user_id="u", session_id="s", content="Go", run_config=RunConfig(time_limit=0.2))
    seen = []
    with pytest.raises(AdkError) as info:
        async for event in stream:
            seen.append(event)
            if event.function_calls():
                await asyncio.sleep(0.4)  # past the limit, in the consumer's own await: not cancelled
    assert info.value.code == "run_time_limit" and seen[-1].function_calls()
    session = await sessions.get(app_name="bot", user_id="u", session_id="s")
    answers = [r.response for e in session.events for r in e.function_responses()]
    assert [a.get("code") for a in answers] == ["cancelled"]
