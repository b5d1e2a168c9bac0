"""Transport faults through the full agent loop, for each HTTP provider, with a SQLite session.

Every case runs `LlmAgent(tools=[get_weather]).run_async(...)` against a loopback server that
plays a scripted fault (429s, 5xx bursts, resets, drops, stalls, truncated or malformed SSE,
invalid tool arguments, empty answers), then checks
- how many requests the server saw (what was retried, and what was not),
- the AdkError's category and code when the run fails,
- the SQLite file afterwards (reopened with a fresh service): the user message stored once,
  no partial event, no model event from a failed attempt, no half-written text, and every
  stored function call answered exactly once.

Faults that let the run succeed hit the FIRST model call; faults that fail the run hit the
SECOND one (after a complete tool round), so the session has real content that must survive.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse

from adk_notebook import AdkError, AnthropicModel, GeminiModel, LlmAgent, SqliteSessionService, tool
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

RETRY = RetryPolicy(max_retries=3, initial_delay=0.001, max_delay=0.01)
IDLE = 0.25  # the model's idle limit (one read) in the stall cases
SSE_HEADERS = {"Content-Type": "text/event-stream"}
QUESTION = "Weather in Tokyo?"
ANSWER = ["It is ", "sunny ", "in Tokyo."]
APP, USER, SID = "weather", "user", "s1"


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}


# -- minimal wire shapes per provider (see tests/providers/test_*.py) -----------------------------


def _stream(chunks: list[str], **kw: Any) -> Reply:
    return Reply(200, chunks, headers=SSE_HEADERS, **kw)


class OpenAIWire:
    name = "openai"

    @staticmethod
    def model(url: str, idle_timeout: float = 60.0) -> OpenAIModel:
        return OpenAIModel(
            "gpt-4o-mini", base_url=url + "/v1", api_key="test-key", retry=RETRY, idle_timeout=idle_timeout
        )

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    @classmethod
    def text_chunks(cls, pieces: list[str], *, complete: bool = True) -> list[str]:
        chunks = [cls._chunk({"role": "assistant", "content": ""})] + [cls._chunk({"content": p}) for p in pieces]
        if not complete:
            return sse(*chunks)
        return sse(*chunks, cls._chunk({}, "stop"), "[DONE]")

    @classmethod
    def tool_chunks(cls, raw_args: str) -> list[str]:
        first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        rest = [{"index": 0, "function": {"arguments": raw_args[i : i + 5]}} for i in range(0, len(raw_args), 5)]
        chunks = [cls._chunk({"role": "assistant", "content": None})] + [
            cls._chunk({"tool_calls": [d]}) for d in (first, *rest)
        ]
        return sse(*chunks, cls._chunk({}, "tool_calls"), "[DONE]")

    @staticmethod
    def malformed_line() -> str:
        return "data: {not json\n\n"

    @staticmethod
    def empty_answer() -> list[str]:
        return sse({"id": "c1", "object": "chat.completion.chunk", "choices": []}, "[DONE]")

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "server_error"}}


class GeminiWire:
    name = "gemini"

    @staticmethod
    def model(url: str, idle_timeout: float = 60.0) -> GeminiModel:
        return GeminiModel("gemini-2.5-flash", base_url=url, api_key="test-key", retry=RETRY, idle_timeout=idle_timeout)

    @staticmethod
    def _answer(*parts: dict[str, Any], finish: str | None = "STOP") -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
        }

    @classmethod
    def text_chunks(cls, pieces: list[str], *, complete: bool = True) -> list[str]:
        chunks = [cls._answer({"text": p}, finish=None) for p in pieces]
        if complete:
            chunks[-1] = cls._answer({"text": pieces[-1]})
        return sse(*chunks)

    @classmethod
    def tool_chunks(cls, raw_args: str) -> list[str]:
        return sse(cls._answer({"functionCall": {"id": "call_1", "name": "get_weather", "args": json.loads(raw_args)}}))

    @staticmethod
    def malformed_line() -> str:
        return "data: {not json\n\n"

    @staticmethod
    def empty_answer() -> list[str]:
        return sse({"candidates": [], "usageMetadata": {"promptTokenCount": 5}})

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": "UNAVAILABLE"}}


class AnthropicWire:
    name = "anthropic"

    @staticmethod
    def model(url: str, idle_timeout: float = 60.0) -> AnthropicModel:
        return AnthropicModel(
            "claude-sonnet-4-6", base_url=url, api_key="test-key", retry=RETRY, idle_timeout=idle_timeout
        )

    @staticmethod
    def _sse(*events: dict[str, Any]) -> list[str]:
        return sse(*events, event_names=[e["type"] for e in events])

    _START = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-6",
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }

    @classmethod
    def _end(cls, stop: str) -> list[dict[str, Any]]:
        return [
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]

    @classmethod
    def text_chunks(cls, pieces: list[str], *, complete: bool = True) -> list[str]:
        events = [
            cls._START,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ]
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces
        ]
        if complete:
            events += [{"type": "content_block_stop", "index": 0}, *cls._end("end_turn")]
        return cls._sse(*events)

    @classmethod
    def tool_chunks(cls, raw_args: str) -> list[str]:
        events = [
            cls._START,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}},
            },
        ]
        events += [
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": raw_args[i : i + 5]},
            }
            for i in range(0, len(raw_args), 5)
        ]
        events += [{"type": "content_block_stop", "index": 0}, *cls._end("tool_use")]
        return cls._sse(*events)

    @staticmethod
    def malformed_line() -> str:
        return "event: content_block_delta\ndata: {not json\n\n"

    @staticmethod
    def empty_answer() -> list[str]:  # no such thing in the Messages API
        raise NotImplementedError

    @staticmethod
    def error_body(status: int, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


WIRES = {"openai": OpenAIWire, "gemini": GeminiWire, "anthropic": AnthropicWire}
GOOD_ARGS = json.dumps({"city": "Tokyo"})


# -- the checks on the stored session -------------------------------------------------------------


async def stored_events(db: Path) -> list[Any]:
    with SqliteSessionService(db) as sessions:  # a fresh connection: what is really in the file
        session = await sessions.get(app_name=APP, user_id=USER, session_id=SID)
    assert session is not None
    return list(session.events)


def check_session(events: list[Any], *, tool_rounds: int, final_text: str | None) -> list[str]:
    """Problems with the stored conversation (empty when it is whole)."""
    problems: list[str] = []
    users = [e for e in events if e.author == "user" and e.content and e.content.text == QUESTION]
    if len(users) != 1:
        problems.append(f"user message stored {len(users)} times")
    if any(e.partial for e in events):
        problems.append("a partial event was stored")
    calls: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    model_texts: list[str] = []
    for event in events:
        if event.author == "user":
            continue
        parts = event.content.parts if event.content else []
        for part in parts:
            if part.function_call is not None:
                calls[part.function_call.id] += 1
            if part.function_response is not None:
                answers[part.function_response.id] += 1
            if part.text and not part.thought:
                model_texts.append(part.text)
    if any(n != 1 for n in calls.values()):
        problems.append(f"a function call stored more than once: {dict(calls)}")
    if calls != answers:
        problems.append(f"calls {dict(calls)} do not match responses {dict(answers)}")
    if len(calls) != tool_rounds:
        problems.append(f"{len(calls)} stored calls, expected {tool_rounds}")
    expected_texts = [final_text] if final_text is not None else []
    if model_texts != expected_texts:  # no partial text, no text from a failed attempt
        problems.append(f"stored model text {model_texts!r}, expected {expected_texts!r}")
    expected_events = 1 + 2 * tool_rounds + (final_text is not None)  # user, call + response per round, answer
    if len(events) != expected_events:
        problems.append(f"{len(events)} stored events, expected {expected_events}: {[e.author for e in events]}")
    return problems


async def run_agent(wire: Any, server: LoopbackServer, db: Path, *, idle_timeout: float = 60.0, **options: Any) -> Any:
    agent = LlmAgent(
        name=APP, model=wire.model(server.url, idle_timeout), instruction="Help the user.", tools=[get_weather]
    )
    with SqliteSessionService(db) as sessions:
        return await agent.run_async(QUESTION, user_id=USER, session_id=SID, session_service=sessions, **options)


# -- the faults -------------------------------------------------------------------------------------


@dataclass
class Fault:
    name: str
    faults: Callable[[Any], list[Reply]]  # the replies that stand for the fault
    requests: int  # requests the server must see in all (tool round included)
    error: tuple[str, str] | None = None  # (category, code) when the run fails
    before_tool: bool = True  # success faults: fault first, then tool round + answer


def _5xx(wire: Any, status: int) -> Reply:
    return Reply(status, wire.error_body(status, f"transient {status}"))


FAULTS = [
    Fault(
        "429 with Retry-After",
        lambda w: [Reply(429, w.error_body(429, "slow down"), headers={"Retry-After": "0.05"})],
        3,
    ),
    Fault("429 without Retry-After", lambda w: [Reply(429, w.error_body(429, "slow down"))], 3),
    Fault("500/503 burst within budget", lambda w: [_5xx(w, 500), _5xx(w, 503), _5xx(w, 500)], 5),
    Fault("reset before any byte", lambda w: [_stream(w.text_chunks(["lost"]), drop_after=0)], 3),
    Fault(
        "500 whose gzip body is garbage", lambda w: [Reply(500, b"not gzip", headers={"Content-Encoding": "gzip"})], 3
    ),
    # failures: one complete tool round first, then the fault on the second model call
    Fault("500 until retries run out", lambda w: [_5xx(w, 500)] * 4, 1 + 4, ("unavailable", "http_500"), False),
    Fault(
        "dropped mid-stream",
        lambda w: [_stream(w.text_chunks(ANSWER, complete=False) + ["never sent"], drop_after=3)],
        2,
        ("unavailable", "stream_interrupted"),
        False,
    ),
    Fault(
        "stall before first event",
        lambda w: [_stream([": keep-alive\n\n", *w.text_chunks(ANSWER)], chunk_delay=2.0)] * 4,
        1 + 4,
        ("timeout", "timeout"),
        False,
    ),
    # Documented (http.py): once events flowed, a read timeout is a broken stream, not a timeout.
    Fault(
        "stall after first event",
        lambda w: [_stream(w.text_chunks(ANSWER), chunk_delay=2.0)],
        2,
        ("unavailable", "stream_interrupted"),
        False,
    ),
    Fault(
        "truncated SSE",
        lambda w: [_stream(w.text_chunks(ANSWER, complete=False))],
        2,
        ("unavailable", "stream_interrupted"),
        False,
    ),
    Fault(
        "malformed SSE line",
        lambda w: [_stream(w.text_chunks(ANSWER[:1], complete=False) + [w.malformed_line()])],
        2,
        ("internal", "invalid_response"),
        False,
    ),
    Fault(
        "chunk nested 10,000 deep",
        lambda w: [
            _stream(w.text_chunks(ANSWER[:1], complete=False) + ["data: " + "[" * 10_000 + "]" * 10_000 + "\n\n"])
        ],
        2,
        ("internal", "invalid_response"),
        False,
    ),
]


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name.replace(" ", "-"))
@pytest.mark.parametrize("provider", list(WIRES))
async def test_fault(provider: str, fault: Fault, tmp_path: Path, tally: Any) -> None:
    wire = WIRES[provider]
    db = tmp_path / "s.db"
    tool_round = _stream(wire.tool_chunks(GOOD_ARGS))
    answer = _stream(wire.text_chunks(ANSWER))
    if fault.error is None:
        script = [*fault.faults(wire), tool_round, answer]
    else:
        script = [tool_round, *fault.faults(wire)]
    with tally.case(f"fault: {provider} {fault.name}"):
        with LoopbackServer(script) as server:
            if fault.error is None:
                started = time.perf_counter()
                result = await run_agent(wire, server, db)
                waited = time.perf_counter() - started
                assert result.text == "".join(ANSWER)
                if "Retry-After" in fault.name and "without" not in fault.name:
                    assert waited >= 0.05, f"Retry-After 0.05 s not honoured (run took {waited:.3f} s)"
            else:
                with pytest.raises(AdkError) as info:
                    await run_agent(wire, server, db, idle_timeout=IDLE)
            seen = len(server.requests)
        assert seen == fault.requests, f"the server saw {seen} requests, expected {fault.requests}"
        if fault.error is not None:
            category, code = fault.error
            error = info.value
            assert (error.component, str(error.category.value), error.code) == ("model", category, code), repr(error)
        events = await stored_events(db)
        final = "".join(ANSWER) if fault.error is None else None
        assert check_session(events, tool_rounds=1, final_text=final) == []


# -- invalid JSON in streamed tool-call arguments ------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_invalid_tool_arguments_are_answered_with_an_error(provider: str, tmp_path: Path, tally: Any) -> None:
    if provider == "gemini":
        pytest.skip("Gemini sends functionCall.args as a JSON object, never as text: nothing to mis-parse")
    wire = WIRES[provider]
    db = tmp_path / "s.db"
    script = [_stream(wire.tool_chunks('{"city": "Tok')), _stream(wire.text_chunks(ANSWER))]
    with tally.case(f"fault: {provider} invalid JSON in tool arguments"):
        with LoopbackServer(script) as server:
            result = await run_agent(wire, server, db)
            assert result.text == "".join(ANSWER)
            assert len(server.requests) == 2  # no retry: the error goes back to the model
            second = json.dumps(server.requests[1].json())
            assert "invalid_arguments" in second and "not valid JSON" in second
        events = await stored_events(db)
        assert check_session(events, tool_rounds=1, final_text="".join(ANSWER)) == []
        [response] = [p.function_response for e in events if e.content for p in e.content.parts if p.function_response]
        assert response.response.get("code") == "invalid_arguments"
        assert "not valid JSON" in response.response.get("error", "")


# -- an answer without candidates / choices ---------------------------------------------------
@pytest.mark.parametrize(
    ("provider", "streaming"),
    [
        pytest.param("openai", True, id="openai-streamed"),
        pytest.param("openai", False, id="openai-not-streamed"),
        pytest.param("gemini", True, id="gemini-streamed"),
        pytest.param("gemini", False, id="gemini-not-streamed"),
        pytest.param("anthropic", True, id="anthropic"),
    ],
)
async def test_empty_answer_is_a_clear_error(provider: str, streaming: bool, tmp_path: Path, tally: Any) -> None:
    if provider == "anthropic":
        pytest.skip("the Messages API has no candidate/choice list to be empty")
    wire = WIRES[provider]
    db = tmp_path / "s.db"
    empty = (
        _stream(wire.empty_answer())
        if streaming
        else Reply(
            200,
            {"id": "c1", "object": "chat.completion", "choices": []}
            if provider == "openai"
            else {"candidates": [], "usageMetadata": {"promptTokenCount": 5}},
        )
    )
    expected = {"openai": ("unavailable", "no_choices"), "gemini": ("internal", "empty_response")}[provider]
    # Streamed: a complete tool round first. Not streamed: the empty answer is the first one.
    script = [_stream(wire.tool_chunks(GOOD_ARGS)), empty] if streaming else [empty]
    label = "candidates" if provider == "gemini" else "choices"
    with tally.case(f"fault: {provider} empty {label} ({'streamed' if streaming else 'not streamed'})"):
        with LoopbackServer(script) as server:
            with pytest.raises(AdkError) as info:
                await run_agent(wire, server, db, streaming=streaming)
            assert len(server.requests) == len(script)  # not retried: the server answered
        error = info.value
        assert (error.component, str(error.category.value), error.code) == ("model", *expected), repr(error)
        assert check_session(await stored_events(db), tool_rounds=len(script) - 1, final_text=None) == []
