"""AnthropicModel against a loopback server speaking the Messages API's wire format.

Shapes follow https://docs.claude.com/en/api/messages (request, `tool_use` / `tool_result`
blocks, image and document blocks inside a tool result), the streaming event sequence
(message_start, content_block_start/delta/stop, message_delta, message_stop, ping, error) and
structured outputs (`output_config.format`).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse
from pydantic import BaseModel, Field

from adk_notebook import (
    AdkError,
    AnthropicModel,
    Content,
    FunctionCall,
    FunctionResponse,
    GenerateContentConfig,
    LlmAgent,
    LlmRequest,
    Part,
    tool,
)
from adk_notebook.models.http import RetryPolicy

KEY = "sk-ant-" + "api03-test-DUMMY0123456789"
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.02)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.7\n%fake\n"


def make_model(server: LoopbackServer, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(api_key=KEY, base_url=server.url, retry=FAST, **kwargs)


def message(*blocks: dict[str, Any], stop: str = "end_turn", usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A complete (non-streamed) Message."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 20, "output_tokens": 6},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def stream(*events: dict[str, Any] | str, **kwargs: Any) -> Reply:
    """An SSE reply; each event is named after its `type`, as Anthropic sends them."""
    names = [e["type"] if isinstance(e, dict) else "message_delta" for e in events]
    return Reply(200, sse(*events, event_names=names), headers={"Content-Type": "text/event-stream"}, **kwargs)


def start(input_tokens: int = 25) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            **message(usage={"input_tokens": input_tokens, "output_tokens": 1}),
            "content": [],
            "stop_reason": None,
        },
    }


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}} for p in pieces),
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, call_id: str, name: str, *json_pieces: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
        *(
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in json_pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def end(stop: str = "end_turn", output_tokens: int = 15) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


async def generate(model: AnthropicModel, request: LlmRequest, stream: bool = False) -> list:
    return [r async for r in model.generate_content(request, stream=stream)]


def ask(value: str = "Hi", **kwargs: Any) -> LlmRequest:
    return LlmRequest(contents=[Content.user(value)], **kwargs)


@tool
def get_weather(city: str, unit: str | None = None) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
        unit: "celsius" or "fahrenheit".
    """
    return {"city": city, "condition": "sunny"}


# -- request shape ------------------------------------------------------------------------------
async def test_request_shape_headers_path_and_body(server: LoopbackServer) -> None:
    server.script.append(Reply(200, message(text("ok"))))
    request = LlmRequest(
        system_instruction="You are terse.",
        contents=[
            Content.user("Weather in Tokyo and Paris?"),
            Content(
                "model",
                [
                    Part(text="Checking."),
                    Part(text="(private reasoning)", thought=True),
                    Part(function_call=FunctionCall("get_weather", {"city": "Tokyo"}, "toolu_1")),
                    Part(function_call=FunctionCall("get_weather", {"city": "Paris"}, "toolu_2")),
                ],
            ),
            Content(
                "tool",
                [
                    Part(function_response=FunctionResponse("get_weather", {"temp": 21}, "toolu_1")),
                    Part(function_response=FunctionResponse("get_weather", {"error": "Paris is closed"}, "toolu_2")),
                ],
            ),
            Content.user("And in °F?"),  # a second user message in a row: merged after the results
        ],
        tools=[get_weather.declaration()],
        config=GenerateContentConfig(temperature=0.3, top_k=5, stop_sequences=["END"]),
    )
    model = make_model(server)
    [response] = await generate(model, request)
    await model.aclose()

    sent = server.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    body = sent.json()
    assert body["model"] == "claude-sonnet-4-6"
    assert body["max_tokens"] == 4096  # required by the API, always sent
    assert body["system"] == "You are terse."
    assert (body["temperature"], body["top_k"], body["stop_sequences"]) == (0.3, 5, ["END"])
    assert "stream" not in body and "output_config" not in body
    assert body["messages"] == [
        {"role": "user", "content": [text("Weather in Tokyo and Paris?")]},
        {
            "role": "assistant",
            "content": [
                text("Checking."),
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Tokyo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [text('{"temp": 21}')]},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [text('{"error": "Paris is closed"}')],
                    "is_error": True,
                },
                text("And in °F?"),
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "input_schema": get_weather.declaration().parameters,
        }
    ]
    assert body["tools"][0]["input_schema"]["properties"]["city"] == {
        "type": "string",
        "description": "The city to look up.",
    }
    assert response.content.text == "ok"


