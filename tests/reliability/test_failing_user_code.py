"""User code around a tool call that fails in every way: the call is answered, the run goes on.

The user code is a tool, its before/after-tool callbacks or its on_tool_error callback, sync or
async; each raises an Exception, an exception whose `__str__` raises too, or a custom
BaseException subclass. Each case runs one model turn of two calls (the failing one and a
healthy one), with SEQUENTIAL and PARALLEL dispatch, then the model answers "done":
- the run ends with "done" and every call has exactly one response, after its call;
- the failing call's response is `{"error": ...}` naming what failed; the healthy one's is its result.

KeyboardInterrupt and SystemExit keep their meaning: raised by a tool, they end the run and reach
the caller, and the session is left with every call answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from adk_notebook import (
    Event,
    FunctionCall,
    FunctionTool,
    InMemorySessionService,
    LlmAgent,
    ScriptedModel,
    ToolContext,
)


class Unprintable(Exception):
    """An exception whose message cannot be made: str() and repr() raise."""

    def __str__(self) -> str:
        raise RuntimeError("str() of this exception fails")

    def __repr__(self) -> str:
        raise RuntimeError("repr() of this exception fails")


class Custom(BaseException):
    """A BaseException that is not an Exception (as some libraries define for control flow)."""


RAISES: dict[str, Callable[[], BaseException]] = {
    "exception": lambda: ValueError("boom"),
    "unprintable": lambda: Unprintable(),
    "base-exception": lambda: Custom("custom control flow"),
}
WHERE = ["tool-sync", "tool-async", "before_tool", "after_tool", "on_tool_error", "before_tool-async"]


def _maybe_async(fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
    if not is_async:
        return fn

    async def wrapper(*args: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return wrapper


def build(where: str, raises: Callable[[], BaseException], strategy: str) -> tuple[LlmAgent, ScriptedModel]:
    def failing(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        if where.startswith("tool") or where == "on_tool_error":
            raise (raises() if where.startswith("tool") else ValueError("the tool failed"))
        return {"ok": True}

    async def failing_async(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return failing(ctx, args)

    def fine(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        return {"fine": True}

    def hook(*args: Any) -> Any:
        tool = args[1]
        if tool.name == "failing":
            raise raises()
        return None

    callbacks: dict[str, Any] = {}
    name = where.removesuffix("-async")
    if name in ("before_tool", "after_tool"):
        callbacks[f"{name}_callback"] = _maybe_async(hook, where.endswith("-async"))
    elif name == "on_tool_error":
        callbacks["on_tool_error"] = hook
    model = ScriptedModel([[FunctionCall("failing", {}), FunctionCall("fine", {})], "done"])
    tools = [
        FunctionTool("failing", "Fails.", failing_async if where == "tool-async" else failing),
        FunctionTool("fine", "Works.", fine),
    ]
    agent = LlmAgent(name="a", model=model, tools=tools, tool_execution_strategy=strategy, **callbacks)
    return agent, model


def answered_once(events: list[Event]) -> list[str]:
    """Problems with call/response pairing in stored events (empty when every call has one answer)."""
    problems, calls, answered = [], set(), set()
    for event in events:
        calls |= {c.id for c in event.function_calls()}
        for response in event.function_responses():
            if response.id not in calls:
                problems.append(f"response {response.id} before or without its call")
            if response.id in answered:
                problems.append(f"call {response.id} answered twice")
            answered.add(response.id)
    return problems + [f"call {c} never answered" for c in calls - answered]


@pytest.mark.parametrize("strategy", ["sequential", "parallel"])
@pytest.mark.parametrize("raised", list(RAISES))
@pytest.mark.parametrize("where", WHERE)
async def test_failing_user_code_gets_an_error_response_and_the_run_goes_on(
    where: str, raised: str, strategy: str, tally: Any
) -> None:
    with tally.case(f"user code raising around a tool call ({where}, {raised})"):
        agent, model = build(where, RAISES[raised], strategy)
        sessions = InMemorySessionService()
        result = await agent.run_async("go", session_service=sessions, session_id="s")
        assert result.text == "done"
        stored = await sessions.get(app_name="a", user_id="user", session_id="s")
        assert answered_once(stored.events) == []
        responses = {r.name: r.response for e in stored.events for r in e.function_responses()}
        assert responses["fine"] == {"fine": True}
        error = responses["failing"].get("error")
        assert isinstance(error, str) and error, responses["failing"]
        culprit = {"exception": "ValueError", "unprintable": "Unprintable", "base-exception": "Custom"}[raised]
        assert culprit in error, f"the error does not say what failed: {error!r}"
        if where.removesuffix("-async") in ("before_tool", "after_tool", "on_tool_error"):
            assert where.removesuffix("-async") in error, f"the error does not name the callback: {error!r}"
        sent = model.requests[-1].contents[-1]
        assert {r.name for r in sent.function_responses()} == {"failing", "fine"}, "the model heard both answers"


@pytest.mark.parametrize("strategy", ["sequential", "parallel"])
@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_end_the_run_with_every_call_answered(
    exc_type: type[BaseException], strategy: str, tally: Any
) -> None:
    with tally.case(f"tool raising {exc_type.__name__}: reaches the caller, every call answered"):
        agent, _ = build("tool-sync", exc_type, strategy)
        sessions = InMemorySessionService()
        with pytest.raises(exc_type):
            agent.run("go", session_service=sessions, session_id="s")
        stored = asyncio.run(sessions.get(app_name="a", user_id="user", session_id="s"))
        assert [c.name for e in stored.events for c in e.function_calls()] == ["failing", "fine"]
        assert answered_once(stored.events) == []
        # And the session goes on.
        again = LlmAgent(name="a", model=ScriptedModel(["again"]))
        assert again.run("again?", session_service=sessions, session_id="s").text == "again"
