"""Provider-native features on the wire: thinking settings, thoughts and their signatures, built-in tools.

Each provider's model talks to a loopback server in the shapes its docs give:
- Gemini (https://ai.google.dev/gemini-api/docs/thinking, .../google-search, .../code-execution,
  .../thought-signatures): `generationConfig.thinkingConfig {thinkingBudget, includeThoughts}`,
  parts with `thought: true` and `thoughtSignature`, `usageMetadata.thoughtsTokenCount`, tools
  `{googleSearch: {}}` / `{codeExecution: {}}`, `groundingMetadata`, `executableCode` /
  `codeExecutionResult` parts.
- Anthropic (https://docs.claude.com/en/docs/build-with-claude/extended-thinking, .../web-search-tool):
  `thinking {type: "enabled", budget_tokens}`, `thinking` / `redacted_thinking` blocks with a
  `signature` sent back unchanged with tool use, thinking_delta / signature_delta events, the
  `web_search_20250305` server tool, `server_tool_use` / `web_search_tool_result` blocks, citations.
- OpenAI (https://platform.openai.com/docs/api-reference/chat/create): `reasoning_effort`,
  `usage.completion_tokens_details.reasoning_tokens`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse

from adk_notebook import (
    AdkError,
    AnthropicModel,
    CodeExecution,
    Content,
    Event,
    GeminiModel,
    GenerateContentConfig,
    GoogleSearch,
    LlmAgent,
    LlmRequest,
    OpenAIModel,
    Part,
    ThinkingConfig,
    Usage,
    WebSearch,
    tool,
)
from adk_notebook.core.content import CodeExecutionResult, ExecutableCode
from adk_notebook.models.anthropic import MAX_CONTINUATIONS
from adk_notebook.models.http import RetryPolicy

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.02)
SSE = {"Content-Type": "text/event-stream"}
SIGNATURE = "EqQBCkYIARgCKkD+opaque/signature=="  # opaque: must come back byte for byte


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}


def thinking(budget: int | None = 2048, include: bool = True) -> GenerateContentConfig:
    return GenerateContentConfig(thinking=ThinkingConfig(budget_tokens=budget, include_thoughts=include))


# -- Gemini ---------------------------------------------------------------------------------------
def gemini(server: LoopbackServer, model: str = "gemini-3-flash-preview") -> GeminiModel:
    return GeminiModel(model, api_key="test-gemini-key", base_url=server.url, retry=FAST)


def candidate(*parts: dict[str, Any], finish: str | None = "STOP", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0, **extra}]}
    if finish:
        body["candidates"][0]["finishReason"] = finish
    return body


GROUNDING = {
    "webSearchQueries": ["euro 2024 winner"],
    "searchEntryPoint": {"renderedContent": "<style>.container{}</style><div class='chip'>euro 2024</div>"},
    "groundingChunks": [
        {
            "web": {
                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC",
                "title": "uefa.com",
            }
        },
        {
            "web": {
                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF",
                "title": "aljazeera.com",
            }
        },
    ],
    "groundingSupports": [
        {
            "segment": {
                "startIndex": 0,
                "endIndex": 39,
                "text": "Spain won Euro 2024, beating England 2-1.",
            },
            "groundingChunkIndices": [0, 1],
        },
        {
            "segment": {
                "startIndex": 40,
                "endIndex": 71,
                "text": "It was Spain's fourth title.",
            },
            "groundingChunkIndices": [0, 7],
        },  # an index past the chunks is left out
    ],
}


async def test_gemini_declares_thinking_and_built_in_tools_beside_functions(
    server: LoopbackServer,
) -> None:
    server.script.append(Reply(200, candidate({"text": "ok"})))
    agent = LlmAgent(
        name="helper",
        model=gemini(server),
        tools=[GoogleSearch(), get_weather, CodeExecution()],
        generate_content_config=thinking(1024),
    )
    await agent.run_async("Hi", streaming=False)
    body = server.requests[0].json()
    assert body["tools"] == [
        {"googleSearch": {}},
        {"codeExecution": {}},
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Get the current weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ]
        },
    ]
    assert body["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 1024,
        "includeThoughts": True,
    }


async def test_gemini_thinking_off_and_model_decides() -> None:
    model = GeminiModel("gemini-2.5-flash", api_key="k", base_url="http://127.0.0.1:9")
    off = model.build_body(LlmRequest(contents=[Content.user("Hi")], config=thinking(0, include=False)))
    assert off["generationConfig"] == {"thinkingConfig": {"thinkingBudget": 0, "includeThoughts": False}}
    dynamic = model.build_body(LlmRequest(contents=[Content.user("Hi")], config=thinking(None)))
    assert dynamic["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}


async def test_gemini_streams_thoughts_and_sends_signatures_back_on_the_next_turn(
    server: LoopbackServer,
) -> None:
    usage = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 8,
        "thoughtsTokenCount": 120,
        "totalTokenCount": 138,
    }
    server.script.append(
        Reply(
            200,
            sse(
                candidate(
                    {"text": "The user wants the weather. ", "thought": True},
                    finish=None,
                ),
                candidate({"text": "I should call get_weather.", "thought": True}, finish=None),
                {
                    **candidate(
                        {
                            "functionCall": {
                                "name": "get_weather",
                                "args": {"city": "Tokyo"},
                            },
                            "thoughtSignature": SIGNATURE,
                        }
                    ),
                    "usageMetadata": usage,
                },
            ),
            headers=SSE,
        )
    )
    server.script.append(
        Reply(
            200,
            sse(
                {
                    **candidate({"text": "Sunny in Tokyo."}),
                    "usageMetadata": {
                        "promptTokenCount": 30,
                        "candidatesTokenCount": 4,
                        "totalTokenCount": 34,
                    },
                }
            ),
            headers=SSE,
        )
    )
    agent = LlmAgent(
        name="helper",
        model=gemini(server),
        tools=[get_weather],
        generate_content_config=thinking(),
    )
    result = await agent.run_async("Weather in Tokyo?")

    assert result.text == "Sunny in Tokyo."
    streamed = [(p.text, p.thought) for e in result.events if e.partial for p in e.content.parts]
    assert streamed[:2] == [
        ("The user wants the weather. ", True),
        ("I should call get_weather.", True),
    ]
    first = next(e for e in result.events if not e.partial and e.function_calls())
    thought = first.content.parts[0]
    assert thought.thought and thought.text == "The user wants the weather. I should call get_weather."
    assert first.content.text == ""  # thoughts are not the answer
    assert first.usage.thoughts_tokens == 120 and first.usage.output_tokens == 128
    assert result.usage.thoughts_tokens == 120

    second = server.requests[1].json()
    model_turn = second["contents"][1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"] == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}},
            "thoughtSignature": SIGNATURE,
        }
    ]  # thought summaries are not sent back


async def test_gemini_signature_on_an_empty_last_part_goes_back(
    server: LoopbackServer,
) -> None:
    server.script.append(
        Reply(
            200,
            sse(
                candidate({"text": "Hello"}, finish=None),
                candidate({"text": "", "thoughtSignature": SIGNATURE}),
            ),
            headers=SSE,
        )
    )
    server.script.append(Reply(200, sse(candidate({"text": "Bye"})), headers=SSE))
    agent = LlmAgent(name="helper", model=gemini(server))
    first = await agent.run_async("Hi")
    await agent.run_async("Thanks", session_id=first.session_id)
    history = server.requests[1].json()["contents"]
    assert history[1] == {
        "role": "model",
        "parts": [{"text": "Hello"}, {"text": "", "thoughtSignature": SIGNATURE}],
    }


async def test_gemini_grounding_metadata_is_parsed(server: LoopbackServer) -> None:
    server.script.append(
        Reply(
            200,
            candidate(
                {"text": "Spain won Euro 2024, beating England 2-1. It was Spain's fourth title."},
                groundingMetadata=GROUNDING,
            ),
        )
    )
    agent = LlmAgent(name="searcher", model=gemini(server), tools=[GoogleSearch()])
    result = await agent.run_async("Who won Euro 2024?", streaming=False)
    final = result.events[-1]
    assert final.metadata["grounding"] == {
        "queries": ["euro 2024 winner"],
        "sources": [
            {
                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbC",
                "title": "uefa.com",
            },
            {
                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/DeF",
                "title": "aljazeera.com",
            },
        ],
        "citations": [
            {"text": "Spain won Euro 2024, beating England 2-1.", "sources": [0, 1]},
            {"text": "It was Spain's fourth title.", "sources": [0]},
        ],
    }


async def test_gemini_executed_code_and_its_result_are_parts_sent_back_as_they_came(
    server: LoopbackServer,
) -> None:
    code = {"language": "PYTHON", "code": "print(sum(range(1, 101)))"}
    outcome = {"outcome": "OUTCOME_OK", "output": "5050\n"}
    server.script.append(
        Reply(
            200,
            candidate(
                {"text": "Let me compute it."},
                {"executableCode": code},
                {"codeExecutionResult": outcome},
                {"text": "The sum is 5050."},
            ),
        )
    )
    server.script.append(Reply(200, candidate({"text": "Yes."})))
    agent = LlmAgent(name="coder", model=gemini(server), tools=[CodeExecution()])
    result = await agent.run_async("Sum 1..100", streaming=False)
    parts = result.events[-1].content.parts
    assert parts[1].executable_code.code == "print(sum(range(1, 101)))"
    assert (
        parts[2].code_execution_result.outcome,
        parts[2].code_execution_result.output,
    ) == ("OUTCOME_OK", "5050\n")
    assert result.text == "Let me compute it.The sum is 5050."

    await agent.run_async("Sure?", session_id=result.session_id, streaming=False)
    history = server.requests[1].json()["contents"]
    assert history[1]["parts"][1:3] == [
        {"executableCode": code},
        {"codeExecutionResult": outcome},
    ]


async def test_gemini_has_no_web_search_tool(server: LoopbackServer) -> None:
    agent = LlmAgent(name="helper", model=gemini(server), tools=[WebSearch()])
    with pytest.raises(AdkError) as caught:
        await agent.run_async("Hi")
    assert caught.value.code == "unsupported_builtin_tool" and caught.value.category == "unsupported"
    assert "WebSearch() is a built-in tool of AnthropicModel" in str(caught.value)
    assert server.requests == []  # refused while the request was built


# -- Anthropic ------------------------------------------------------------------------------------
def claude(server: LoopbackServer) -> AnthropicModel:
    return AnthropicModel(api_key="sk-ant-test", base_url=server.url, retry=FAST)


def message(*blocks: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 90},
    }


def events(*items: dict[str, Any]) -> Reply:
    return Reply(200, sse(*items, event_names=[e["type"] for e in items]), headers=SSE)


def block(index: int, start: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def message_events(*blocks: list[dict[str, Any]], stop: str = "end_turn") -> list[dict[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            **message(),
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 40, "output_tokens": 1},
        },
    }
    return [
        start,
        *(e for b in blocks for e in b),
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 90},
        },
        {"type": "message_stop"},
    ]


async def test_anthropic_thinking_settings() -> None:
    model = AnthropicModel(api_key="k", base_url="http://127.0.0.1:9")
    body = model.build_body(LlmRequest(contents=[Content.user("Hi")], config=thinking(2048)))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096 + 2048  # the answer keeps its room above the budget
    assert model.build_body(LlmRequest(config=thinking(None)))["thinking"] == {"type": "adaptive"}
    assert "thinking" not in model.build_body(LlmRequest(config=thinking(0)))
    for config, code in [
        (thinking(512), "invalid_thinking_budget"),
        (
            GenerateContentConfig(max_output_tokens=2000, thinking=ThinkingConfig(budget_tokens=2048)),
            "invalid_thinking_budget",
        ),
        (
            GenerateContentConfig(tool_choice="required", thinking=ThinkingConfig(budget_tokens=2048)),
            "thinking_with_forced_tool",
        ),
        (
            GenerateContentConfig(temperature=0.2, thinking=ThinkingConfig(budget_tokens=2048)),
            "thinking_with_sampling",
        ),
    ]:
        with pytest.raises(AdkError) as caught:
            model.build_body(LlmRequest(config=config))
        assert caught.value.code == code


async def test_anthropic_thinking_streams_and_its_signature_goes_back_unchanged(
    server: LoopbackServer,
) -> None:
    server.script.append(
        events(
            *message_events(
                block(
                    0,
                    {"type": "thinking", "thinking": "", "signature": ""},
                    {
                        "type": "thinking_delta",
                        "thinking": "The user asks about Tokyo. ",
                    },
                    {"type": "thinking_delta", "thinking": "I will call get_weather."},
                    {"type": "signature_delta", "signature": SIGNATURE},
                ),
                block(
                    1,
                    {
                        "type": "redacted_thinking",
                        "data": "EmwKAhgBEgy3va3pzix/LafPsn4a",
                    },
                ),
                block(
                    2,
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "get_weather",
                        "input": {},
                    },
                    {"type": "input_json_delta", "partial_json": '{"city": "Tokyo"}'},
                ),
                stop="tool_use",
            )
        )
    )
    server.script.append(
        events(
            *message_events(
                block(
                    0,
                    {"type": "text", "text": ""},
                    {"type": "text_delta", "text": "Sunny in Tokyo."},
                )
            )
        )
    )
    agent = LlmAgent(
        name="helper",
        model=claude(server),
        tools=[get_weather],
        generate_content_config=thinking(),
    )
    result = await agent.run_async("Weather in Tokyo?")

    assert result.text == "Sunny in Tokyo."
    streamed = [(p.text, p.thought) for e in result.events if e.partial for p in e.content.parts]
    assert streamed[:2] == [
        ("The user asks about Tokyo. ", True),
        ("I will call get_weather.", True),
    ]
    first = server.requests[0].json()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    second = server.requests[1].json()
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [
        {
            "type": "thinking",
            "thinking": "The user asks about Tokyo. I will call get_weather.",
            "signature": SIGNATURE,
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
    ]
    assert assistant["content"][2]["type"] == "tool_use" and assistant["content"][2]["input"] == {"city": "Tokyo"}
    assert second["messages"][2]["content"][0]["type"] == "tool_result"


UEFA = {  # a web_search_result: its encrypted_content must go back byte for byte when sent back
    "type": "web_search_result",
    "url": "https://www.uefa.com/euro2024/",
    "title": "UEFA EURO 2024",
    "encrypted_content": "EqgfCioIARgB",
    "page_age": "July 15, 2024",
}


async def test_anthropic_web_search_server_tool_and_citations(
    server: LoopbackServer,
) -> None:
    cited = {
        "type": "web_search_result_location",
        "url": "https://www.uefa.com/euro2024/",
        "title": "UEFA EURO 2024",
        "encrypted_index": "Eo8BCioIAhgB",
        "cited_text": "Spain beat England 2-1 in the final in Berlin.",
    }
    server.script.append(
        Reply(
            200,
            message(
                {"type": "text", "text": "I'll search for that."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "web_search",
                    "input": {"query": "euro 2024 winner"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": [
                        UEFA,
                        {
                            "type": "web_search_result",
                            "url": "https://en.wikipedia.org/wiki/UEFA_Euro_2024",
                            "title": "UEFA Euro 2024",
                            "encrypted_content": "EqgfCioIARgC",
                            "page_age": None,
                        },
                    ],
                },
                {"type": "text", "text": "Spain won Euro 2024.", "citations": [cited]},
            ),
        )
    )
    agent = LlmAgent(
        name="searcher",
        model=claude(server),
        tools=[WebSearch(max_uses=3, allowed_domains=("uefa.com",))],
    )
    result = await agent.run_async("Who won Euro 2024?", streaming=False)
    assert server.requests[0].json()["tools"] == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["uefa.com"],
        }
    ]
    assert result.text == "I'll search for that.Spain won Euro 2024."
    assert result.events[-1].metadata["grounding"] == {
        "queries": ["euro 2024 winner"],
        "sources": [
            {"uri": "https://www.uefa.com/euro2024/", "title": "UEFA EURO 2024"},
            {
                "uri": "https://en.wikipedia.org/wiki/UEFA_Euro_2024",
                "title": "UEFA Euro 2024",
            },
        ],
        "citations": [{"text": "Spain won Euro 2024.", "sources": [0]}],
    }


async def test_anthropic_streamed_server_tool_query_and_citation_deltas(
    server: LoopbackServer,
) -> None:
    cited = {
        "type": "web_search_result_location",
        "url": "https://example.org/a",
        "title": "A",
        "encrypted_index": "x",
        "cited_text": "quote",
    }
    server.script.append(
        events(
            *message_events(
                block(
                    0,
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_01",
                        "name": "web_search",
                        "input": {},
                    },
                    {"type": "input_json_delta", "partial_json": '{"query": "claude'},
                    {"type": "input_json_delta", "partial_json": ' shannon"}'},
                ),
                block(
                    1,
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": "srvtoolu_01",
                        "content": {
                            "type": "web_search_tool_result_error",
                            "error_code": "max_uses_exceeded",
                        },
                    },
                ),
                block(
                    2,
                    {"type": "text", "text": ""},
                    {"type": "citations_delta", "citation": cited},
                    {"type": "text_delta", "text": "He founded information theory."},
                ),
            )
        )
    )
    agent = LlmAgent(name="searcher", model=claude(server), tools=[WebSearch()])
    result = await agent.run_async("Who was Claude Shannon?")
    assert server.requests[0].json()["tools"] == [{"type": "web_search_20250305", "name": "web_search"}]
    assert result.events[-1].metadata["grounding"] == {
        "queries": ["claude shannon"],
        "sources": [{"uri": "https://example.org/a", "title": "A"}],
        "citations": [{"text": "He founded information theory.", "sources": [0]}],
    }


# A turn paused mid-search (https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools,
# "The server-side loop and pause_turn"): its blocks go back unchanged as the last assistant message.
SEARCHED = [
    {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "euro 2024 winner"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": [UEFA],
    },
]
CITED = {
    "type": "web_search_result_location",
    "url": "https://www.uefa.com/euro2024/",
    "title": "UEFA EURO 2024",
    "encrypted_index": "Eo8BCioIAhgB",
    "cited_text": "Spain beat England 2-1.",
}


async def test_anthropic_paused_turn_goes_on_with_its_blocks_sent_back(server: LoopbackServer) -> None:
    paused = [{"type": "text", "text": "Let me search."}, *SEARCHED]
    server.script.append(Reply(200, message(*paused, stop="pause_turn")))
    server.script.append(Reply(200, message({"type": "text", "text": "Spain won.", "citations": [CITED]})))
    agent = LlmAgent(name="searcher", model=claude(server), tools=[WebSearch()])
    result = await agent.run_async("Who won Euro 2024?", streaming=False)
    first, second = (r.json() for r in server.requests)
    assert second["messages"] == [*first["messages"], {"role": "assistant", "content": paused}]
    assert second["tools"] == first["tools"] and second["model"] == first["model"]
    assert result.text == "Let me search.Spain won."
    assert result.events[-1].metadata["finish_reason"] == "stop"
    assert result.events[-1].metadata["grounding"] == {
        "queries": ["euro 2024 winner"],
        "sources": [{"uri": "https://www.uefa.com/euro2024/", "title": "UEFA EURO 2024"}],
        "citations": [{"text": "Spain won.", "sources": [0]}],
    }
    assert (result.usage.input_tokens, result.usage.output_tokens) == (80, 180)  # both requests


async def test_anthropic_streamed_paused_turn_sends_back_what_its_deltas_added_up_to(server: LoopbackServer) -> None:
    server.script.append(
        events(
            *message_events(
                block(
                    0,
                    {"type": "text", "text": ""},
                    {"type": "text_delta", "text": "Let me "},
                    {"type": "text_delta", "text": "search."},
                ),
                block(
                    1,
                    {**SEARCHED[0], "input": {}},
                    {"type": "input_json_delta", "partial_json": '{"query": "euro'},
                    {"type": "input_json_delta", "partial_json": ' 2024 winner"}'},
                ),
                block(2, SEARCHED[1]),
                stop="pause_turn",
            )
        )
    )
    server.script.append(
        events(
            *message_events(
                block(
                    0,
                    {"type": "text", "text": ""},
                    {"type": "citations_delta", "citation": CITED},
                    {"type": "text_delta", "text": "Spain won."},
                )
            )
        )
    )
    request = LlmRequest(contents=[Content.user("Who won Euro 2024?")], builtin_tools=[WebSearch()])
    *partials, final = [r async for r in claude(server).generate_content(request, stream=True)]
    assert [r.content.text for r in partials] == ["Let me ", "search.", "Spain won."]
    assert final.content.text == "Let me search.Spain won." and final.finish_reason == "stop"
    second = server.requests[1].json()
    assert second["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me search."}, *SEARCHED],
    }
    assert len(second["messages"]) == len(server.requests[0].json()["messages"]) + 1


async def test_anthropic_turn_still_paused_after_the_last_continuation_is_returned_as_it_stands(
    server: LoopbackServer,
) -> None:
    for i in range(MAX_CONTINUATIONS + 2):
        server.script.append(Reply(200, message({"type": "text", "text": f"{i} "}, stop="pause_turn")))
    agent = LlmAgent(name="searcher", model=claude(server), tools=[WebSearch()])
    result = await agent.run_async("Search for ever.", streaming=False)
    assert len(server.requests) == MAX_CONTINUATIONS + 1  # the first request, then each continuation
    assert result.text == "".join(f"{i} " for i in range(MAX_CONTINUATIONS + 1))
    assert result.events[-1].metadata["finish_reason"] == "pause_turn"
    last = server.requests[-1].json()["messages"][-1]  # one assistant message holds every stretch so far
    assert last == {
        "role": "assistant",
        "content": [{"type": "text", "text": f"{i} "} for i in range(MAX_CONTINUATIONS)],
    }


async def test_anthropic_has_no_google_search() -> None:
    model = AnthropicModel(api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(AdkError) as caught:
        model.build_body(LlmRequest(contents=[Content.user("Hi")], builtin_tools=[GoogleSearch()]))
    assert caught.value.code == "unsupported_builtin_tool"
    assert "GoogleSearch() is a built-in tool of GeminiModel; AnthropicModel has no such tool" in str(caught.value)


# -- OpenAI ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("budget", "effort"),
    [(0, "minimal"), (1024, "low"), (8000, "medium"), (32000, "high"), (None, None)],
)
def test_openai_budget_becomes_reasoning_effort(budget: int | None, effort: str | None) -> None:
    model = OpenAIModel("o4-mini", api_key="k", base_url="http://127.0.0.1:9/v1")
    body = model.build_body(LlmRequest(contents=[Content.user("Hi")], config=thinking(budget)))
    assert body.get("reasoning_effort") == effort


async def test_openai_reasoning_tokens_are_thought_tokens(
    server: LoopbackServer,
) -> None:
    usage = {
        "prompt_tokens": 12,
        "completion_tokens": 300,
        "total_tokens": 312,
        "completion_tokens_details": {
            "reasoning_tokens": 256,
            "accepted_prediction_tokens": 0,
        },
    }
    done = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "o4-mini",
        "choices": [],
        "usage": usage,
    }
    delta = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "o4-mini",
        "choices": [{"index": 0, "delta": {"content": "42"}, "finish_reason": "stop"}],
    }
    server.script.append(Reply(200, sse(delta, done, "[DONE]"), headers=SSE))
    server.script.append(
        Reply(
            200,
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "o4-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "42"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
        )
    )
    model = OpenAIModel("o4-mini", api_key="k", base_url=server.url + "/v1", retry=FAST)
    for stream in (True, False):
        responses = [
            r
            async for r in model.generate_content(
                LlmRequest(contents=[Content.user("6*7?")], config=thinking(20000)),
                stream=stream,
            )
        ]
        assert responses[-1].usage.thoughts_tokens == 256 and responses[-1].usage.output_tokens == 300
    assert [r.json()["reasoning_effort"] for r in server.requests] == ["high", "high"]


def test_chat_completions_has_no_built_in_tools() -> None:
    model = OpenAIModel("gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(AdkError) as caught:
        model.build_body(LlmRequest(contents=[Content.user("Hi")], builtin_tools=[CodeExecution()]))
    assert caught.value.code == "unsupported_builtin_tool"
    assert "Use a Gemini model for it" in str(caught.value)


# -- what sessions keep -------------------------------------------------------------------------
def test_sessions_keep_thoughts_signatures_code_and_thought_tokens() -> None:
    content = Content(
        "model",
        [
            Part(text="Plan.", thought=True, thought_signature=SIGNATURE),
            Part(thought=True, thought_signature="EmwKAhgB"),  # redacted: no text, only the data
            Part(executable_code=ExecutableCode("print(1)")),
            Part(code_execution_result=CodeExecutionResult("OUTCOME_OK", "1\n")),
        ],
    )
    event = Event("bot", content, usage=Usage(5, 30, 35, thoughts_tokens=20))
    again = Event.from_dict(json.loads(json.dumps(event.to_dict())))
    assert again.content == content
    assert again.usage == Usage(5, 30, 35, thoughts_tokens=20)
