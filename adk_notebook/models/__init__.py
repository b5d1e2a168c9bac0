"""Models: the provider interface, offline models and model strings."""

from .base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from .registry import resolve_model
from .scripted import FunctionModel, ScriptedModel

__all__ = ["FunctionModel", "GenerateContentConfig", "Llm", "LlmRequest", "LlmResponse", "ScriptedModel", "resolve_model"]
