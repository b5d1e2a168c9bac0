"""Running the tool calls of one model turn and collecting their responses.

A tool never crashes the loop: an unknown name, arguments its schema rejects, an exception,
each becomes `{"error": ...}` in the function response, and the model carries on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..core.content import Content, FunctionCall, FunctionResponse, Part
from ..core.context import InvocationContext, ToolContext
from ..core.errors import AdkError
from ..core.events import Event, EventActions, ToolOutcome
from ..tools.base import Tool
from ..tools.responses import to_response_dict

__all__ = ["run_tool_calls"]


async def run_tool_calls(
    invocation: InvocationContext, tools: Mapping[str, Tool], calls: list[FunctionCall]
) -> Event:
    """Run `calls` in order and return one event holding every response, in the model's order."""
    actions = EventActions()
    parts: list[Part] = []
    outcomes: list[ToolOutcome] = []
    long_running: list[str] = []
    for call in calls:
        started = time.perf_counter()
        response = await _run_one(invocation, tools, call, actions)
        error = response.get("error") if "error" in response else None
        outcomes.append(
            ToolOutcome(call.id or "", call.name, call.args, error is None, time.perf_counter() - started,
                        None if error is None else str(error))
        )
        parts.append(Part(function_response=FunctionResponse(call.name, response, call.id)))
        tool = tools.get(call.name)
        if tool is not None and tool.is_long_running and call.id is not None:
            long_running.append(call.id)
    return Event(
        author=invocation.agent.name,
        invocation_id=invocation.invocation_id,
        content=Content("tool", parts),
        actions=actions,
        long_running_tool_ids=long_running,
        tool_outcomes=outcomes,
    )


async def _run_one(
    invocation: InvocationContext, tools: Mapping[str, Tool], call: FunctionCall, actions: EventActions
) -> dict[str, Any]:
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return {"error": f"Unknown tool {call.name!r}. Available tools: {available}.", "code": "unknown_tool"}
    try:
        args = tool.validate_args(call.args)
    except ValueError as exc:
        detail = exc.message if isinstance(exc, AdkError) else str(exc)
        return {"error": f"Invalid arguments for tool {call.name!r}: {detail}", "code": "invalid_arguments"}
    ctx = ToolContext(invocation, call.id or "", call.name, actions)
    try:
        result = await tool.execute(ctx, args)
    except AdkError as exc:
        return exc.to_dict()
    except Exception as exc:  # noqa: BLE001 - the model hears about it; the run goes on
        return {"error": f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", "code": "tool_exception"}
    return to_response_dict(call.name, result)
