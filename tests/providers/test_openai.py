"""OpenAIModel against a loopback server speaking the Chat Completions wire format."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    FunctionResponse,
    GenerateContentConfig,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    Part,
    Runner,
    tool,
)
from adk_notebook.core.content import INVALID_ARGUMENTS_KEY
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel
from adk_notebook.tools.base import FunctionDeclaration

KEY = "sk-" + "proj-TOPSECRET-abcdef123456"
FAST = RetryPolicy(max_retries=3, initial_delay=0.01, max_delay=0.05)
SSE = {"Content-Type": "text/event-stream"}
PNG = b"\x89PNG\r\n\x1a\nfake-image"


# -- the wire format, as OpenAI documents it ------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }


def usage_chunk(prompt: int = 10, completion: int = 5) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [],
        "usage": usage,
    }


def text_stream(*pieces: str, finish: str = "stop") -> Reply:
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in pieces]
    chunks += [chunk({}, finish), usage_chunk()]
    return Reply(200, sse(*chunks, "[DONE]"), headers=SSE)


def tool_stream(*calls: tuple[str, str, dict[str, Any]], split: int = 7, finish: str = "tool_calls") -> Reply:
    """Each call's arguments cut into `split`-character deltas, calls interleaved by index."""
    chunks = [chunk({"role": "assistant", "content": None})]
    pieces = []
    for index, (call_id, name, args) in enumerate(calls):
        text = json.dumps(args)
        first = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        rest = [{"index": index, "function": {"arguments": text[i : i + split]}} for i in range(0, len(text), split)]
        pieces.append([first, *rest])
    for step in range(max(len(p) for p in pieces)):
        for p in pieces:
            if step < len(p):
                chunks.append(chunk({"tool_calls": [p[step]]}))
    chunks += [chunk({}, finish), usage_chunk(20, 8)]
    return Reply(200, sse(*chunks, "[DONE]"), headers=SSE)


def completion(message: dict[str, Any], finish: str = "stop") -> Reply:
    return Reply(
        200,
        {
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {"index": 0, "message": {"role": "assistant", **message}, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        },
    )


def model_for(server: LoopbackServer, **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("retry", FAST)
    return OpenAIModel("gpt-4o-mini", base_url=server.url + "/v1", **kwargs)


async def responses(model: OpenAIModel, request: LlmRequest, stream: bool) -> list[LlmResponse]:
    return [r async for r in model.generate_content(request, stream=stream)]


def ask(text: str = "Hi", **kwargs: Any) -> LlmRequest:
    return LlmRequest(model="gpt-4o-mini", contents=[Content.user(text)], **kwargs)


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}


# -- text -----------------------------------------------------------------------------------------


async def test_plain_text_request_and_response() -> None:
    with LoopbackServer([completion({"content": "Hello!"})]) as server:
        model = model_for(server)
        config = GenerateContentConfig(
            temperature=0.2, top_p=0.9, top_k=5, max_output_tokens=64, stop_sequences=["END"]
        )
        [response] = await responses(model, ask("Hi", system_instruction="Be brief.", config=config), stream=False)
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json() == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 64,  # OpenAI's name; top_k is not an OpenAI parameter
        "stop": ["END"],
    }
    assert not response.partial and response.content.text == "Hello!"
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 3, 15)


async def test_other_servers_get_max_tokens_and_top_k() -> None:
    with LoopbackServer([completion({"content": "ok"})]) as server:
        model = model_for(server, provider_name="ollama", api_key=None)
        await responses(model, ask(config=GenerateContentConfig(max_output_tokens=10, top_k=3)), stream=False)
    body = server.requests[0].json()
    assert body["max_tokens"] == 10 and body["top_k"] == 3 and "max_completion_tokens" not in body
    assert "authorization" not in server.requests[0].headers  # no key, no header


async def test_streamed_text() -> None:
    with LoopbackServer([text_stream("Hel", "lo, ", "world")]) as server:
        model = model_for(server)
        out = await responses(model, ask(), stream=True)
    body = server.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    partials, final = out[:-1], out[-1]
    assert [r.content.text for r in partials] == ["Hel", "lo, ", "world"]
    assert all(r.partial and not r.turn_complete for r in partials)
    assert not final.partial and final.content.text == "Hello, world" and final.finish_reason == "stop"
    assert final.usage.total_tokens == 15


