"""Models: the provider interface, offline models and model strings."""

from .base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from .registry import resolve_model
from .scripted import FunctionModel, ScriptedModel

__all__ = [
    "AnthropicModel",
    "FunctionModel",
    "GeminiModel",
    "GenerateContentConfig",
    "Llm",
    "LlmRequest",
    "LlmResponse",
    "LocalModel",
    "OpenAIModel",
    "RetryPolicy",
    "ScriptedModel",
    "resolve_model",
]

# Provider models are imported on first use, so `import adk_notebook` stays fast.
_LAZY = {"AnthropicModel": ".anthropic", "GeminiModel": ".gemini", "LocalModel": ".local", "OpenAIModel": ".openai", "RetryPolicy": ".http"}


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
