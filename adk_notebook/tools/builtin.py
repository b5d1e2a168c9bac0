"""Built-in tools: tools the provider runs on its own side, declared beside function tools.

```
LlmAgent(tools=[GoogleSearch(), get_weather])      Gemini: tools [{googleSearch: {}}, {functionDeclarations: [...]}]
GoogleSearch()     Gemini           {"googleSearch": {}}
CodeExecution()    Gemini           {"codeExecution": {}}
WebSearch()        Anthropic        {"type": "web_search_20250305", "name": "web_search", ...}
```
Nothing runs in the kernel: the provider searches or runs the code and answers with what it
found. Each model declares the ones its API has in its own dialect; one it lacks is an AdkError
(model, unsupported, ``unsupported_builtin_tool``) when the request is built, naming the model
that has it. What a search grounded the answer on comes back as a `Grounding` (the queries, the
sources, the passages each source supports), which the widget and the transcript list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..core.errors import AdkError

__all__ = [
    "BuiltinTool",
    "Citation",
    "CodeExecution",
    "GoogleSearch",
    "Grounding",
    "Source",
    "WebSearch",
    "unsupported_builtin",
]


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A tool the provider runs itself. `offered_by` names the model class whose API has it."""

    offered_by: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class GoogleSearch(BuiltinTool):
    """Grounding with Google Search (Gemini): the model searches and cites what it found."""

    offered_by: ClassVar[str] = "GeminiModel"


@dataclass(frozen=True, slots=True)
class CodeExecution(BuiltinTool):
    """Gemini writes Python and runs it in Google's sandbox; the code and its output come back as parts."""

    offered_by: ClassVar[str] = "GeminiModel"


@dataclass(frozen=True, slots=True)
class WebSearch(BuiltinTool):
    """Anthropic's web search server tool (`web_search_20250305`).

    Args:
        max_uses: The most searches in one request.
        allowed_domains: Search only these domains (not together with blocked_domains).
        blocked_domains: Never search these domains.
    """

    offered_by: ClassVar[str] = "AnthropicModel"
    max_uses: int | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.allowed_domains and self.blocked_domains:
            raise AdkError.config(
                "WebSearch takes allowed_domains or blocked_domains, not both.",
                code="conflicting_options",
            )
        if self.max_uses is not None and (
            isinstance(self.max_uses, bool) or not isinstance(self.max_uses, int) or self.max_uses < 1
        ):
            raise AdkError.config(
                f"WebSearch(max_uses=...) must be a whole number above 0, got {self.max_uses!r}.",
                code="invalid_max_uses",
            )


def unsupported_builtin(tool: BuiltinTool, model: str) -> AdkError:
    """The error for a built-in tool `model` (a model class's name) cannot declare."""
    name = type(tool).__name__
    return AdkError.model(
        f"{name}() is a built-in tool of {tool.offered_by}; {model} has no such tool. "
        f"Use a {tool.offered_by.removesuffix('Model')} model for it, or remove it from the agent's tools.",
        code="unsupported_builtin_tool",
        category="unsupported",
    )


@dataclass(slots=True)
class Source:
    """A web page a search found."""

    uri: str
    title: str = ""


@dataclass(slots=True)
class Citation:
    """A passage of the answer and the sources (indexes into `Grounding.sources`) that support it."""

    text: str
    sources: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Grounding:
    """What a provider-side search grounded one answer on."""

    queries: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)

    def source_index(self, uri: str, title: str = "") -> int:
        """The index of the source at `uri`, added when new."""
        for i, source in enumerate(self.sources):
            if source.uri == uri:
                return i
        self.sources.append(Source(uri, title))
        return len(self.sources) - 1

    def __bool__(self) -> bool:
        return bool(self.queries or self.sources or self.citations)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form events keep (`event.metadata["grounding"]`)."""
        return {
            "queries": list(self.queries),
            "sources": [{"uri": s.uri, "title": s.title} for s in self.sources],
            "citations": [{"text": c.text, "sources": list(c.sources)} for c in self.citations],
        }