async def test_reasoning_deltas_become_thoughts() -> None:
    chunks = [
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "hard"}),
        chunk({"content": "42"}),
        chunk({}, "stop"),
    ]
    with LoopbackServer([Reply(200, sse(*chunks, "[DONE]"), headers=SSE)]) as server:
        out = await responses(model_for(server, provider_name="deepseek"), ask(), stream=True)
    final = out[-1]
    assert [(p.text, p.thought) for p in final.content.parts] == [("think hard", True), ("42", False)]
    assert final.content.text == "42"


# -- tool calls -----------------------------------------------------------------------------------


async def test_one_streamed_tool_call_is_assembled() -> None:
    decl = FunctionDeclaration(
        "get_weather", "Get the weather.", {"type": "object", "properties": {"city": {"type": "string"}}}
    )
    with LoopbackServer([tool_stream(("call_1", "get_weather", {"city": "Tokyo", "unit": "celsius"}))]) as server:
        out = await responses(model_for(server), ask(tools=[decl]), stream=True)
    assert server.requests[0].json()["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Get the weather.", "parameters": decl.parameters},
        }
    ]
    assert len(out) == 1  # no text, so no partial responses
    assert out[0].content.function_calls() == [
        FunctionCall("get_weather", {"city": "Tokyo", "unit": "celsius"}, "call_1")
    ]
    assert out[0].finish_reason == "tool_calls" and out[0].usage.input_tokens == 20


async def test_parallel_streamed_tool_calls_keep_their_order() -> None:
    calls = [
        ("call_a", "get_weather", {"city": "Tokyo"}),
        ("call_b", "get_weather", {"city": "Paris, France"}),
        ("call_c", "get_time", {}),
    ]
    with LoopbackServer([tool_stream(*calls, split=3)]) as server:
        [final] = await responses(model_for(server), ask(), stream=True)
    assert final.content.function_calls() == [FunctionCall(n, a, i) for i, n, a in calls]


async def test_parallel_calls_that_all_use_index_zero() -> None:
    """Ollama numbers every call of a parallel batch 0; a new id starts a new call."""
    deltas = [
        {"index": 0, "id": "call_x", "type": "function", "function": {"name": "a", "arguments": '{"n": 1}'}},
        {"index": 0, "id": "call_y", "type": "function", "function": {"name": "b", "arguments": '{"n": 2}'}},
    ]
    chunks = [chunk({"tool_calls": [d]}) for d in deltas] + [chunk({}, "tool_calls")]
    with LoopbackServer([Reply(200, sse(*chunks, "[DONE]"), headers=SSE)]) as server:
        [final] = await responses(model_for(server), ask(), stream=True)
    assert final.content.function_calls() == [
        FunctionCall("a", {"n": 1}, "call_x"),
        FunctionCall("b", {"n": 2}, "call_y"),
    ]


async def test_non_streamed_tool_calls() -> None:
    message = {
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": ""}},
        ],
    }
    with LoopbackServer([completion(message, "tool_calls")]) as server:
        [response] = await responses(model_for(server), ask(), stream=False)
    assert response.content.function_calls() == [
        FunctionCall("get_weather", {"city": "Lima"}, "call_1"),
        FunctionCall("get_weather", {}, "call_2"),
    ]
    assert response.finish_reason == "tool_calls"


async def test_invalid_tool_arguments_go_back_to_the_model() -> None:
    deltas = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Tok'},
        }
    ]
    chunks = [chunk({"tool_calls": deltas}), chunk({}, "tool_calls")]
    with LoopbackServer([Reply(200, sse(*chunks, "[DONE]"), headers=SSE)]) as server:
        [final] = await responses(model_for(server), ask(), stream=True)
    [call] = final.content.function_calls()
    assert call.name == "get_weather" and call.id == "call_1"
    assert list(call.args) == [INVALID_ARGUMENTS_KEY]
    assert "not valid JSON" in call.args[INVALID_ARGUMENTS_KEY] and '{"city": "Tok' in call.args[INVALID_ARGUMENTS_KEY]
    # No tool accepts that key, so the agent answers the call with an error the model can read.
    with pytest.raises(ValueError):
        get_weather.validate_args(call.args)


