"""The conversation an LLM agent sends its model: the session's events as that agent sees them.

In a parallel branch ("both.pros") the agent sees the history up to the fork and its own
branch's events, never a sibling's. Another agent's turns come as context from the user
("For context: [research] said: ..."), as google-adk does: the model did not say them, and a
provider refuses calls to tools it was never given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..core.content import Content, Part
from ..core.events import Event

__all__ = ["conversation", "in_branch"]


def in_branch(event_branch: str, branch: str) -> bool:
    """Whether an event of `event_branch` is visible from `branch` (its own, an ancestor's, or no branch)."""
    return not branch or not event_branch or branch == event_branch or branch.startswith(event_branch + ".")


def conversation(events: Iterable[Event], agent_name: str, branch: str) -> list[Content]:
    contents = []
    for event in events:
        content = event.content
        if content is None or not content.parts or event.error is not None:
            continue
        if not in_branch(event.branch, branch):
            continue
        if event.author not in ("user", agent_name) and content.role != "user":
            content = _as_context(event.author, content)
            if content is None:
                continue
        contents.append(content)
    return contents


def _as_context(author: str, content: Content) -> Content | None:
    parts = []
    for part in content.parts:
        if part.thought:
            continue
        if part.text is not None:
            parts.append(Part(text=f"[{author}] said: {part.text}"))
        elif part.function_call is not None:
            call = part.function_call
            parts.append(Part(text=f"[{author}] called tool `{call.name}` with parameters: {_json(call.args)}"))
        elif part.function_response is not None:
            response = part.function_response
            parts.append(Part(text=f"[{author}] `{response.name}` tool returned result: {_json(response.response)}"))
        else:
            parts.append(part)
    if not parts:
        return None
    return Content("user", [Part(text="For context:"), *parts])


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
