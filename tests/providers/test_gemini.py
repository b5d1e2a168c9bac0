"""GeminiModel against a loopback server speaking the Generative Language API's wire format.

Shapes follow https://ai.google.dev/api/generate-content (generateContent and
streamGenerateContent?alt=sse), function calling (functionCall / functionResponse with ids,
multimodal `functionResponse.parts`) and thought signatures.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse
from pydantic import BaseModel

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    FunctionDeclaration,
    FunctionResponse,
    GeminiModel,
    GenerateContentConfig,
    LlmAgent,
    LlmRequest,
    Part,
    tool,
)
from adk_notebook.models.http import RetryPolicy

KEY = "test-key-AIzaSyDUMMY0123456789"
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.02)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def make_model(server: LoopbackServer, model: str = "gemini-2.5-flash") -> GeminiModel:
    return GeminiModel(model, api_key=KEY, base_url=server.url, retry=FAST)


def answer(*parts: dict[str, Any], finish: str = "STOP", usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A GenerateContentResponse (also the shape of one streamed chunk)."""
    body: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
    }
    if finish:
        body["candidates"][0]["finishReason"] = finish
    body["usageMetadata"] = usage or {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17}
    return body


def stream_reply(*chunks: dict[str, Any], **kwargs: Any) -> Reply:
    return Reply(200, sse(*chunks), headers={"Content-Type": "text/event-stream"}, **kwargs)


async def generate(model: GeminiModel, request: LlmRequest, stream: bool = False) -> list:
    return [r async for r in model.generate_content(request, stream=stream)]


def ask(text: str = "Hi", **kwargs: Any) -> LlmRequest:
    return LlmRequest(model="gemini-2.5-flash", contents=[Content.user(text)], **kwargs)


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
    server.script.append(Reply(200, answer({"text": "ok"})))
    raw_schema = {
        "title": "Order",
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Item": {"title": "Item", "type": "object", "properties": {"sku": {"type": "string"}}}},
        "properties": {
            "item": {"$ref": "#/$defs/Item"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Note"},
        },
        "required": ["item"],
    }
    request = LlmRequest(
        model="gemini-2.5-flash",
        system_instruction="You are terse.",
        contents=[
            Content.user("Weather in Tokyo?"),
            Content("model", [Part(function_call=FunctionCall("get_weather", {"city": "Tokyo"}, "adk-123"))]),
            Content("tool", [Part(function_response=FunctionResponse("get_weather", {"temp": 21}, "adk-123"))]),
            Content("model", [Part(text="21 degrees."), Part(text="(thinking)", thought=True)]),
            Content("model", [Part(function_call=FunctionCall("get_weather", {"city": "Oslo"}, "gemini-call-7"))]),
            Content("tool", [Part(function_response=FunctionResponse("get_weather", {"temp": 3}, "gemini-call-7"))]),
        ],
        tools=[get_weather.declaration(), FunctionDeclaration("order", "Place an order.", raw_schema)],
        config=GenerateContentConfig(
            temperature=0.2, top_p=0.9, top_k=40, max_output_tokens=256, stop_sequences=["END"]
        ),
    )
    model = make_model(server)
    [response] = await generate(model, request)
    await model.aclose()

    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    assert KEY not in sent.path and "key=" not in sent.path
    body = sent.json()
    assert body["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Tokyo?"}]},
        # Our own "adk-" ids are not Gemini's: left out, as google-adk does.
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 21}}}]},
        {"role": "model", "parts": [{"text": "21 degrees."}]},  # thoughts are not sent back
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "gemini-call-7"}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 3}, "id": "gemini-call-7"}}],
        },
    ]
    [tools] = body["tools"]
    weather, order = tools["functionDeclarations"]
    assert weather == {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city to look up."},
                "unit": {
                    "type": "string",
                    "nullable": True,
                    "default": None,
                    "description": '"celsius" or "fahrenheit".',
                },
            },
            "required": ["city"],
        },
    }
    # The schema dialect: no $ref/$defs/title/additionalProperties, anyOf-null -> nullable.
    assert order["parameters"] == {
        "type": "object",
        "properties": {
            "item": {"type": "object", "properties": {"sku": {"type": "string"}}},
            "note": {"type": "string", "nullable": True},
        },
        "required": ["item"],
    }
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "maxOutputTokens": 256,
        "stopSequences": ["END"],
    }
    assert response.content.text == "ok"