async def test_tool_arguments_cut_off_by_the_token_limit() -> None:
    deltas = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Tok'},
        }
    ]
    chunks = [chunk({"tool_calls": deltas}), chunk({}, "length")]
    with LoopbackServer([Reply(200, sse(*chunks, "[DONE]"), headers=SSE)]) as server:
        with pytest.raises(AdkError) as info:
            await responses(model_for(server), ask(), stream=True)
    assert info.value.code == "truncated_tool_call" and "max_output_tokens" in info.value.message
    assert "get_weather" in info.value.message


# -- the agent loop -------------------------------------------------------------------------------


async def test_agent_loop_with_a_tool() -> None:
    replies = [tool_stream(("call_w1", "get_weather", {"city": "Tokyo"})), text_stream("It is ", "sunny in Tokyo.")]
    with LoopbackServer(replies) as server:
        agent = LlmAgent(name="weather", model=model_for(server), instruction="Help the user.", tools=[get_weather])
        result = await agent.run_async("Weather in Tokyo?")
    assert result.text == "It is sunny in Tokyo."
    assert result.usage.input_tokens == 30 and result.usage.output_tokens == 13
    partial_texts = [e.text for e in result.events if e.partial]
    assert partial_texts == ["It is ", "sunny in Tokyo."]
    second = server.requests[1].json()
    call_id = second["messages"][2]["tool_calls"][0]["id"]  # the agent's own, unique in the session
    assert call_id.startswith("adk-") and len(call_id) <= 40
    assert second["messages"] == [
        {"role": "system", "content": "Help the user."},
        {"role": "user", "content": "Weather in Tokyo?"},
        {
            "role": "assistant",
            "content": "",  # not null: llama.cpp's server rejects null (tests/providers/test_llama_server.py)
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"city": "Tokyo", "condition": "sunny"})},
    ]


async def test_invalid_arguments_in_an_agent_run_reach_the_model_as_an_error() -> None:
    deltas = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{city: Tokyo}"},
        }
    ]
    bad = Reply(200, sse(chunk({"tool_calls": deltas}), chunk({}, "tool_calls"), "[DONE]"), headers=SSE)
    with LoopbackServer([bad, text_stream("Sorry.")]) as server:
        agent = LlmAgent(name="weather", model=model_for(server), tools=[get_weather])
        result = await agent.run_async("Weather?")
    assert result.text == "Sorry."
    *_, assistant, tool_message = server.requests[1].json()["messages"]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "error" in json.loads(tool_message["content"])


async def test_multimodal_function_response_request_shape() -> None:
    history = [
        Content.user("Plot sales."),
        Content("model", [Part(function_call=FunctionCall("get_chart", {"q": "sales"}, "call_9"))]),
        Content(
            "tool",
            [
                Part(
                    function_response=FunctionResponse(
                        "get_chart",
                        {"status": "ok", "charts": 2},
                        "call_9",
                        parts=[
                            Part.from_bytes("image/png", PNG),
                            Part.from_uri("image/jpeg", "https://example.com/c.jpg"),
                        ],
                    )
                )
            ],
        ),
    ]
    with LoopbackServer([completion({"content": "Here."})]) as server:
        await responses(model_for(server), LlmRequest(contents=history), stream=False)
    messages = server.requests[0].json()["messages"]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": json.dumps({"status": "ok", "charts": 2}),
    }
    assert messages[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images returned by tool get_chart (call call_9):"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
            {"type": "image_url", "image_url": {"url": "https://example.com/c.jpg"}},
        ],
    }
    assert len(messages) == 4


async def test_user_images_become_image_url_parts() -> None:
    content = (
        Content.user("What is this?")
        .with_inline_data("image/png", PNG)
        .with_file_uri("image/webp", "https://x.test/a.webp")
    )
    with LoopbackServer([completion({"content": "A chart."})]) as server:
        await responses(model_for(server), LlmRequest(contents=[content]), stream=False)
    assert server.requests[0].json()["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.webp"}},
    ]


