"""OpenTelemetryPlugin: each run's trace as OpenTelemetry spans, for any exporter.

The spans follow the GenAI semantic conventions: `invoke_agent {agent}`, `chat {model}` and
`execute_tool {tool}` under the run's span, nested as the run nested, with
`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.request.model`,
`gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.tool.name`, `gen_ai.tool.call.id` and
`error.type`. They are made from the run's own trace (`core/trace.py`) when the run ends, with
its start and end times, so a plugin earlier in the list that answers for a hook never hides a
span. Message contents (tool arguments and results, the model's answers, and error messages,
which may quote them) are recorded only with `capture_content=True`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.events import Event
from ..extras import install_hint
from .base import Plugin

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"OpenTelemetryPlugin needs OpenTelemetry: {install_hint('otel')}") from exc

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer, TracerProvider

    from ..core.context import InvocationContext
    from ..core.trace import Span

__all__ = ["OpenTelemetryPlugin"]

_OPERATION = {"agent": "invoke_agent", "model": "chat", "tool": "execute_tool"}


class OpenTelemetryPlugin(Plugin):
    """Sends every run's trace to OpenTelemetry.

    Args:
        tracer_provider: Where the spans go (default: the global provider OpenTelemetry is set
            up with, `opentelemetry.trace.set_tracer_provider`).
        capture_content: Also record tool arguments and results, the model's answers
            (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `gen_ai.output.messages`)
            and error messages (the status description). Off by default: they may hold personal
            data; a failed span then carries only `error.type`.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        capture_content: bool = False,
    ) -> None:
        super().__init__()
        provider = tracer_provider or otel_trace.get_tracer_provider()
        self.tracer: Tracer = provider.get_tracer("adk_notebook")
        self.capture_content = capture_content

    async def after_run_callback(self, ctx: InvocationContext) -> None:
        contents = _Contents(ctx) if self.capture_content else None
        self._export(ctx.span, None, ctx.span, contents)

    def _export(self, span: Span, parent: Context | None, root: Span, contents: _Contents | None) -> None:
        end = span.end if span.end is not None else root.end
        otel_span = self.tracer.start_span(
            span.name,
            context=parent,
            kind=SpanKind.CLIENT if span.kind == "model" else SpanKind.INTERNAL,
            attributes=_attributes(span, contents),
            start_time=_ns(span.start),
        )
        if span.error_type is not None:
            # An error's message is content too: it may quote the arguments ("no forecast for
            # <city>"). Without capture_content the status says only that it failed; error.type
            # says how.
            otel_span.set_status(Status(StatusCode.ERROR, span.error_message if contents is not None else None))
        context = otel_trace.set_span_in_context(otel_span)
        for child in span.children:
            self._export(child, context, root, contents)
        otel_span.end(end_time=_ns(end) if end is not None else None)


def _attributes(span: Span, contents: _Contents | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    operation = _OPERATION.get(span.kind)
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    if span.agent is not None:
        attributes["gen_ai.agent.name"] = span.agent
    if span.session_id is not None:
        attributes["gen_ai.conversation.id"] = span.session_id
    if span.kind == "model" and span.model is not None:
        provider, _, name = span.model.rpartition(":")
        attributes["gen_ai.request.model"] = name
        if provider:
            attributes["gen_ai.provider.name"] = provider
    if span.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = span.input_tokens
    if span.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = span.output_tokens
    if span.cost is not None:
        attributes["adk.cost"] = span.cost
    if span.tool is not None:
        attributes["gen_ai.tool.name"] = span.tool
        attributes["gen_ai.tool.type"] = "function"
    if span.call_id is not None:
        attributes["gen_ai.tool.call.id"] = span.call_id
    if span.error_type is not None:
        attributes["error.type"] = span.error_type
    if contents is not None:
        attributes.update(contents.of(span))
    return attributes


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class _Contents:
    """The run's messages, found in its stored events, for spans that opted in to contents."""

    def __init__(self, ctx: InvocationContext) -> None:
        events = [e for e in ctx.session.events if e.invocation_id == ctx.invocation_id and not e.partial]
        self.arguments = {c.id: c.args for e in events for c in e.function_calls() if c.id}
        self.results = {r.id: r.response for e in events for r in e.function_responses() if r.id}
        # The k-th model call of an agent answered with that agent's k-th model event.
        by_author: dict[str, list[Event]] = {}
        for event in events:
            if event.content is not None and event.content.role == "model":
                by_author.setdefault(event.author, []).append(event)
        self.answers: dict[str, Iterator[Event]] = {author: iter(found) for author, found in by_author.items()}

    def of(self, span: Span) -> dict[str, str]:
        if span.kind == "tool" and span.call_id is not None:
            found = {}
            if span.call_id in self.arguments:
                found["gen_ai.tool.call.arguments"] = _json(self.arguments[span.call_id])
            if span.call_id in self.results:
                found["gen_ai.tool.call.result"] = _json(self.results[span.call_id])
            return found
        if span.kind == "model" and span.agent is not None and span.error_type is None:
            answer = next(self.answers.get(span.agent, iter(())), None)
            if answer is not None and answer.content is not None:
                return {"gen_ai.output.messages": _json([answer.content.to_dict()])}
        return {}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
