"""GenerateContentConfig.tool_choice in each provider's wire format (request bodies only)."""

from __future__ import annotations

import pytest

from adk_notebook import AnthropicModel, Content, GeminiModel, GenerateContentConfig, LlmRequest, OpenAIModel
from adk_notebook.tools.base import FunctionDeclaration

WEATHER = FunctionDeclaration("get_weather", "Weather.", {"type": "object", "properties": {"city": {"type": "string"}}})


def body(model, choice: str | None, tools=(WEATHER,)) -> dict:
    request = LlmRequest("m", [Content.user("hi")], tools=list(tools), config=GenerateContentConfig(tool_choice=choice))
    return model.build_body(request)


@pytest.mark.parametrize(
    ("choice", "openai", "gemini", "anthropic"),
    [
        ("auto", "auto", {"mode": "AUTO"}, {"type": "auto"}),
        ("none", "none", {"mode": "NONE"}, {"type": "none"}),
        ("required", "required", {"mode": "ANY"}, {"type": "any"}),
        (
            "get_weather",
            {"type": "function", "function": {"name": "get_weather"}},
            {"mode": "ANY", "allowedFunctionNames": ["get_weather"]},
            {"type": "tool", "name": "get_weather"},
        ),
    ],
)
def test_tool_choice_per_provider(choice: str, openai, gemini, anthropic) -> None:
    assert body(OpenAIModel("gpt-4o-mini", api_key="k"), choice)["tool_choice"] == openai
    assert body(GeminiModel("gemini-2.5-flash", api_key="k"), choice)["toolConfig"] == {"functionCallingConfig": gemini}
    assert body(AnthropicModel("claude-sonnet-4-6", api_key="k"), choice)["tool_choice"] == anthropic


def test_no_tool_choice_without_tools_or_setting() -> None:
    for model in (OpenAIModel("gpt-4o-mini", api_key="k"), GeminiModel(api_key="k"), AnthropicModel(api_key="k")):
        assert not {"tool_choice", "toolConfig"} & set(body(model, None))
        assert not {"tool_choice", "toolConfig"} & set(body(model, "required", tools=()))
