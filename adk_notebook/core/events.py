"""Events: everything that happens in a run, in order, as one stream.

A model's streamed chunk, its complete answer, a batch of tool responses, a progress line
from a running tool, an error: each is an `Event`. Sessions store the non-partial ones.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from time import time as _now
from typing import Any

from .content import Content, FunctionCall, FunctionResponse
from .errors import AdkError

__all__ = ["Event", "EventActions", "ToolOutcome", "ToolProgress", "Usage", "new_id"]

_new_object = object.__new__

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
    output_tokens: int = 0  # thought tokens included: they are billed as output
    total_tokens: int = 0
    thoughts_tokens: int = 0  # of output_tokens, those spent thinking (when the provider says)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            self.thoughts_tokens + other.thoughts_tokens,
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
    traceback: str | None = None  # where a tool that raised raised: the tool's own frames (the model never sees it)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "args": self.args,
            "success": self.success,
            "duration": self.duration,
            "error": self.error,
            "attempt": self.attempt,
        }
        if self.traceback is not None:
            data["traceback"] = self.traceback
        return data


def _made_on_first_use(slot: str, factory: Callable[[], Any]) -> property:
    """An attribute whose empty value is made when first read, so events that never use it do not pay."""
    read = attrgetter(slot)

    def get(self: Event) -> Any:
        value = read(self)
        if value is None:
            value = factory()
            setattr(self, slot, value)
        return value

    def set(self: Event, value: Any) -> None:
        setattr(self, slot, value)

    return property(get, set)


_MADE_ON_FIRST_USE = frozenset({"actions", "long_running_tool_ids", "metadata", "tool_outcomes"})
_NO_ACTIONS = EventActions()


class Event:
    """One step of a run. `author` is "user" or the agent's name; `branch` the dotted path of the
    parallel branches it ran in ("both.pros"; "" outside any).

    A streamed answer makes one event per chunk, so an event is cheap to make: its id and
    its containers (`actions`, `metadata`, ...) are created when first read.
    """

    __slots__ = (
        "author",
        "branch",
        "content",
        "invocation_id",
        "timestamp",
        "partial",
        "turn_complete",
        "usage",
        "error",
        "progress",
        "output",
        "_id",
        "_actions",
        "_long_running_tool_ids",
        "_metadata",
        "_tool_outcomes",
    )

    def __init__(
        self,
        author: str,
        content: Content | None = None,
        invocation_id: str = "",
        *,
        id: str | None = None,
        timestamp: float | None = None,
        partial: bool = False,
        turn_complete: bool = False,
        actions: EventActions | None = None,
        long_running_tool_ids: list[str] | None = None,
        usage: Usage | None = None,
        error: AdkError | None = None,
        metadata: dict[str, Any] | None = None,
        progress: ToolProgress | None = None,
        tool_outcomes: list[ToolOutcome] | None = None,
        output: Any = None,  # the validated output-schema value on a final answer (not stored)
        branch: str = "",
    ) -> None:
        self.author = author
        self.branch = branch
        self.content = content
        self.invocation_id = invocation_id
        self.timestamp = _now() if timestamp is None else timestamp
        self.partial = partial
        self.turn_complete = turn_complete
        self.usage = usage
        self.error = error
        self.progress = progress
        self.output = output
        self._id = id
        self._actions = actions
        self._long_running_tool_ids = long_running_tool_ids
        self._metadata = metadata
        self._tool_outcomes = tool_outcomes

    @classmethod
    def chunk(
        cls, author: str, content: Content | None, invocation_id: str, progress: ToolProgress | None = None
    ) -> Event:
        """A partial event: a streamed piece of an answer, or a line of tool progress.

        The same as `Event(author, content, invocation_id, partial=True, progress=progress)`,
        made without the keyword handling: a streamed answer makes one per chunk.
        """
        event = _new_object(cls)
        event.author, event.content, event.invocation_id, event.progress = author, content, invocation_id, progress
        event.branch = ""
        event.timestamp, event.partial, event.turn_complete = _now(), True, False
        event.usage = event.error = event.output = event._id = event._actions = None
        event._long_running_tool_ids = event._metadata = event._tool_outcomes = None
        return event

    id: str = _made_on_first_use("_id", new_id)  # type: ignore[assignment]  # a descriptor: reads give this type
    actions: EventActions = _made_on_first_use("_actions", EventActions)  # type: ignore[assignment]  # a descriptor: reads give this type
    long_running_tool_ids: list[str] = _made_on_first_use("_long_running_tool_ids", list)  # type: ignore[assignment]  # a descriptor: reads give this type
    metadata: dict[str, Any] = _made_on_first_use("_metadata", dict)  # type: ignore[assignment]  # a descriptor: reads give this type
    tool_outcomes: list[ToolOutcome] = _made_on_first_use("_tool_outcomes", list)  # type: ignore[assignment]  # a descriptor: reads give this type

    _FIELDS = (
        "author",
        "branch",
        "content",
        "invocation_id",
        "id",
        "timestamp",
        "partial",
        "turn_complete",
        "actions",
        "long_running_tool_ids",
        "usage",
        "error",
        "metadata",
        "progress",
        "tool_outcomes",
        "output",
    )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass

    def __getstate__(self) -> object:
        self.id  # noqa: B018  # draw the id now, so a copy or a pickle keeps the same one
        return object.__getstate__(self)

    def __repr__(self) -> str:
        # Only the fields that say something: a chunk's repr is not a row of empty containers.
        shown = [f"author={self.author!r}", f"id={self.id!r}"]
        for name in self._FIELDS:
            if name in ("author", "id", "timestamp") or (name == "branch" and not self.branch):
                continue
            value = getattr(self, "_" + name if name in _MADE_ON_FIRST_USE else name)
            if value and value != _NO_ACTIONS:
                shown.append(f"{name}={value!r}")
        return f"Event({', '.join(shown)})"

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
        if self.branch:
            data["branch"] = self.branch
        if self.usage is not None:
            data["usage"] = {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "total_tokens": self.usage.total_tokens,
            }
            if self.usage.thoughts_tokens:
                data["usage"]["thoughts_tokens"] = self.usage.thoughts_tokens
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
            branch=data.get("branch") or "",
        )