# -- structured output ----------------------------------------------------------------------------


SCHEMA = {"title": "Weather Report", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def test_output_schema_request_shape() -> None:
    with LoopbackServer([completion({"content": '{"city": "Tokyo"}'})]) as server:
        config = GenerateContentConfig(response_schema=SCHEMA, response_mime_type="application/json")
        [response] = await responses(model_for(server), ask("Weather?", config=config), stream=False)
    body = server.requests[0].json()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather_Report", "schema": SCHEMA, "strict": False},
    }
    assert response.content.text == '{"city": "Tokyo"}'


async def test_json_mode_adds_the_word_json_when_missing() -> None:
    replies = [completion({"content": "{}"}), completion({"content": "{}"}), completion({"content": "{}"})]
    with LoopbackServer(replies) as server:
        model = model_for(server)
        config = GenerateContentConfig(response_mime_type="application/json")
        await responses(model, ask("List three colours.", config=config), stream=False)
        await responses(model, ask("Answer in JSON please.", config=config), stream=False)
        deepseek = model_for(server, provider_name="deepseek")
        await responses(deepseek, ask("Weather?", config=GenerateContentConfig(response_schema=SCHEMA)), stream=False)
    first, second, third = (r.json() for r in server.requests)
    assert first["response_format"] == {"type": "json_object"}
    assert first["messages"][0] == {"role": "system", "content": "Respond with JSON."}
    assert [m["role"] for m in second["messages"]] == ["user"]  # already mentions JSON
    assert third["response_format"] == {"type": "json_object"}  # DeepSeek has no json_schema mode
    assert third["messages"][0]["role"] == "system" and '"city"' in third["messages"][0]["content"]


# -- failures -------------------------------------------------------------------------------------


async def test_429_with_retry_after_then_success() -> None:
    limited = Reply(
        429,
        {"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}},
        headers={"retry-after": "0.2"},
    )
    with LoopbackServer([limited, text_stream("ok")]) as server:
        started = time.perf_counter()
        out = await responses(model_for(server), ask(), stream=True)
        waited = time.perf_counter() - started
    assert len(server.requests) == 2 and out[-1].content.text == "ok"
    assert 0.19 <= waited < 1.5


async def test_openai_retry_after_ms_header() -> None:
    limited = Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after-ms": "150"})
    with LoopbackServer([limited, completion({"content": "ok"})]) as server:
        started = time.perf_counter()
        await responses(model_for(server), ask(), stream=False)
        assert time.perf_counter() - started >= 0.14
    assert len(server.requests) == 2


async def test_500_until_retries_run_out() -> None:
    with LoopbackServer([Reply(500, {"error": {"message": "The server had an error"}})] * 6) as server:
        with pytest.raises(AdkError) as info:
            await responses(model_for(server), ask(), stream=True)
    assert len(server.requests) == 4  # 1 + 3 retries
    assert (info.value.component, info.value.category) == ("model", "unavailable")
    assert "The server had an error" in info.value.message


async def test_401_is_unauthorized_and_never_shows_the_key() -> None:
    body = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com.",
            "code": "invalid_api_key",
        }
    }
    with LoopbackServer([Reply(401, body)]) as server:
        model = model_for(server)
        with pytest.raises(AdkError) as info:
            await responses(model, ask(), stream=False)
    error = info.value
    assert error.category == "unauthorized" and "Incorrect API key provided" in error.message
    for text in (
        str(error),
        repr(error),
        repr(model),
        str(model),
        repr(model.provider),
        repr(model.provider.transport),
        str(error.details),
    ):
        assert KEY not in text and KEY[8:] not in text
    assert len(server.requests) == 1


async def test_malformed_stream_line() -> None:
    body = sse(chunk({"content": "Hi"})) + ["data: {not json\n\n"]
    with LoopbackServer([Reply(200, body, headers=SSE)]) as server:
        with pytest.raises(AdkError) as info:
            await responses(model_for(server), ask(), stream=True)
    assert info.value.code == "invalid_response" and "`stream chunk` is not JSON" in info.value.message
    assert "{not json" in info.value.message and info.value.details == {"provider": "openai", "field": "stream chunk"}