async def test_tool_without_arguments_has_no_parameters(server: LoopbackServer) -> None:
    @tool
    def now() -> str:
        """The current time."""
        return "12:00"

    server.script.append(Reply(200, answer({"text": "ok"})))
    model = make_model(server)
    await generate(model, ask(tools=[now.declaration()]))
    # Gemini rejects an OBJECT schema without properties.
    assert server.requests[0].json()["tools"] == [
        {"functionDeclarations": [{"name": "now", "description": "The current time."}]}
    ]


async def test_api_key_from_environment(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "env-gemini-key")
    server.script.append(Reply(200, answer({"text": "ok"})))
    model = GeminiModel(base_url=server.url, retry=FAST)
    await generate(model, ask())
    assert server.requests[0].headers["x-goog-api-key"] == "env-gemini-key"

    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(AdkError) as caught:
        GeminiModel()
    assert (caught.value.category.value, caught.value.code) == ("unauthorized", "missing_api_key")
    assert "GOOGLE_API_KEY" in str(caught.value)


# -- answers ------------------------------------------------------------------------------------
async def test_plain_text(server: LoopbackServer) -> None:
    server.script.append(Reply(200, answer({"text": "Hello"}, {"text": " there."})))
    [response] = await generate(make_model(server), ask())
    assert not response.partial
    assert response.content.role == "model"
    assert [p.text for p in response.content.parts] == ["Hello there."]
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 5, 17)


async def test_streamed_text(server: LoopbackServer) -> None:
    server.script.append(
        stream_reply(
            answer({"text": "The weather "}, finish="", usage={"promptTokenCount": 9}),
            answer({"text": "in Tokyo "}, finish=""),
            answer(
                {"text": "is sunny."},
                usage={
                    "promptTokenCount": 9,
                    "candidatesTokenCount": 7,
                    "thoughtsTokenCount": 3,
                    "totalTokenCount": 19,
                },
            ),
            chunk_delay=0.01,
        )
    )
    responses = await generate(make_model(server), ask(), stream=True)

    assert server.requests[0].path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    *partials, final = responses
    assert [r.content.text for r in partials] == ["The weather ", "in Tokyo ", "is sunny."]
    assert all(r.partial and not r.turn_complete for r in partials)
    assert not final.partial and final.content.text == "The weather in Tokyo is sunny."
    assert len(final.content.parts) == 1
    assert final.finish_reason == "stop"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens) == (9, 10, 19)


