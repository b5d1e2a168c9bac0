"""Models: the model interface, providers (key, base URL, HTTP client), offline models and model strings."""

from .base import GenerateContentConfig, Llm, LlmRequest, LlmResponse, ThinkingConfig
from .registry import resolve_model
from .scripted import FunctionModel, ScriptedModel

__all__ = [
    "AnthropicModel",
    "AnthropicProvider",
    "DeepSeekProvider",
    "FunctionModel",
    "GeminiModel",
    "GeminiProvider",
    "GenerateContentConfig",
    "GroqProvider",
    "Llm",
    "LlmRequest",
    "LlmResponse",
    "LocalModel",
    "OllamaProvider",
    "OpenAICompatibleProvider",
    "OpenAIModel",
    "OpenAIProfile",
    "OpenAIProvider",
    "OpenRouterProvider",
    "Provider",
    "RetryPolicy",
    "ScriptedModel",
    "ThinkingConfig",
    "VLLMProvider",
    "resolve_model",
]

# Provider models are imported on first use, so `import adk_notebook` stays fast.
_PROVIDERS = (
    "AnthropicProvider",
    "DeepSeekProvider",
    "GeminiProvider",
    "GroqProvider",
    "OllamaProvider",
    "OpenAICompatibleProvider",
    "OpenAIProfile",
    "OpenAIProvider",
    "OpenRouterProvider",
    "Provider",
    "VLLMProvider",
)
_LAZY = {
    "AnthropicModel": ".anthropic",
    "GeminiModel": ".gemini",
    "LocalModel": ".local",
    "OpenAIModel": ".openai",
    "RetryPolicy": ".http",
    **dict.fromkeys(_PROVIDERS, ".providers"),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
