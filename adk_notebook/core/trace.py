"""The trace of a run: a tree of timed spans, built by the runtime itself, always on.

```
run            the whole run (Runner.run)
└── agent      one agent's invocation (sub-agents nest under their parent, AgentTools under the tool)
    ├── model  one model call: tokens in/out, cost
    └── tool   one tool call: its call id, its error if it failed
```
Plain slotted dataclasses, no dependency: cheap enough to record every run. `RunResult.trace` is
the root span (`Runner.run(...).trace` while it runs); `to_dict()`/`from_dict()` is its JSON form (what `JsonlTraceExporter` writes).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .json_text import shown

__all__ = ["ModelPrice", "Span", "SpanKind", "price_of", "total_up"]

SpanKind = Literal["run", "agent", "model", "tool"]

# One clock for every span: epoch seconds read off the monotonic counter, so a child never
# seems to end after its parent and a span costs one clock read to open and one to close.
_EPOCH = time.time() - time.perf_counter()


def now() -> float:
    """The time in seconds since the epoch, on the spans' clock."""
    return _EPOCH + time.perf_counter()


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _is_amount(value: Any) -> bool:
    return _is_number(value) and value >= 0


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_KINDS = get_args(SpanKind)
_TEXT = (_is_text, "text")
# What each field of a span's JSON form holds: (the check, what it should be).
_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "name": _TEXT,
    "kind": (lambda value: value in _KINDS, f"one of {', '.join(_KINDS)}"),
    "start": (_is_number, "a number of seconds since the epoch"),
    "duration": (_is_amount, "a number of seconds, 0 or more"),
    "agent": _TEXT,
    "model": _TEXT,
    "tool": _TEXT,
    "call_id": _TEXT,
    "input_tokens": (_is_count, "a whole number, 0 or more"),
    "output_tokens": (_is_count, "a whole number, 0 or more"),
    "cost": (_is_number, "a finite number"),
    "error_type": _TEXT,
    "error_message": _TEXT,
    "invocation_id": _TEXT,
    "session_id": _TEXT,
}
_REQUIRED = ("name", "kind", "start")
_OPTIONAL = tuple(key for key in _FIELDS if key not in (*_REQUIRED, "duration"))


@dataclass(slots=True, kw_only=True, eq=False)
class Span:
    """One timed step of a run.

    Args:
        name: What it was, as OpenTelemetry names it: "run weather", "invoke_agent weather",
            "chat gpt-4o-mini", "execute_tool get_weather".
        kind: "run", "agent", "model" or "tool".
        start: When it began (seconds since the epoch).
        duration: How long it took in seconds (None while it is still open).
        agent: The agent that ran (every kind).
        model: The model that answered ("openai:gpt-4o-mini"; model spans, and agent spans that called one).
        tool: The tool's name (tool spans).
        call_id: The function call's id (tool spans).
        input_tokens, output_tokens: Tokens as the provider counted them (model spans; summed
            over descendants for agent and run spans).
        cost: What those tokens cost, when a price table names the model (summed like tokens).
        error_type: The exception's class name when the step failed ("TimeoutError", "AdkError").
        error_message: What it said.
        invocation_id, session_id: The run's ids (run spans).
        children: The steps inside this one, in the order they began.
    """

    name: str
    kind: SpanKind
    start: float = field(default_factory=now)
    duration: float | None = None
    agent: str | None = None
    model: str | None = None
    tool: str | None = None
    call_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    invocation_id: str | None = None
    session_id: str | None = None
    children: list[Span] = field(default_factory=list)
    _clock: float = field(default_factory=time.perf_counter, repr=False)  # monotonic start, for the duration

    @property
    def end(self) -> float | None:
        """When it ended (seconds since the epoch), None while open."""
        return None if self.duration is None else self.start + self.duration

    @property
    def failed(self) -> bool:
        return self.error_type is not None

    def child(self, name: str, kind: SpanKind, **fields: Any) -> Span:
        """Open a span inside this one."""
        span = Span(name=name, kind=kind, **fields)
        self.children.append(span)
        return span

    def finish(self, error: BaseException | None = None) -> None:
        """Close the span (once), recording `error` if the step failed."""
        if self.duration is not None:
            return
        self.duration = now() - self.start
        if error is None or self.error_type is not None:
            return
        if isinstance(error, GeneratorExit | asyncio.CancelledError):
            self.fail("CancelledError", "Stopped before it ended.")
        else:
            self.fail(type(error).__name__, str(error))

    def fail(self, error_type: str, message: str | None) -> None:
        self.error_type = error_type
        self.error_message = message

    def walk(self) -> Iterator[Span]:
        """This span and every span inside it, depth first, in order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, kind: SpanKind) -> list[Span]:
        """Every span of `kind` in this tree, in order."""
        return [span for span in self.walk() if span.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: fields that are None are left out."""
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "start": self.start,
            "duration": self.duration,
        }
        for key in _OPTIONAL:
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        data["children"] = [child.to_dict() for child in self.children]
        return data

    @classmethod
    def from_dict(cls, data: Any, at: str = "") -> Span:
        """The span `to_dict()` gave; ValueError naming the field (`children[0].start`) when `data`
        is not one, so a damaged file never yields a span whose times are not numbers."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{at.rstrip('.') or 'the line'} should be a span object, not {shown(data)}")
        fields: dict[str, Any] = {}
        for key, (accepts, expected) in _FIELDS.items():
            value = data.get(key)
            if value is None:
                if key in _REQUIRED:
                    raise ValueError(f"{at}{key} is missing")
            elif not accepts(value):
                raise ValueError(f"{at}{key} should be {expected}, not {shown(value)}")
            else:
                fields[key] = value
        children = data.get("children")
        if children is None:
            children = []
        elif not isinstance(children, list):
            raise ValueError(f"{at}children should be a list of spans, not {shown(children)}")
        return cls(**fields, children=[cls.from_dict(c, f"{at}children[{i}].") for i, c in enumerate(children)])

    def __repr__(self) -> str:
        took = "open" if self.duration is None else f"{self.duration * 1000:.1f} ms"
        return f"Span({self.name!r}, {took}, children={len(self.children)})"


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What a model's tokens cost, in your currency per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000


def price_of(prices: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price of `model` ("openai:gpt-4o-mini"), found under that string or its bare name."""
    price = prices.get(model)
    if price is None and ":" in model:
        price = prices.get(model.split(":", 1)[1])
    return price


def total_up(span: Span, prices: Mapping[str, ModelPrice] | None = None) -> None:
    """Price each model span whose model `prices` names, and sum tokens and cost up the tree.

    Run once when the run ends: agent and run spans get the totals of the model calls inside them.
    """
    if span.kind == "model":
        if prices and span.model is not None and span.cost is None:
            price = price_of(prices, span.model)
            if price is not None:
                span.cost = price.cost(span.input_tokens or 0, span.output_tokens or 0)
        return
    tokens_in = tokens_out = 0
    cost = 0.0
    counted = priced = False
    for child in span.children:
        total_up(child, prices)
        if child.input_tokens is not None or child.output_tokens is not None:
            counted = True
            tokens_in += child.input_tokens or 0
            tokens_out += child.output_tokens or 0
        if child.cost is not None:
            priced = True
            cost += child.cost
    if counted:
        span.input_tokens, span.output_tokens = tokens_in, tokens_out
    if priced:
        span.cost = cost