async def test_one_tool_call(server: LoopbackServer) -> None:
    call = {"functionCall": {"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}}}
    server.script.append(Reply(200, answer(call)))
    [response] = await generate(make_model(server), ask(tools=[get_weather.declaration()]))
    [got] = response.content.function_calls()
    assert (got.name, got.args, got.id) == ("get_weather", {"city": "Paris"}, "fc-1")
    assert response.finish_reason == "tool_calls"


async def test_parallel_tool_calls_streamed(server: LoopbackServer) -> None:
    server.script.append(
        stream_reply(
            answer({"text": "Checking both."}, finish=""),
            answer(
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            ),
        )
    )
    *partials, final = await generate(make_model(server), ask(tools=[get_weather.declaration()]), stream=True)
    assert [p.content.text for p in partials] == ["Checking both."]
    assert final.content.text == "Checking both."
    calls = final.content.function_calls()
    assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    # Gemini sent no ids: each call still gets a distinct one, so responses can be matched.
    assert all(c.id for c in calls) and calls[0].id != calls[1].id
    assert final.finish_reason == "tool_calls"


async def test_agent_loop_through_the_public_api(server: LoopbackServer) -> None:
    server.script += [
        stream_reply(answer({"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}})),
        stream_reply(answer({"text": "It is sunny "}, finish=""), answer({"text": "in Tokyo."})),
    ]
    agent = LlmAgent(
        name="weather",
        model=GeminiModel(base_url=server.url, api_key="test-key", retry=FAST),
        instruction="Answer weather questions.",
        tools=[get_weather],
    )
    result = await agent.run_async("Weather in Tokyo?")

    assert result.text == "It is sunny in Tokyo."
    first, second = (r.json() for r in server.requests)
    assert first["systemInstruction"] == {"parts": [{"text": "Answer weather questions."}]}
    assert first["contents"] == [{"role": "user", "parts": [{"text": "Weather in Tokyo?"}]}]
    assert second["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"city": "Tokyo", "condition": "sunny"}}}
            ],
        },
    ]
    assert result.usage.total_tokens == 34


async def test_thought_signatures_are_sent_back(server: LoopbackServer) -> None:
    """Gemini 3 rejects a history whose function calls lost their thoughtSignature."""
    signed = {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}, "thoughtSignature": "c2lnLTE="}
    unsigned = {"functionCall": {"name": "get_weather", "args": {"city": "Kyoto"}}}
    server.script += [stream_reply(answer(signed, unsigned)), stream_reply(answer({"text": "Sunny in both."}))]
    agent = LlmAgent(name="weather", model=make_model(server, "gemini-3-flash-preview"), tools=[get_weather])
    result = await agent.run_async("Tokyo and Kyoto?")
    assert result.text == "Sunny in both."
    model_turn = server.requests[1].json()["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnLTE="
    assert "thoughtSignature" not in model_turn["parts"][1]  # parallel calls: only the first is signed

    # A call Gemini never signed (history from another model) gets the documented placeholder.
    server.script.append(Reply(200, answer({"text": "ok"})))
    request = LlmRequest(
        contents=[
            Content.user("Weather?"),
            Content("model", [Part(function_call=FunctionCall("get_weather", {"city": "Oslo"}, "adk-1"))]),
            Content("tool", [Part(function_response=FunctionResponse("get_weather", {"temp": 3}, "adk-1"))]),
        ]
    )
    await generate(make_model(server, "gemini-3-flash-preview"), request)
    call_part = server.requests[2].json()["contents"][1]["parts"][0]
    assert call_part["thoughtSignature"] == "skip_thought_signature_validator"


async def test_multimodal_function_response(server: LoopbackServer) -> None:
    server.script.append(Reply(200, answer({"text": "A red square and a report."})))
    response = FunctionResponse(
        "render",
        {"status": "ok"},
        "call-9",
        parts=[Part.from_bytes("image/png", PNG), Part.from_uri("application/pdf", "gs://bucket/report.pdf")],
    )
    request = LlmRequest(
        contents=[
            Content.user("Draw it."),
            Content("model", [Part(function_call=FunctionCall("render", {}, "call-9"))]),
            Content("tool", [Part(function_response=response)]),
        ]
    )
    await generate(make_model(server), request)
    tool_turn = server.requests[0].json()["contents"][2]
    # The media ride INSIDE the functionResponse, not as sibling parts.
    assert tool_turn == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "render",
                    "response": {"status": "ok"},
                    "id": "call-9",
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
                        {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf"}},
                    ],
                }
            }
        ],
    }


async def test_tool_returning_an_image_through_the_agent(server: LoopbackServer) -> None:
    @tool
    def render_chart(title: str) -> dict:
        """Render a chart."""
        return {"title": title, "inline_data": [{"mime_type": "image/png", "data": PNG}]}

    server.script += [
        stream_reply(answer({"functionCall": {"name": "render_chart", "args": {"title": "Q4"}}})),
        stream_reply(answer({"text": "Here is the chart."})),
    ]
    result = await LlmAgent(name="charts", model=make_model(server), tools=[render_chart]).run_async("Chart Q4")
    assert result.text == "Here is the chart."
    assert server.requests[1].json()["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "render_chart",
                    "response": {"title": "Q4"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}],
                }
            }
        ],
    }


async def test_output_schema(server: LoopbackServer) -> None:
    class City(BaseModel):
        name: str
        population: int | None = None

    class Answer(BaseModel):
        cities: list[City]

    server.script.append(Reply(200, answer({"text": '{"cities": [{"name": "Tokyo", "population": 14000000}]}'})))
    config = GenerateContentConfig(response_schema=Answer.model_json_schema())
    [response] = await generate(make_model(server), ask("Largest city?", config=config))

    generation = server.requests[0].json()["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseSchema"] == {
        "type": "object",
        "properties": {
            "cities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "population": {"type": "integer", "nullable": True, "default": None},
                    },
                    "required": ["name"],
                },
            }
        },
        "required": ["cities"],
    }
    assert Answer.model_validate_json(response.content.text).cities[0].name == "Tokyo"


