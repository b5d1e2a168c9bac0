"""A cancelled ParallelAgent: every branch stops and no stored call is left unanswered."""

from __future__ import annotations

import asyncio
import contextlib

from adk_notebook import (
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    ParallelAgent,
    Runner,
    ScriptedModel,
    tool,
)

from .helpers import stored

stopped: list[str] = []


def _branch(name: str) -> LlmAgent:
    @tool(name=f"wait_{name}")
    async def wait() -> dict:
        """Wait for a long time."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.append(name)
            raise
        return {"done": True}

    return LlmAgent(
        name=name,
        model=ScriptedModel([FunctionCall(f"wait_{name}", {}), "never"]),
        tools=[wait],
    )


async def test_cancelling_a_parallel_run_answers_every_branch_call() -> None:
    both = ParallelAgent(name="both", sub_agents=[_branch("left"), _branch("right")])
    runner = Runner(app_name="app", agent=both, session_service=InMemorySessionService())
    session = await runner.session_service.create(app_name="app", user_id="u")
    calls_seen = asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for event in runner.run(user_id="u", session_id=session.id, content="go"):
            if not event.partial and event.function_calls():
                seen.append(event.branch)
                if len(seen) == 2:
                    calls_seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(calls_seen.wait(), 5)
    await asyncio.sleep(0.05)  # both tools are running now
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    events = await stored(runner, session.id)
    calls = {c.id: e.branch for e in events for c in e.function_calls()}
    answers = {r.id: r.response for e in events for r in e.function_responses()}
    assert sorted(calls.values()) == ["both.left", "both.right"]
    assert set(answers) == set(calls)
    assert all(a["code"] == "cancelled" for a in answers.values())
    assert sorted(stopped) == [
        "left",
        "right",
    ]  # the branches' tools were stopped, not left running
    # the session is free and consistent: a new run on it starts at once
    assert not runner.cancel(user_id="u", session_id=session.id)


async def test_a_failing_branch_stops_its_siblings_and_the_run_reports_its_error() -> None:
    import pytest

    from adk_notebook import AdkError

    stopped.clear()
    broken = LlmAgent(name="broken", model=ScriptedModel([]))  # its first model call fails
    both = ParallelAgent(name="both", sub_agents=[_branch("steady"), broken])
    runner = Runner(app_name="app", agent=both, session_service=InMemorySessionService())
    session = await runner.session_service.create(app_name="app", user_id="u")
    with pytest.raises(AdkError) as caught:
        async for _ in runner.run(user_id="u", session_id=session.id, content="go"):
            pass
    assert caught.value.code == "script_exhausted"
    await asyncio.sleep(0)
    events = await stored(runner, session.id)
    answered = {r.id for e in events for r in e.function_responses()}
    assert all(c.id in answered for e in events for c in e.function_calls())
