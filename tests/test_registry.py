"""resolve_model: model strings to model objects, keys from the environment, "auto"."""

from __future__ import annotations

import sys
import types

import pytest
from loopback import LoopbackServer, Reply
from provider_env import PROVIDER_VARIABLES

from adk_notebook import AdkError, LlmAgent, ScriptedModel, resolve_model
from adk_notebook.models.openai import OpenAIModel

SECRET = "sk-REGISTRY-SECRET-42"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


class FakeLocalModel(ScriptedModel):
    def __init__(self, model_path: str | None = None) -> None:
        super().__init__(["local answer"], name="local")
        self.model_path = model_path


@pytest.fixture
def fake_local(monkeypatch: pytest.MonkeyPatch) -> type[FakeLocalModel]:
    """LocalModel is another module's work; the registry only has to build it lazily."""
    module = types.ModuleType("adk_notebook.models.local")
    module.LocalModel = FakeLocalModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "adk_notebook.models.local", module)
    return FakeLocalModel


def test_a_model_object_is_returned_as_is() -> None:
    model = ScriptedModel(["hi"])
    assert resolve_model(model) is model


@pytest.mark.parametrize("bad", ["", "   ", None, 42])
def test_not_a_model(bad: object) -> None:
    with pytest.raises(AdkError) as info:
        resolve_model(bad)  # type: ignore[arg-type]
    assert info.value.code == "invalid_model"


def test_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = resolve_model("openai:gpt-4o-mini")
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.provider_name, model.base_url) == ("gpt-4o-mini", "openai", "https://api.openai.com/v1")
    assert SECRET not in repr(model)
    assert resolve_model("OpenAI:gpt-4o").name == "gpt-4o"


def test_openai_without_a_key() -> None:
    with pytest.raises(AdkError) as info:
        resolve_model("openai:gpt-4o-mini")
    error = info.value
    assert (error.component, error.category, error.code) == ("config", "unauthorized", "missing_api_key")
    assert "OPENAI_API_KEY" in error.message


def test_openai_compatible_server_from_openai_base_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    model = resolve_model("openai:my-local-model")
    assert isinstance(model, OpenAIModel) and model.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("host", "base_url"),
    [
        (None, "http://localhost:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("gpu-box:9000", "http://gpu-box:9000/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:443/v1"),
        ("http://10.0.0.5:11434/", "http://10.0.0.5:11434/v1"),
    ],
)
def test_ollama_base_url(monkeypatch: pytest.MonkeyPatch, host: str | None, base_url: str) -> None:
    if host is not None:
        monkeypatch.setenv("OLLAMA_HOST", host)
    model = resolve_model("ollama:llama3.2")
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.provider_name, model.base_url) == ("llama3.2", "ollama", base_url)


async def test_ollama_end_to_end_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi from llama"}, "finish_reason": "stop"}]
    }
    with LoopbackServer([Reply(200, answer)]) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # must never be sent to another provider
        result = await LlmAgent(name="bot", model="ollama:llama3.2").run_async("Hi", streaming=False)
    assert result.text == "Hi from llama"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].json()["model"] == "llama3.2"
    assert "authorization" not in server.requests[0].headers


@pytest.mark.parametrize(
    ("provider", "variable", "base_url"),
    [
        ("deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com"),
        ("groq", "GROQ_API_KEY", "https://api.groq.com/openai/v1"),
        ("openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"),
    ],
)
def test_openai_compatible_providers(
    monkeypatch: pytest.MonkeyPatch, provider: str, variable: str, base_url: str
) -> None:
    with pytest.raises(AdkError) as info:
        resolve_model(f"{provider}:some-model")
    assert info.value.category == "unauthorized" and variable in info.value.message
    monkeypatch.setenv(variable, SECRET)
    model = resolve_model(f"{provider}:org/some-model")
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.provider_name, model.base_url) == ("org/some-model", provider, base_url)
    assert SECRET not in repr(model)


def test_gemini(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AdkError) as info:
        resolve_model("gemini-2.5-flash")
    assert info.value.category == "unauthorized" and "GOOGLE_API_KEY" in info.value.message
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    from adk_notebook.models.gemini import GeminiModel

    for text in ("gemini-2.5-flash", "gemini:gemini-2.5-flash"):
        model = resolve_model(text)
        assert isinstance(model, GeminiModel) and model.name == "gemini-2.5-flash"
        assert SECRET not in repr(model)


def test_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AdkError) as info:
        resolve_model("anthropic:claude-haiku-4-5")
    assert info.value.category == "unauthorized" and "ANTHROPIC_API_KEY" in info.value.message
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    from adk_notebook.models.anthropic import AnthropicModel

    model = resolve_model("anthropic:claude-haiku-4-5")
    assert isinstance(model, AnthropicModel) and model.name == "claude-haiku-4-5"
    assert SECRET not in repr(model)


def test_local(fake_local: type[FakeLocalModel]) -> None:
    model = resolve_model("local")
    assert isinstance(model, fake_local) and model.model_path is None
    model = resolve_model("local:/models/smollm2.gguf")
    assert isinstance(model, fake_local) and model.model_path == "/models/smollm2.gguf"


def test_auto_picks_the_first_configured_provider(
    monkeypatch: pytest.MonkeyPatch, fake_local: type[FakeLocalModel]
) -> None:
    assert isinstance(resolve_model("auto"), fake_local)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert type(resolve_model("auto")).__name__ == "AnthropicModel"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = resolve_model("auto")
    assert isinstance(model, OpenAIModel) and model.name == "gpt-4o-mini"
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    model = resolve_model("auto")
    assert type(model).__name__ == "GeminiModel" and model.name == "gemini-2.5-flash"


def test_auto_ignores_empty_variables(monkeypatch: pytest.MonkeyPatch, fake_local: type[FakeLocalModel]) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "")
    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    assert isinstance(resolve_model("auto"), fake_local)


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("opneai:gpt-4o", "openai:gpt-4o"),
        ("antropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5"),
        ("gemni-2.5-flash", "gemini-2.5-flash"),
        ("gpt-4o-mini", "openai:gpt-4o-mini"),
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("atuo", "auto"),
        ("olama:llama3.2", "ollama:llama3.2"),
    ],
)
def test_unknown_strings_suggest_a_close_one(text: str, suggestion: str) -> None:
    with pytest.raises(AdkError) as info:
        resolve_model(text)
    assert info.value.code == "unknown_model"
    assert f"Unknown model string {text!r}" in info.value.message
    assert f"Did you mean {suggestion!r}?" in info.value.message


def test_unknown_string_without_suggestion() -> None:
    with pytest.raises(AdkError) as info:
        resolve_model("banana")
    assert "Unknown model string 'banana'" in info.value.message and "Did you mean" not in info.value.message


def test_provider_without_a_model_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(AdkError) as info:
        resolve_model("openai:")
    assert info.value.code == "invalid_model"


def test_agent_with_a_model_string_fails_on_first_use_naming_the_variable() -> None:
    agent = LlmAgent(name="bot", model="openai:gpt-4o-mini")  # constructing is fine
    with pytest.raises(AdkError) as info:
        agent.run("Hi")
    assert "OPENAI_API_KEY" in info.value.message