# -- failures -----------------------------------------------------------------------------------
async def test_429_then_success(server: LoopbackServer) -> None:
    server.script += [
        Reply(
            429,
            {"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}},
            headers={"Retry-After": "0"},
        ),
        Reply(200, answer({"text": "made it"})),
    ]
    [response] = await generate(make_model(server), ask())
    assert response.content.text == "made it"
    assert len(server.requests) == 2


async def test_500_until_retries_run_out(server: LoopbackServer) -> None:
    failure = {"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}
    server.script += [Reply(500, failure) for _ in range(3)]
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert len(server.requests) == 3  # the first attempt and FAST's two retries
    assert caught.value.category.value == "unavailable"
    assert "An internal error has occurred." in str(caught.value)


async def test_malformed_stream(server: LoopbackServer) -> None:
    server.script.append(stream_reply(answer({"text": "Hel"}, finish=""), "this is not json"))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert caught.value.code == "invalid_response"
    assert "not JSON" in caught.value.message


async def test_dropped_connection_mid_stream(server: LoopbackServer) -> None:
    chunks = sse(answer({"text": "The answer "}, finish=""), answer({"text": "is"}, finish=""), answer({"text": "42"}))
    server.script.append(Reply(200, chunks, headers={"Content-Type": "text/event-stream"}, drop_after=2))
    seen = []
    with pytest.raises(AdkError) as caught:
        async for response in make_model(server).generate_content(ask(), stream=True):
            seen.append(response.content.text)
    assert seen == ["The answer ", "is"]  # what arrived was streamed; nothing was passed off as complete
    assert (caught.value.category.value, caught.value.code) == ("unavailable", "stream_interrupted")
    assert len(server.requests) == 1  # a stream is not retried once it has started


async def test_dropped_connection_before_the_answer_is_retried(server: LoopbackServer) -> None:
    server.script += [Reply(200, answer({"text": "lost"}), drop_after=0), Reply(200, answer({"text": "second try"}))]
    [response] = await generate(make_model(server), ask())
    assert response.content.text == "second try"
    assert len(server.requests) == 2


async def test_stream_that_ends_early_is_not_a_complete_answer(server: LoopbackServer) -> None:
    server.script.append(stream_reply(answer({"text": "Half an ans"}, finish="")))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask(), stream=True)
    assert caught.value.code == "stream_interrupted"


async def test_blocked_prompt(server: LoopbackServer) -> None:
    blocked = {
        "promptFeedback": {
            "blockReason": "SAFETY",
            "safetyRatings": [
                {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
                {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
            ],
        },
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    }
    server.script.append(stream_reply(blocked))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask("something dangerous"), stream=True)
    error = caught.value
    assert (error.component, error.category.value, error.code) == ("model", "forbidden", "safety_blocked")
    assert not error.is_retryable()
    assert "SAFETY" in error.message and "dangerous_content" in error.message
    assert "harassment" not in error.message
    assert error.details["block_reason"] == "SAFETY"
    assert len(server.requests) == 1


async def test_blocked_answer(server: LoopbackServer) -> None:
    blocked = {
        "candidates": [
            {
                "finishReason": "SAFETY",
                "index": 0,
                "safetyRatings": [{"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "HIGH"}],
            }
        ]
    }
    server.script.append(Reply(200, blocked))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask())
    assert (caught.value.category.value, caught.value.code) == ("forbidden", "safety_blocked")
    assert "the answer" in caught.value.message and "sexually_explicit" in caught.value.message


async def test_no_candidates(server: LoopbackServer) -> None:
    server.script.append(Reply(200, {"candidates": [], "usageMetadata": {"promptTokenCount": 3}}))
    with pytest.raises(AdkError) as caught:
        await generate(make_model(server), ask())
    assert caught.value.code == "empty_response"
    assert "no candidates" in caught.value.message


async def test_api_key_is_never_shown(server: LoopbackServer) -> None:
    model = make_model(server)
    assert KEY not in repr(model) and KEY not in str(model)
    assert KEY not in repr(model.provider) and KEY not in repr(model.provider.transport)

    # An error body that echoes the key (as a proxy might) is scrubbed too.
    server.script += [
        Reply(400, {"error": {"code": 400, "message": f"API key not valid: {KEY}", "status": "INVALID_ARGUMENT"}}),
        stream_reply("garbage"),
        stream_reply({"promptFeedback": {"blockReason": "OTHER"}}),
    ]
    errors = []
    for stream in (False, True, True):
        with pytest.raises(AdkError) as caught:
            await generate(model, ask(), stream=stream)
        errors.append(caught.value)
    assert errors[0].category.value == "invalid_input" and "API key not valid" in errors[0].message
    for error in errors:
        for shown in (str(error), repr(error), str(error.details), str(error.to_dict())):
            assert KEY not in shown
