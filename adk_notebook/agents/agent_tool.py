"""AgentTool: an agent the model calls like a tool.

    lead = LlmAgent(name="lead", model=m, tools=[AgentTool(research)])

The call runs `research` as a child invocation in a session of its own that starts from the
parent's state and the call's `request`. Its state and artifact deltas reach the parent (they
are stored with the function response); its events stream live to the parent run as partial
events marked `metadata["parent_call_id"]`, so a view can show them inside the tool card, but
the parent session stores only the function response: `{"result": <the child's answer>}`.

An agent may reach itself this way (A has AgentTool(A), or A -> B -> A): each call nests one
level deeper, so calls nest at most `MAX_DEPTH` levels; a call past it is refused with an error
response the model reads (``agent_tool_too_deep``). Unbounded, a recursion outran a cancel (it
unwinds the levels one by one while the deepest added more) and its trace overflowed the stack.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.content import Content
from ..core.errors import AdkError
from ..core.events import Event
from ..core.session import Session
from ..core.state import TEMP_PREFIX
from ..tools.base import Tool
from .base import Agent

if TYPE_CHECKING:
    from ..core.context import ToolContext

__all__ = ["MAX_DEPTH", "AgentTool"]

MAX_DEPTH = 16  # AgentTool calls inside AgentTool calls: far more than a design needs, well below the stack's limit


class AgentTool(Tool):
    """Wraps `agent` as a tool named after it, described by its description.

    Args:
        agent: The agent to run per call (it keeps no parent: an agent may be a tool of several).
        skip_summarization: End the caller's turn with the child's answer instead of a model summary.
    """

    def __init__(self, agent: Agent, *, skip_summarization: bool = False) -> None:
        self.agent = agent
        self.name = agent.name
        self.description = agent.description or f"Ask the agent {agent.name!r}."
        self.skip_summarization = skip_summarization

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "request": {
                    "type": "string",
                    "description": f"What to ask {self.agent.name}.",
                }
            },
            "required": ["request"],
        }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        parent = ctx.invocation
        if parent.agent_tool_depth >= MAX_DEPTH:
            raise AdkError.tool(
                f"Agent {self.agent.name!r} was not asked: agents used as tools are already nested {MAX_DEPTH} deep "
                f"(at most {MAX_DEPTH}), so an agent keeps reaching itself through AgentTool. Answer without "
                f"calling {self.name!r}.",
                code="agent_tool_too_deep",
                category="invalid_input",
            )
        request = Content.user(args["request"])
        state = {k: v for k, v in parent.session.state.items() if not k.startswith(TEMP_PREFIX)}
        session = Session(parent.session.id, parent.session.app_name, parent.session.user_id, state)
        # Its trace nests under this call; its model calls count against the run's limits (the
        # budget is shared); transfers inside it are its own (no chain of the caller's runs it).
        child = replace(
            parent,
            session=session,
            user_content=request,
            span=ctx.span,
            handoff=None,
            agent_tool_depth=parent.agent_tool_depth + 1,
        )
        session.events.append(Event("user", request, child.invocation_id))
        answer: Any = None
        async with aclosing(self.agent.invoke(child)) as events:
            async for event in events:
                if not event.partial:
                    _store(session, event, ctx)
                    if event.is_final_response() and event.content is not None:
                        answer = event.output if event.output is not None else event.text
                ctx.forward(_nested(event, ctx.function_call_id))
        if self.skip_summarization:
            ctx.actions.skip_summarization = True
        return {"result": answer}


def _store(session: Session, event: Event, ctx: ToolContext) -> None:
    """Keep a child's event in its own session, and hand its deltas to the parent's call."""
    session.events.append(event)
    delta = event.actions.state_delta
    if delta:
        session.state.update(delta)
        for key, value in delta.items():
            if not key.startswith(TEMP_PREFIX):
                ctx.state[key] = value
    ctx.actions.artifact_delta.update(event.actions.artifact_delta)


def _nested(event: Event, call_id: str) -> Event:
    """The child's event as the parent run streams it: partial (never stored), under its call."""
    return Event(
        event.author,
        event.content,
        event.invocation_id,
        partial=True,
        branch=event.branch,
        progress=event.progress,
        usage=event.usage,
        metadata={**event.metadata, "parent_call_id": call_id},
        actions=replace(event.actions),
    )