async def test_max_output_tokens_and_environment_key(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-anthropic-key")
    server.script += [Reply(200, message(text("a"))), Reply(200, message(text("b")))]
    model = AnthropicModel("claude-haiku-4-5", base_url=server.url, max_tokens=1000, retry=FAST)
    await generate(model, ask())
    await generate(model, ask(config=GenerateContentConfig(max_output_tokens=50)))
    first, second = server.requests
    assert first.headers["x-api-key"] == "env-anthropic-key"
    assert (first.json()["model"], first.json()["max_tokens"], second.json()["max_tokens"]) == (
        "claude-haiku-4-5",
        1000,
        50,
    )

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(AdkError) as caught:
        AnthropicModel()
    assert (caught.value.category.value, caught.value.code) == ("unauthorized", "missing_api_key")
    assert "ANTHROPIC_API_KEY" in str(caught.value)


# -- answers ------------------------------------------------------------------------------------
async def test_plain_text(server: LoopbackServer) -> None:
    usage = {"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 6}
    server.script.append(Reply(200, message(text("Hello"), text(" there."), usage=usage)))
    [response] = await generate(make_model(server), ask())
    assert not response.partial
    assert [p.text for p in response.content.parts] == ["Hello", " there."]
    assert response.content.text == "Hello there."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (120, 6, 126)


async def test_streamed_text(server: LoopbackServer) -> None:
    server.script.append(
        stream(
            start(input_tokens=25),
            {"type": "ping"},
            *text_block(0, "The weather ", "in Tokyo ", "is sunny."),
            *end(output_tokens=12),
            chunk_delay=0.01,
        )
    )
    responses = await generate(make_model(server), ask(), stream=True)

    assert server.requests[0].json()["stream"] is True
    *partials, final = responses
    assert [r.content.text for r in partials] == ["The weather ", "in Tokyo ", "is sunny."]
    assert all(r.partial and not r.turn_complete for r in partials)
    assert not final.partial and final.content.text == "The weather in Tokyo is sunny."
    assert final.finish_reason == "stop"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (25, 12)


async def test_one_tool_call_streamed(server: LoopbackServer) -> None:
    server.script.append(
        stream(
            start(),
            *text_block(0, "Let me check."),
            *tool_block(1, "toolu_01A", "get_weather", "", '{"ci', 'ty": "Pa', 'ris"}'),
            *end("tool_use"),
        )
    )
    *partials, final = await generate(make_model(server), ask(tools=[get_weather.declaration()]), stream=True)
    assert [p.content.text for p in partials] == ["Let me check."]
    assert final.content.text == "Let me check."
    [call] = final.content.function_calls()
    assert (call.name, call.args, call.id) == ("get_weather", {"city": "Paris"}, "toolu_01A")
    assert final.finish_reason == "tool_calls"


async def test_parallel_tool_calls(server: LoopbackServer) -> None:
    server.script.append(
        Reply(
            200,
            message(
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
                stop="tool_use",
            ),
        )
    )
    [response] = await generate(make_model(server), ask(tools=[get_weather.declaration()]))
    assert [(c.id, c.args) for c in response.content.function_calls()] == [
        ("toolu_1", {"city": "Paris"}),
        ("toolu_2", {"city": "Rome"}),
    ]
    assert response.finish_reason == "tool_calls"


async def test_agent_loop_through_the_public_api(server: LoopbackServer) -> None:
    server.script += [
        stream(start(), *tool_block(0, "toolu_9", "get_weather", '{"city": "Tokyo"}'), *end("tool_use")),
        stream(start(), *text_block(0, "It is sunny ", "in Tokyo."), *end()),
    ]
    agent = LlmAgent(
        name="weather",
        model=AnthropicModel(base_url=server.url, api_key="test-key", retry=FAST),
        instruction="Answer weather questions.",
        tools=[get_weather],
    )
    result = await agent.run_async("Weather in Tokyo?")

    assert result.text == "It is sunny in Tokyo."
    first, second = (r.json() for r in server.requests)
    assert first["system"] == "Answer weather questions."
    call_id = second["messages"][1]["content"][0]["id"]  # the agent's own, unique in the session
    assert re.fullmatch(r"adk-[A-Za-z0-9_-]+", call_id), call_id  # what Anthropic's tool_use ids allow
    assert second["messages"] == [
        {"role": "user", "content": [text("Weather in Tokyo?")]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": "Tokyo"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": [text('{"city": "Tokyo", "condition": "sunny"}')],
                }
            ],
        },
    ]
    assert result.usage.output_tokens == 30


