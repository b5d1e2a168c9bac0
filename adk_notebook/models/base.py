"""The model interface every provider implements, and the request/response it speaks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..core.content import Content
from ..core.errors import AdkError
from ..core.events import Usage
from ..tools.base import FunctionDeclaration
from ..tools.builtin import BuiltinTool, Grounding

__all__ = ["GenerateContentConfig", "Llm", "LlmRequest", "LlmResponse", "ThinkingConfig"]


@dataclass(slots=True)
class ThinkingConfig:
    """How much a reasoning model thinks before it answers, and whether its thoughts come back.

    Each provider maps it its own way:

    - Gemini: `thinkingConfig {thinkingBudget, includeThoughts}` (no budget: the model decides).
    - Anthropic: `thinking {type: "enabled", budget_tokens}` (at least 1024, below max_tokens;
      no budget: `{type: "adaptive"}`, the Claude 4.6+ mode); 0 sends no `thinking`. Claude
      returns its thoughts with signatures, which are sent back unchanged on the next turn.
    - OpenAI Chat Completions: `reasoning_effort`, from the budget: 0 "minimal", below 4096
      "low", below 16384 "medium", else "high" (no budget: the model's default). Its reasoning
      text is never returned; servers that do return it (DeepSeek, vLLM) show it as thoughts.

    Args:
        budget_tokens: The most tokens to spend thinking; 0 turns thinking off where the model
            allows it, None lets the model decide.
        include_thoughts: Ask for the thoughts (Gemini sends summaries only when asked).
    """

    budget_tokens: int | None = None
    include_thoughts: bool = True

    def __post_init__(self) -> None:
        budget = self.budget_tokens
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise AdkError.config(
                f"ThinkingConfig(budget_tokens=...) must be a whole number of tokens, 0 or more (or None to let "
                f"the model decide), got {budget!r}.",
                code="invalid_thinking_budget",
            )


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
    thinking: ThinkingConfig | None = None  # None: the model's default


@dataclass(slots=True)
class LlmRequest:
    """What a model receives for one call."""

    model: str = ""
    contents: list[Content] = field(default_factory=list)
    system_instruction: str | None = None
    tools: list[FunctionDeclaration] = field(default_factory=list)
    config: GenerateContentConfig = field(default_factory=GenerateContentConfig)
    # Tools the provider runs itself (GoogleSearch(), CodeExecution(), WebSearch()), declared beside `tools`.
    builtin_tools: list[BuiltinTool] = field(default_factory=list)


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
    grounding: Grounding | None = None  # what a built-in search grounded the answer on


class Llm(ABC):
    """A model. Providers (Gemini, OpenAI, Anthropic, local, scripted) are interchangeable."""

    name: str = "llm"

    @abstractmethod
    def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        """Answer one request; with `stream`, yield partial chunks before the complete response."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
