"""A run's timeline while it goes: events folded into the span tree a finished run's trace has.

The live view sees every event but not the runner's spans, so `LiveTrace` rebuilds them from
what events say: a model call runs from the event before it (the user's message, the tool
responses) to its answer, with the answer's tokens; a tool call from the call to its response,
its duration and error from the `ToolOutcome`; a change of author opens an agent span. When the
run ends the runner's own trace (`RunResult.trace`) takes its place. The shape is the runner's,
`Span.to_dict()` (core/trace.py), which `waterfall.py` draws.

The live view draws the tree again (waterfall.py) whenever a span was added or changed: on
model and tool calls, never per streamed token (`take_changed`).
"""

from __future__ import annotations

from typing import Any

from ..core.events import Event
from ..runner import RunResult
from .render import error_line

__all__ = ["LiveTrace", "trace_of"]

Path = tuple[int, ...]


def _span(name: str, kind: str, start: float, duration: float | None = None, **fields: Any) -> dict[str, Any]:
    """A span as `Span.to_dict()` writes it."""
    return {
        "name": name,
        "kind": kind,
        "start": start,
        "duration": duration,
        **fields,
        "children": [],
    }


class LiveTrace:
    """The span tree of one run, folded from its non-partial events in order."""

    def __init__(self, agent_name: str) -> None:
        self._agent_name = agent_name
        self.root: dict[str, Any] | None = None
        self._agent: Path | None = None
        self._cursor = 0.0  # when the next model call started: the last event before it
        self._tools: dict[str, list[Path]] = {}  # call id -> tool spans still running, oldest first
        self._changed = False

    def pending(self) -> bool:
        """True when spans changed since the last `take_changed`."""
        return self._changed

    def replace(self, root: dict[str, Any]) -> None:
        """Show `root` instead: the runner's own trace, once the run is over."""
        self.root = root
        self._changed = True

    def take_changed(self) -> bool:
        """Whether spans changed since the last call."""
        changed, self._changed = self._changed, False
        return changed

    def _at(self, path: Path) -> dict[str, Any]:
        span = self.root
        assert span is not None
        for index in path:
            span = span["children"][index]
        return span

    def _add(self, parent: Path, span: dict[str, Any]) -> Path:
        siblings = self._at(parent)["children"]
        siblings.append(span)
        self._changed = True
        return (*parent, len(siblings) - 1)

    def _set(self, path: Path, **fields: Any) -> None:
        self._at(path).update(fields)
        self._changed = True

    def add(self, event: Event) -> None:
        """Fold one event; partial ones (streamed chunks, progress) say nothing about spans."""
        if event.partial or event.progress is not None:
            return
        ts = event.timestamp
        if self.root is None:
            self.root = _span(f"run {self._agent_name}", "run", ts, agent=self._agent_name)
            self._changed = True
            self._cursor = ts
        if event.author == "user":
            self._cursor = ts
            return
        agent = self._agent_span(event.author)
        content = event.content
        if event.tool_outcomes or (content is not None and content.role == "tool"):
            self._responses(event, ts)
        elif content is not None:
            self._model_call(agent, event, ts)
        if event.error is not None:
            self._set(
                agent,
                error_type=type(event.error).__name__,
                error_message=error_line(event.error),
            )
        self._cursor = ts

    def _agent_span(self, author: str) -> Path:
        if self._agent is not None and self._at(self._agent)["agent"] == author:
            return self._agent
        self._close_agent(self._cursor)
        self._agent = self._add((), _span(f"invoke_agent {author}", "agent", self._cursor, agent=author))
        return self._agent

    def _close_agent(self, end: float) -> None:
        if self._agent is not None:
            self._set(self._agent, duration=max(0.0, end - self._at(self._agent)["start"]))

    def _model_call(self, agent: Path, event: Event, ts: float) -> None:
        usage = event.usage
        tokens = (
            {}
            if usage is None
            else {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
            }
        )
        model = str(event.metadata.get("model") or "model")
        call = _span(
            f"chat {model}",
            "model",
            self._cursor,
            max(0.0, ts - self._cursor),
            model=model,
            **tokens,
        )
        self._add(agent, call)
        assert event.content is not None
        for fc in event.content.function_calls():
            path = self._add(
                agent,
                _span(f"execute_tool {fc.name}", "tool", ts, tool=fc.name, call_id=fc.id),
            )
            self._tools.setdefault(fc.id or fc.name, []).append(path)

    def _responses(self, event: Event, ts: float) -> None:
        outcomes = {o.call_id: o for o in event.tool_outcomes}
        responses = event.content.function_responses() if event.content is not None else []
        for key in [r.id or r.name for r in responses] or list(outcomes):
            running = self._tools.get(key)
            if not running:
                continue
            path = running.pop(0)
            outcome = outcomes.get(key)
            if outcome is None:
                self._set(path, duration=max(0.0, ts - self._at(path)["start"]))
            elif outcome.error:
                self._set(
                    path,
                    duration=outcome.duration,
                    error_type="ToolError",
                    error_message=error_line(outcome.error),
                )
            else:
                self._set(path, duration=outcome.duration)

    def finish(self, elapsed: float | None, error: str | None = None) -> dict[str, Any] | None:
        """Close what is open (a running tool ends where the run did); the tree, None for a run without events."""
        if self.root is None:
            return None
        start = self.root["start"]
        end = start + elapsed if elapsed is not None else self._cursor
        self._close_agent(end)
        for running in self._tools.values():
            for path in running:
                self._set(path, duration=max(0.0, end - self._at(path)["start"]))
        self._tools.clear()
        failed = {"error_type": "RunError", "error_message": error} if error else {}
        self._set((), duration=max(0.0, end - start), **failed)
        return self.root


def trace_of(result: RunResult, agent_name: str) -> dict[str, Any] | None:
    """A run's trace as data: the runner's own when it has one, else folded from its events."""
    if result.trace is not None:
        return result.trace.to_dict()
    live = LiveTrace(agent_name)
    for event in result.events:
        live.add(event)
    return live.finish(None)
