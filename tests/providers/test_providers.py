"""Providers apart from models: a provider owns the key, base URL, headers and HTTP client; a
model translates the wire format; a server's quirks are data on its profile. Against loopback
servers speaking the real wire formats."""

from __future__ import annotations

from typing import Any

import pytest
from loopback import LoopbackServer, Reply

from adk_notebook import (
    AdkError,
    Content,
    GenerateContentConfig,
    LlmRequest,
    resolve_model,
)
from adk_notebook.models.anthropic import AnthropicModel
from adk_notebook.models.gemini import GeminiModel
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel
from adk_notebook.models.providers import (
    AnthropicProvider,
    DeepSeekProvider,
    GeminiProvider,
    GroqProvider,
    OllamaProvider,
    OpenAICompatibleProvider,
    OpenAIProfile,
    OpenAIProvider,
    VLLMProvider,
)

SECRET = "sk-" + "PROVIDER-SECRET-0123456789"
FAST = RetryPolicy(max_retries=0)
VARIABLES = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "DEEPSEEK_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_HOST",
)
COMPLETION = {
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
GEMINI_ANSWER = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": "ok"}]},
            "finishReason": "STOP",
        }
    ]
}


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def ask(config: GenerateContentConfig | None = None) -> LlmRequest:
    return LlmRequest(
        contents=[Content.user("Weather in Lima?")],
        config=config or GenerateContentConfig(),
    )


async def send(model: Any, request: LlmRequest) -> str:
    return "".join([r.content.text async for r in model.generate_content(request)])


SCHEMA = {
    "title": "Forecast",
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
QUIRKY = GenerateContentConfig(top_k=4, max_output_tokens=50, response_schema=SCHEMA)


async def test_deepseek_provider_sends_its_key_and_its_quirks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "never-sent-to-deepseek-000")
    with LoopbackServer([Reply(200, COMPLETION)]) as server:
        model = OpenAIModel("deepseek-chat", provider=DeepSeekProvider(base_url=server.url, retry=FAST))
        assert await send(model, ask(QUIRKY)) == "ok"
    [request] = server.requests
    assert request.path == "/chat/completions" and request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.json()
    assert "top_k" not in body and body["max_tokens"] == 50
    assert body["response_format"] == {"type": "json_object"}  # DeepSeek has no json_schema mode
    assert '"city"' in body["messages"][0]["content"]  # ...so the schema travels in the instruction
    assert SECRET not in repr(model) and SECRET not in repr(model.provider)


def test_each_profile_shapes_the_body_and_no_key_is_needed_for_it() -> None:
    bodies = {
        name: OpenAIModel("m", provider=provider).build_body(ask(QUIRKY))
        for name, provider in {
            "openai": OpenAIProvider(),
            "groq": GroqProvider(),
            "vllm": VLLMProvider(),
            "deepseek": DeepSeekProvider(),
            "mine": OpenAICompatibleProvider(
                "mine",
                base_url="http://127.0.0.1:1/v1",
                profile=OpenAIProfile(max_tokens_field="n_predict", top_k=False),
            ),
        }.items()
    }
    assert bodies["openai"]["max_completion_tokens"] == 50 and "top_k" not in bodies["openai"]
    assert bodies["groq"]["max_tokens"] == 50 and "top_k" not in bodies["groq"]
    assert bodies["vllm"]["max_tokens"] == 50 and bodies["vllm"]["top_k"] == 4
    assert bodies["vllm"]["response_format"]["type"] == "json_schema"
    assert bodies["deepseek"]["response_format"] == {"type": "json_object"}
    assert bodies["mine"]["n_predict"] == 50 and "top_k" not in bodies["mine"]


async def test_a_provider_reads_its_key_when_it_sends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackServer([Reply(200, GEMINI_ANSWER)]) as server:
        model = GeminiModel("gemini-2.5-flash", provider=GeminiProvider(base_url=server.url, retry=FAST))
        assert model.build_body(ask())["contents"][0]["parts"] == [{"text": "Weather in Lima?"}]
        with pytest.raises(AdkError) as info:
            await send(model, ask())
        assert (info.value.category, info.value.code) == (
            "unauthorized",
            "missing_api_key",
        )
        assert "GOOGLE_API_KEY" in info.value.message and server.requests == []
        monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
        assert await send(model, ask()) == "ok"
    assert server.requests[0].headers["x-goog-api-key"] == SECRET


async def test_anthropic_provider_sends_its_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    with LoopbackServer([Reply(200, answer)]) as server:
        provider = AnthropicProvider(
            api_key=SECRET,
            base_url=server.url,
            retry=FAST,
            headers={"X-Team": "weather"},
        )
        assert await send(AnthropicModel("claude-haiku-4-5", provider=provider), ask()) == "ok"
    headers = server.requests[0].headers
    assert headers["x-api-key"] == SECRET and headers["anthropic-version"] == "2023-06-01"
    assert headers["x-team"] == "weather"


def test_one_provider_serves_several_models() -> None:
    provider = OllamaProvider(base_url="http://127.0.0.1:11434/v1")
    small, large = (
        OpenAIModel("llama3.2", provider=provider),
        OpenAIModel("qwen3", provider=provider),
    )
    assert small.provider is large.provider and (
        small.provider_name,
        large.base_url,
    ) == ("ollama", provider.base_url)


def test_options_beside_a_provider_are_an_error_not_ignored() -> None:
    with pytest.raises(AdkError) as info:
        OpenAIModel(
            "gpt-4o-mini",
            provider=OpenAIProvider(),
            api_key=SECRET,
            base_url="http://127.0.0.1:1/v1",
        )
    error = info.value
    assert error.code == "conflicting_options" and "api_key, base_url" in error.message
    assert "OpenAIProvider(...)" in error.message and SECRET not in str(error)


def test_provider_names_and_model_strings_pick_the_same_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    by_string = resolve_model("groq:llama-3.3-70b")
    by_name = OpenAIModel("llama-3.3-70b", provider="groq")
    assert type(by_string.provider) is type(by_name.provider) is GroqProvider  # type: ignore[attr-defined]
    assert by_name.base_url == "https://api.groq.com/openai/v1"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:9000")
    assert OpenAIModel("llama3.2", provider_name="ollama").base_url == "http://gpu-box:9000/v1"


def test_a_model_string_without_its_key_still_builds_bodies() -> None:
    with pytest.raises(AdkError):
        resolve_model("deepseek:deepseek-chat")
    model = resolve_model("deepseek:deepseek-chat", require_key=False)
    assert model.build_body(ask(QUIRKY))["response_format"] == {"type": "json_object"}  # type: ignore[attr-defined]
    with pytest.raises(AdkError) as info:
        model.generate_content(ask())
    assert info.value.code == "missing_api_key" and "DEEPSEEK_API_KEY" in info.value.message


@pytest.mark.parametrize("url", ["ftp://example.com", "http://"])
def test_a_provider_checks_its_base_url_when_made(url: str) -> None:
    with pytest.raises(AdkError) as info:
        VLLMProvider(base_url=url)
    assert info.value.code == "invalid_base_url" and info.value.details["provider"] == "vllm"
