"""The model interface every provider implements, and the request/response it speaks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..core.content import Content
from ..core.events import Usage
from ..tools.base import FunctionDeclaration

__all__ = ["GenerateContentConfig", "Llm", "LlmRequest", "LlmResponse"]


@dataclass(slots=True)
class GenerateContentConfig:
    """Sampling and output settings; each provider maps the ones it supports."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    response_schema: dict[str, Any] | None = None
    response_mime_type: str | None = None
    # Whether the model may or must call a tool: "auto" (the providers' default), "none",
    # "required" (some tool), or a tool's name (that tool).
    tool_choice: str | None = None


@dataclass(slots=True)
class LlmRequest:
    """What a model receives for one call."""

    model: str = ""
    contents: list[Content] = field(default_factory=list)
    system_instruction: str | None = None
    tools: list[FunctionDeclaration] = field(default_factory=list)
    config: GenerateContentConfig = field(default_factory=GenerateContentConfig)


@dataclass(slots=True)
class LlmResponse:
    """One answer, or one streamed chunk of it (`partial=True`).

    A streaming call yields partial chunks, each carrying only the new text, then one
    non-partial response with the whole content: the agent stores that one.
    """

    content: Content | None = None
    partial: bool = False
    turn_complete: bool = True
    finish_reason: str | None = None
    usage: Usage | None = None


class Llm(ABC):
    """A model. Providers (Gemini, OpenAI, Anthropic, local, scripted) are interchangeable."""

    name: str = "llm"

    @abstractmethod
    def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        """Answer one request; with `stream`, yield partial chunks before the complete response."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
