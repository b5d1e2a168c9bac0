"""Offline models for tests and teaching: no network, no keys, fully predictable.

`ScriptedModel([...])` replays its script, one item per model call; `FunctionModel(fn)`
computes each answer from the request. An item is any of:

- a `str` (a text answer), a `FunctionCall`, a `Part` or a list of them (one answer, many parts),
- a `Content` or an `LlmResponse` (used as is),
- an exception instance (raised, to rehearse failures).

With streaming on, text (thoughts too) is sent in word-sized chunks before the complete
response, as a real provider would.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeAlias

from ..core.content import Content, FunctionCall, Part
from ..core.errors import AdkError
from .base import Llm, LlmRequest, LlmResponse

__all__ = ["FunctionModel", "ScriptItem", "ScriptedModel"]

ScriptItem: TypeAlias = str | FunctionCall | Part | Content | LlmResponse | BaseException | list[Any]

_WORDS = re.compile(r"\s*\S+\s*|\s+")


def _as_part(item: Any) -> Part:
    if isinstance(item, Part):
        return item
    if isinstance(item, str):
        return Part(text=item)
    if isinstance(item, FunctionCall):
        # A copy, so the id the agent assigns never leaks back into the script.
        return Part(function_call=FunctionCall(item.name, dict(item.args), item.id))
    raise TypeError(
        f"A model script item must be str, FunctionCall, Part, Content, LlmResponse, an exception or a list "
        f"of str/FunctionCall/Part; got {type(item).__name__}."
    )


def to_response(item: ScriptItem) -> LlmResponse:
    """Turn one script item into a complete response."""
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, LlmResponse):
        return item
    if isinstance(item, Content):
        return LlmResponse(content=item, finish_reason="stop")
    parts = [_as_part(p) for p in item] if isinstance(item, list) else [_as_part(item)]
    return LlmResponse(content=Content("model", parts), finish_reason="stop")


async def _replay(response: LlmResponse, stream: bool) -> AsyncIterator[LlmResponse]:
    if stream and response.content is not None:
        for part in response.content.parts:
            if part.text:  # thoughts stream too, as a provider's thought chunks
                for chunk in _WORDS.findall(part.text):
                    yield LlmResponse(
                        Content("model", [Part(text=chunk, thought=part.thought)]), partial=True, turn_complete=False
                    )
    yield response


class ScriptedModel(Llm):
    """Replays `script` in order and records every request in `requests`.

    Example:
        model = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo."])
    """

    def __init__(self, script: Iterable[ScriptItem], *, name: str = "scripted") -> None:
        self.script: list[ScriptItem] = list(script)
        self.requests: list[LlmRequest] = []
        self.name = name

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self.script):
            raise AdkError.model(
                f"ScriptedModel has {len(self.script)} scripted responses and was asked for response "
                f"#{index + 1}; add more items to its script.",
                code="script_exhausted",
            )
        async for response in _replay(to_response(self.script[index]), stream):
            yield response


class FunctionModel(Llm):
    """Calls `fn(request)` (sync or async) for each model call; it returns a script item."""

    def __init__(
        self,
        fn: Callable[[LlmRequest], ScriptItem | Awaitable[ScriptItem]],
        *,
        name: str | None = None,
    ) -> None:
        self.fn = fn
        self.requests: list[LlmRequest] = []
        self.name = name or f"function:{getattr(fn, '__name__', 'model')}"

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        self.requests.append(request)
        item = self.fn(request)
        if inspect.isawaitable(item):
            item = await item
        async for response in _replay(to_response(item), stream):
            yield response