async def test_multimodal_tool_result(server: LoopbackServer) -> None:
    server.script.append(Reply(200, message(text("A chart, a report and a photo."))))
    response = FunctionResponse(
        "render",
        {"status": "ok"},
        "toolu_5",
        parts=[
            Part.from_bytes("image/png", PNG),
            Part.from_bytes("application/pdf", PDF),
            Part.from_uri("image/jpeg", "https://example.com/photo.jpg"),
            Part.from_uri("application/pdf", "https://example.com/report.pdf"),
            Part.from_uri("video/mp4", "gs://bucket/clip.mp4"),
        ],
    )
    request = LlmRequest(
        contents=[
            Content.user("Render it."),
            Content("model", [Part(function_call=FunctionCall("render", {}, "toolu_5"))]),
            Content("tool", [Part(function_response=response)]),
        ]
    )
    await generate(make_model(server), request)
    [result] = server.requests[0].json()["messages"][2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_5"
    # Everything the tool returned sits INSIDE the tool_result's content list.
    json_text, image, pdf, photo, report, clip = result["content"]
    assert json_text == text('{"status": "ok"}')
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
    }
    assert pdf == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(PDF).decode()},
    }
    assert photo == {"type": "image", "source": {"type": "url", "url": "https://example.com/photo.jpg"}}
    assert report == {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}}
    assert clip["type"] == "text" and "gs://bucket/clip.mp4" in clip["text"]  # said, not silently dropped


async def test_tool_returning_an_image_through_the_agent(server: LoopbackServer) -> None:
    @tool
    def render_chart(title: str) -> dict:
        """Render a chart."""
        return {"title": title, "inline_data": [{"mime_type": "image/png", "data": PNG}]}

    server.script += [
        stream(start(), *tool_block(0, "toolu_c", "render_chart", '{"title": "Q4"}'), *end("tool_use")),
        stream(start(), *text_block(0, "Here is the chart."), *end()),
    ]
    result = await LlmAgent(name="charts", model=make_model(server), tools=[render_chart]).run_async("Chart Q4")
    assert result.text == "Here is the chart."
    call_id = server.requests[1].json()["messages"][1]["content"][0]["id"]
    assert server.requests[1].json()["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": [
                    text('{"title": "Q4"}'),
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
                    },
                ],
            }
        ],
    }


