"""One recorded answer per provider, in the wire shapes of tests/providers/*, for tests that mutate them.

Each answer says "It is sunny." and calls get_weather(city="Tokyo"), with usage and a finish
reason, streamed (a list of `(event name, payload)`) and not (one body). `Provider.model(url)`
points the provider at a loopback server; `Provider.reply(...)` turns payloads into a `Reply`.
The tests change these payloads (a field's type, its depth, an echoed key) and check what
comes out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopback import Reply

from adk_notebook import AnthropicModel, GeminiModel, Llm
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

__all__ = ["PROVIDERS", "Provider", "encode_sse"]

FAST = RetryPolicy(max_retries=2, initial_delay=0.001, max_delay=0.01)
SSE_HEADERS = {"Content-Type": "text/event-stream"}
ARGS = {"city": "Tokyo"}
TEXT = ["It is ", "sunny."]

StreamEvent = tuple[str | None, Any]  # (SSE event name, payload: a JSON value or a raw str)


def encode_sse(events: list[StreamEvent]) -> list[str]:
    """SSE chunks; a str payload is sent as is (raw JSON text, "[DONE]", garbage)."""
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        out.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return out


# -- OpenAI Chat Completions (tests/providers/test_openai.py) --------------------------------------


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def openai_stream() -> list[StreamEvent]:
    arguments = json.dumps(ARGS)
    chunks = [
        _openai_chunk({"role": "assistant", "content": ""}),
        *(_openai_chunk({"content": piece}) for piece in TEXT),
        _openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:9]}}]}),
        _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[9:]}}]}),
        _openai_chunk({}, "tool_calls"),
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        },
    ]
    return [(None, c) for c in chunks] + [(None, "[DONE]")]


def openai_body() -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": "".join(TEXT),
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}
        ],
    }
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }


# -- Gemini generateContent (tests/providers/test_gemini.py) -----------------------------------------


def _gemini_answer(*parts: dict[str, Any], finish: str | None = "STOP") -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1",
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
    }


def gemini_stream() -> list[StreamEvent]:
    call = {"functionCall": {"id": "call_1", "name": "get_weather", "args": ARGS}}
    return [(None, _gemini_answer({"text": TEXT[0]}, finish=None)), (None, _gemini_answer({"text": TEXT[1]}, call))]


def gemini_body() -> dict[str, Any]:
    return _gemini_answer(
        {"text": "".join(TEXT)}, {"functionCall": {"id": "call_1", "name": "get_weather", "args": ARGS}}
    )


# -- Anthropic Messages (tests/providers/test_anthropic.py) -------------------------------------------


def anthropic_body() -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "text", "text": "".join(TEXT)},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": ARGS},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }


def anthropic_stream() -> list[StreamEvent]:
    arguments = json.dumps(ARGS)
    start = {**anthropic_body(), "content": [], "stop_reason": None, "usage": {"input_tokens": 12, "output_tokens": 1}}
    events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in TEXT),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": arguments[:9]},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": arguments[9:]},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "ping"},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return [(e["type"], e) for e in events]


@dataclass(frozen=True)
class Provider:
    name: str
    make: Callable[..., Llm]
    stream: Callable[[], list[StreamEvent]]
    body: Callable[[], dict[str, Any]]

    def model(self, url: str, key: str = "test-" + "key-0123456789", **options: Any) -> Llm:
        options.setdefault("retry", FAST)
        return self.make(url, key, **options)

    def reply(self, payload: list[StreamEvent] | dict[str, Any] | str, status: int = 200, **kwargs: Any) -> Reply:
        """A streamed reply for a list of events, a JSON body for a dict, raw text for a str."""
        if isinstance(payload, list):
            return Reply(status, encode_sse(payload), headers=SSE_HEADERS, **kwargs)
        return Reply(status, payload if isinstance(payload, str) else json.dumps(payload), **kwargs)


PROVIDERS = {
    "openai": Provider(
        "openai",
        lambda url, key, **o: OpenAIModel("gpt-4o-mini", base_url=url + "/v1", api_key=key, **o),
        openai_stream,
        openai_body,
    ),
    "gemini": Provider(
        "gemini",
        lambda url, key, **o: GeminiModel("gemini-2.5-flash", base_url=url, api_key=key, **o),
        gemini_stream,
        gemini_body,
    ),
    "anthropic": Provider(
        "anthropic",
        lambda url, key, **o: AnthropicModel(base_url=url, api_key=key, **o),
        anthropic_stream,
        anthropic_body,
    ),
}
