"""Events: everything that happens in a run, in order, as one stream.

A model's streamed chunk, its complete answer, a batch of tool responses, a progress line
from a running tool, an error: each is an `Event`. Sessions store the non-partial ones.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from typing import Any

from .content import Content, FunctionCall, FunctionResponse
from .errors import AdkError

__all__ = ["Event", "EventActions", "ToolOutcome", "ToolProgress", "Usage", "new_id"]


_ID_PREFIX = os.urandom(10).hex()  # 80 random bits per process ...
_ID_COUNTER = itertools.count()  # ... and a counter: unique without a system call per event


def _reseed_ids() -> None:
    global _ID_PREFIX, _ID_COUNTER
    _ID_PREFIX, _ID_COUNTER = os.urandom(10).hex(), itertools.count()


os.register_at_fork(after_in_child=_reseed_ids)  # a forked child must not repeat the parent's ids


def new_id() -> str:
    """A unique id (32 hex digits): cheap enough for one per streamed chunk."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER):012x}"


@dataclass(slots=True)
class Usage:
    """Token counts as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(slots=True)
class EventActions:
    """Side effects an event carries; the session service applies them when it stores the event."""

    state_delta: dict[str, Any] = field(default_factory=dict)
    artifact_delta: dict[str, int] = field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool = False
    skip_summarization: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "state_delta": self.state_delta,
            "artifact_delta": self.artifact_delta,
            "transfer_to_agent": self.transfer_to_agent,
            "escalate": self.escalate,
            "skip_summarization": self.skip_summarization,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventActions:
        return cls(
            dict(data.get("state_delta") or {}),
            dict(data.get("artifact_delta") or {}),
            data.get("transfer_to_agent"),
            bool(data.get("escalate", False)),
            bool(data.get("skip_summarization", False)),
        )


@dataclass(slots=True)
class ToolProgress:
    """One chunk a running tool emitted with `ctx.emit_progress(stream, chunk)`."""

    call_id: str
    tool_name: str
    stream: str
    chunk: str


@dataclass(slots=True)
class ToolOutcome:
    """How one tool call went: what the notebook shows on a tool card and callbacks inspect."""

    call_id: str
    tool_name: str
    args: dict[str, Any]
    success: bool
    duration: float  # seconds
    error: str | None = None
    attempt: int = 1  # 1 for the first try; more when a retry budget ran it again

    def to_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "tool_name": self.tool_name, "args": self.args, "success": self.success,
                "duration": self.duration, "error": self.error, "attempt": self.attempt}


@dataclass(slots=True)
class Event:
    """One step of a run. `author` is "user" or the agent's name."""

    author: str
    content: Content | None = None
    invocation_id: str = ""
    id: str = field(default_factory=new_id)
    timestamp: float = field(default_factory=time.time)
    partial: bool = False
    turn_complete: bool = False
    actions: EventActions = field(default_factory=EventActions)
    long_running_tool_ids: list[str] = field(default_factory=list)
    usage: Usage | None = None
    error: AdkError | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    progress: ToolProgress | None = None
    tool_outcomes: list[ToolOutcome] = field(default_factory=list)
    output: Any = None  # the validated output-schema value on a final answer (not stored)

    @property
    def text(self) -> str:
        return self.content.text if self.content is not None else ""

    def function_calls(self) -> list[FunctionCall]:
        return self.content.function_calls() if self.content is not None else []

    def function_responses(self) -> list[FunctionResponse]:
        return self.content.function_responses() if self.content is not None else []

    def tool_progress_stream(self) -> str | None:
        """The progress stream name when this is a tool-progress event, else None."""
        return self.progress.stream if self.progress is not None else None

    def is_final_response(self) -> bool:
        """True for the event a user would call the answer: complete, and not asking for tools."""
        if self.partial or self.progress is not None:
            return False
        if self.actions.skip_summarization or self.long_running_tool_ids or self.error is not None:
            return True
        return not self.function_calls() and not self.function_responses()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a session stores (progress events are never stored)."""
        data: dict[str, Any] = {
            "id": self.id,
            "invocation_id": self.invocation_id,
            "author": self.author,
            "timestamp": self.timestamp,
            "content": self.content.to_dict() if self.content is not None else None,
            "turn_complete": self.turn_complete,
            "actions": self.actions.to_dict(),
            "long_running_tool_ids": self.long_running_tool_ids,
            "metadata": self.metadata,
        }
        if self.usage is not None:
            data["usage"] = {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens,
                             "total_tokens": self.usage.total_tokens}
        if self.tool_outcomes:
            data["tool_outcomes"] = [o.to_dict() for o in self.tool_outcomes]
        if self.error is not None:
            data["error"] = {"component": self.error.component, **self.error.to_dict()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        usage = data.get("usage")
        error = data.get("error")
        return cls(
            author=data["author"],
            content=Content.from_dict(data["content"]) if data.get("content") else None,
            invocation_id=data.get("invocation_id", ""),
            id=data["id"],
            timestamp=data["timestamp"],
            turn_complete=bool(data.get("turn_complete", False)),
            actions=EventActions.from_dict(data.get("actions") or {}),
            long_running_tool_ids=list(data.get("long_running_tool_ids") or ()),
            usage=Usage(**usage) if usage else None,
            error=AdkError(error["component"], error["category"], error["code"], error["error"]) if error else None,
            metadata=dict(data.get("metadata") or {}),
            tool_outcomes=[ToolOutcome(**o) for o in data.get("tool_outcomes") or ()],
        )
