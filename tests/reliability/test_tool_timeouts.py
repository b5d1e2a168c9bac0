"""Tool timeouts: a call past its limit is answered `{"error": ...}` naming the limit, the run goes on.

Limits come from `@tool(timeout=...)`, `FunctionTool(..., timeout=...)`, or the agent's
`tool_timeout` for tools without their own (custom Tool subclasses too). A sync function cannot
be stopped: its thread runs on until the function returns, its result and anything it writes
after its call ended (state, progress) are dropped, and a tool with too many such threads still
running is refused at once instead of starting another one, so they cannot pile up unnoticed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from adk_notebook import (
    FunctionCall,
    FunctionModel,
    FunctionTool,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    ScriptedModel,
    Tool,
    ToolContext,
    tool,
)
from adk_notebook.tools.threads import MAX_LEFT_RUNNING


def calls_then_done(name: str, times: int) -> FunctionModel:
    def answer(request: LlmRequest) -> Any:
        done = sum(1 for c in request.contents if c.role == "tool")
        return FunctionCall(name, {}) if done < times else "done"

    return FunctionModel(answer)


def responses(result: Any) -> list[dict[str, Any]]:
    return [r.response for e in result.events for r in e.function_responses()]


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("where", ["decorator", "function_tool", "agent_default", "subclass"])
def test_a_call_past_its_timeout_is_an_error_naming_the_limit(kind: str, where: str, tally: Any) -> None:
    with tally.case(f"tool timeout ({where}, {kind})"):

        def blocking() -> dict[str, Any]:
            time.sleep(3)
            return {"late": True}

        async def waiting() -> dict[str, Any]:
            await asyncio.sleep(3)
            return {"late": True}

        fn = blocking if kind == "sync" else waiting
        agent_timeout = None
        if where == "decorator":
            made: Tool = tool(timeout=0.2)(fn)
        elif where == "function_tool":

            async def handler(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
                return await waiting()

            made = FunctionTool(
                "slow", "Slow.", (lambda ctx, args: blocking()) if kind == "sync" else handler, timeout=0.2
            )
        elif where == "agent_default":
            made, agent_timeout = tool(fn), 0.2
        else:

            class Slow(Tool):
                name = fn.__name__

                async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
                    return await (asyncio.to_thread(blocking) if kind == "sync" else waiting())

            made, agent_timeout = Slow(), 0.2
        agent = LlmAgent(
            name="a",
            model=ScriptedModel([FunctionCall(made.name, {}), "done"]),
            tools=[made],
            tool_timeout=agent_timeout,
        )
        started = time.monotonic()
        result = agent.run("go")
        elapsed = time.monotonic() - started
        assert result.text == "done"
        assert elapsed < 2, f"the run waited {elapsed:.1f} s for a tool with a 0.2 s timeout"
        (response,) = responses(result)
        assert response["code"] == "tool_timeout" and response["category"] == "timeout"
        assert "0.2 s" in response["error"] and made.name in response["error"], response


def test_the_tools_own_timeout_wins_over_the_agents() -> None:
    @tool(timeout=2)
    async def patient() -> dict[str, Any]:
        """Takes a while."""
        await asyncio.sleep(0.3)
        return {"ok": True}

    agent = LlmAgent(
        name="a", model=ScriptedModel([FunctionCall("patient", {}), "done"]), tools=[patient], tool_timeout=0.05
    )
    assert responses(agent.run("go")) == [{"ok": True}]


def test_timed_out_threads_do_not_pile_up(tally: Any) -> None:
    """A sync tool that hangs, called again and again: only MAX_LEFT_RUNNING threads are left running;
    later calls are refused at once, saying why; once the threads return, the tool works again."""
    release = threading.Event()
    inside = {"now": 0, "most": 0}
    lock = threading.Lock()

    @tool(timeout=0.05)
    def hang() -> dict[str, Any]:
        """Hangs until released."""
        with lock:
            inside["now"] += 1
            inside["most"] = max(inside["most"], inside["now"])
        release.wait(30)
        with lock:
            inside["now"] -= 1
        return {"released": True}

    calls = MAX_LEFT_RUNNING + 4
    agent = LlmAgent(name="a", model=calls_then_done("hang", calls), tools=[hang])
    try:
        started = time.monotonic()
        result = agent.run("go")
        elapsed = time.monotonic() - started
        codes = [r["code"] for r in responses(result)]
        assert codes == ["tool_timeout"] * MAX_LEFT_RUNNING + ["tool_still_running"] * 4, codes
        refusal = responses(result)[-1]["error"]
        assert f"{MAX_LEFT_RUNNING} earlier calls" in refusal and "still running" in refusal, refusal
        assert inside["most"] == MAX_LEFT_RUNNING, f"{inside['most']} threads were left running"
        assert elapsed < 0.05 * MAX_LEFT_RUNNING + 2
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while inside["now"] and time.monotonic() < deadline:
        time.sleep(0.01)
    again = LlmAgent(name="a", model=calls_then_done("hang", 1), tools=[hang]).run("go")
    assert responses(again) == [{"released": True}], "the tool did not work again once its threads returned"
    tally.record(
        "timed-out sync threads left running (bounded)",
        calls,
        0,
        f"{MAX_LEFT_RUNNING} left running, {calls - MAX_LEFT_RUNNING} refused",
    )


async def test_what_a_timed_out_thread_does_later_is_dropped(tally: Any) -> None:
    """The thread of a timed-out call writes state and progress when it wakes: neither reaches the
    session or the stream, and the stored state is still the fold of the stored events' deltas."""
    with tally.case("timed-out sync tool writing state later: dropped"):
        woke = threading.Event()

        @tool(timeout=0.05)
        def late(ctx: ToolContext) -> dict[str, Any]:
            """Writes state after its call timed out."""
            ctx.state["before"] = 1
            time.sleep(0.3)
            ctx.state["late"] = 1
            ctx.emit_progress("stdout", "too late")
            woke.set()
            return {"late": True}

        @tool
        async def wait_a_bit() -> dict[str, Any]:
            """Keeps the next batch open while the late thread wakes."""
            await asyncio.to_thread(woke.wait, 5)
            await asyncio.sleep(0.05)
            return {"waited": True}

        model = ScriptedModel([FunctionCall("late", {}), FunctionCall("wait_a_bit", {}), "done"])
        sessions = InMemorySessionService()
        agent = LlmAgent(name="a", model=model, tools=[late, wait_a_bit])
        result = await agent.run_async("go", session_service=sessions, session_id="s")
        assert result.text == "done" and woke.is_set()
        assert not [e for e in result.events if e.progress is not None and "too late" in e.progress.chunk]
        stored = await sessions.get(app_name="a", user_id="user", session_id="s")
        folded: dict[str, Any] = {}
        for event in stored.events:
            folded.update(event.actions.state_delta)
        assert "late" not in stored.state and "late" not in folded
        assert stored.state == folded