async def test_output_schema(server: LoopbackServer) -> None:
    class City(BaseModel):
        name: str = Field(min_length=1)
        population: int | None = Field(default=None, ge=0)

    class Answer(BaseModel):
        cities: list[City]

    reply = json.dumps({"cities": [{"name": "Tokyo", "population": 14000000}]})
    server.script.append(Reply(200, message(text(reply))))
    config = GenerateContentConfig(response_schema=Answer.model_json_schema(), response_mime_type="application/json")
    [response] = await generate(make_model(server), ask("Largest city?", config=config))

    body = server.requests[0].json()
    assert "tools" not in body and "tool_choice" not in body  # native structured output, no forced tool
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    city = fmt["schema"]["properties"]["cities"]["items"]
    assert "$ref" not in json.dumps(fmt) and "$defs" not in fmt["schema"] and "title" not in json.dumps(fmt)
    assert fmt["schema"]["additionalProperties"] is False and city["additionalProperties"] is False
    assert city["properties"]["name"] == {"type": "string", "description": "(minLength: 1)"}
    population = city["properties"]["population"]
    assert population["anyOf"][0] == {"type": "integer", "description": "(minimum: 0)"}
    assert Answer.model_validate_json(response.content.text).cities[0].name == "Tokyo"


# -- failures -----------------------------------------------------------------------------------
async def test_429_then_success(server: LoopbackServer) -> None:
    server.script += [
        Reply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited."}},
            headers={"retry-after": "0"},
        ),
        stream(start(), *text_block(0, "made it"), *end()),
    ]
    *_, final = await generate(make_model(server), ask(), stream=True)
    assert final.content.text == "made it"
    assert len(server.requests) == 2


async def test_500_until_retries_run_out(server: LoopbackServer) -> None:
    failure = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    server.script += [Reply(500, failure) for _ in range(3)]
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask())
    assert len(server.requests) == 3
    assert caught.value.category.value == "unavailable"
    assert "Internal server error" in str(caught.value)


async def test_error_event_mid_stream(server: LoopbackServer) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script.append(stream(start(), *text_block(0, "Partial")[:2], overloaded))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    error = caught.value
    assert (error.component, error.category.value, error.code) == ("model", "unavailable", "overloaded_error")
    assert error.is_retryable() and "Overloaded" in error.message


async def test_malformed_stream(server: LoopbackServer) -> None:
    server.script.append(stream(start(), "{not json"))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert caught.value.code == "invalid_response" and "not JSON" in caught.value.message


async def test_dropped_connection_mid_stream(server: LoopbackServer) -> None:
    events = [start(), *text_block(0, "The answer ", "is", " 42"), *end()]
    server.script.append(stream(*events, drop_after=4))
    seen = []
    with pytest.raises(AdkError) as caught:
        async for response in make_model(server).generate_content(ask(), stream=True):
            seen.append(response.content.text)
    assert seen == ["The answer ", "is"]
    assert (caught.value.category.value, caught.value.code) == ("unavailable", "stream_interrupted")
    assert len(server.requests) == 1


async def test_stream_without_message_stop_is_incomplete(server: LoopbackServer) -> None:
    server.script.append(stream(start(), *text_block(0, "Half an ans")))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert caught.value.code == "stream_interrupted"


async def test_refusal(server: LoopbackServer) -> None:
    server.script.append(stream(start(), *end("refusal", output_tokens=0)))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert (caught.value.category.value, caught.value.code) == ("forbidden", "safety_blocked")
    assert not caught.value.is_retryable()


async def test_api_key_is_never_shown(server: LoopbackServer) -> None:
    model = make_model(server)
    assert KEY not in repr(model) and KEY not in str(model)
    server.script += [
        Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}),
        stream(start(), {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        stream("garbage"),
    ]
    errors = []
    for streamed in (False, True, True):
        with pytest.raises(AdkError) as caught:
            await generate(model, ask(), stream=streamed)
        errors.append(caught.value)
    assert errors[0].category.value == "unauthorized" and "invalid x-api-key" in errors[0].message
    for error in errors:
        for shown in (str(error), repr(error), str(error.details), str(error.to_dict())):
            assert KEY not in shown