async def test_error_inside_a_stream() -> None:
    """OpenRouter reports upstream failures as an `error` chunk in a 200 stream."""
    body = sse(chunk({"content": "Hi"}), {"error": {"code": 502, "message": "Upstream provider failed"}})
    with LoopbackServer([Reply(200, body, headers=SSE)]) as server:
        with pytest.raises(AdkError) as info:
            await responses(model_for(server, provider_name="openrouter"), ask(), stream=True)
    assert info.value.category == "unavailable" and "Upstream provider failed" in info.value.message


async def test_stream_that_ends_without_finishing() -> None:
    with LoopbackServer([Reply(200, sse(chunk({"content": "Hel"})), headers=SSE)]) as server:
        with pytest.raises(AdkError) as info:
            await responses(model_for(server), ask(), stream=True)
    assert info.value.code == "stream_interrupted"


async def test_dropped_connection_mid_stream() -> None:
    reply = text_stream("one ", "two ", "three")
    reply.drop_after = 3
    with LoopbackServer([reply]) as server:
        seen: list[str] = []
        with pytest.raises(AdkError) as info:
            async for response in model_for(server).generate_content(ask(), stream=True):
                seen.append(response.content.text)
    assert (info.value.category, info.value.code) == ("unavailable", "stream_interrupted")
    assert seen == ["one ", "two "]  # what arrived was streamed; then a clear error, no final response
    assert len(server.requests) == 1


async def test_dropped_stream_leaves_no_half_written_event_in_the_session() -> None:
    reply = text_stream("The weather ", "in Tokyo ", "is")
    reply.drop_after = 3
    with LoopbackServer([reply]) as server:
        sessions = InMemorySessionService()
        agent = LlmAgent(name="weather", model=model_for(server))
        runner = Runner(app_name="demo", agent=agent, session_service=sessions)
        session = await sessions.create(app_name="demo", user_id="u1")
        partials = []
        with pytest.raises(AdkError) as info:
            async for event in runner.run(user_id="u1", session_id=session.id, content=Content.user("Weather?")):
                if event.partial:
                    partials.append(event.text)
    assert info.value.code == "stream_interrupted"
    assert partials  # the user saw the text stream...
    stored = await sessions.get(app_name="demo", user_id="u1", session_id=session.id)
    assert [e.author for e in stored.events] == ["user"]  # ...but no half answer was stored
    assert not any(e.partial for e in stored.events)


# -- keys and configuration -----------------------------------------------------------------------


async def test_missing_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIModel("gpt-4o-mini")
    with pytest.raises(AdkError) as info:
        await responses(model, ask(), stream=False)
    assert (info.value.component, info.value.category) == ("config", "unauthorized")
    assert "OPENAI_API_KEY" in info.value.message


async def test_key_and_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer([completion({"content": "ok"})]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1/")
        model = OpenAIModel("gpt-4o-mini", retry=FAST)
        assert KEY not in repr(model)
        await responses(model, ask(), stream=False)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.requests[0].path == "/v1/chat/completions"


async def test_other_providers_never_get_the_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer([completion({"content": "ok"})]) as server:
        model = OpenAIModel("llama3.2", base_url=server.url + "/v1", provider_name="ollama")
        await responses(model, ask(), stream=False)
    assert "authorization" not in server.requests[0].headers


async def test_extra_headers_are_sent() -> None:
    with LoopbackServer([completion({"content": "ok"})]) as server:
        model = model_for(
            server, provider_name="openrouter", extra_headers={"HTTP-Referer": "https://example.com", "X-Title": "demo"}
        )
        await responses(model, ask(), stream=False)
    assert server.requests[0].headers["http-referer"] == "https://example.com"
    assert server.requests[0].headers["x-title"] == "demo"


async def test_a_key_set_after_the_model_was_made_is_picked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIModel("gpt-4o-mini")
    with pytest.raises(AdkError):
        model.generate_content(ask())
    with LoopbackServer([completion({"content": "ok"})]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        model.provider.retry = FAST
        model.provider.base_url = server.url + "/v1"  # stand-in for api.openai.com
        [response] = await responses(model, ask(), stream=False)
    assert response.content.text == "ok"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(model)
