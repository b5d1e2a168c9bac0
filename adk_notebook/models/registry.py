"""Model strings ("gemini-2.5-flash", "openai:gpt-4o-mini", ...) to model objects."""

from __future__ import annotations

from .base import Llm
from ..core.errors import AdkError

__all__ = ["resolve_model"]

_KNOWN_PROVIDERS = ("gemini", "openai", "anthropic", "ollama", "local")


def resolve_model(model: Llm | str) -> Llm:
    """Return `model` if it is already an `Llm`; otherwise resolve the model string."""
    if isinstance(model, Llm):
        return model
    if not isinstance(model, str) or not model.strip():
        raise AdkError.config(
            f"A model must be an Llm object or a model string like 'gemini-2.5-flash'; got {model!r}.",
            code="invalid_model",
        )
    provider = model.split(":", 1)[0] if ":" in model else ("gemini" if model.startswith("gemini") else model)
    if provider not in _KNOWN_PROVIDERS and model != "auto":
        raise AdkError.config(
            f"Unknown model string {model!r}. Use 'gemini-…', 'openai:…', 'anthropic:…', 'ollama:…', 'local' or "
            "'auto', or pass a model object (e.g. ScriptedModel([...]) for offline runs).",
            code="unknown_model",
        )
    raise AdkError.config(
        f"Model {model!r} needs the {provider!r} provider, which this version of adk-notebook does not ship yet. "
        "Pass a model object instead (ScriptedModel or FunctionModel work offline).",
        code="provider_unavailable",
        category="unsupported",
    )
