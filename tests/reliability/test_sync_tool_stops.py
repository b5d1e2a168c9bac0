"""A sync tool running on its worker thread when the run is cancelled stops making side effects.

The tool appends a timestamp to a list in a loop (between tiny sleeps, or busy Python work, or
inside an `except Exception` that would swallow an ordinary exception). The run is cancelled
while the tool is under way, with `task.cancel()` on the loop or `runner.cancel()` from another
thread; after a pause, at most one append may carry a time after the cancel (the one under way).
Before the fix the thread ran on to the end of its loop.

The stop is sent only while the thread is inside the cancelled call: runs cancelled at random
moments around the call's end, then plain calls on the same pool threads, must never see it.
(The kernel's interrupt is tried in tests/reliability/test_kernel_interrupts.py.)
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import pytest

from adk_notebook import FunctionCall, InMemorySessionService, LlmAgent, Runner, ScriptedModel, Tool, tool

# seconds between two appends of the ticking tool: more than the cancel takes to reach a thread
# on a loaded 2-core machine (at 0.02 s a busy tool sometimes made a second append on CI-like load)
EVERY = 0.05
TICKS = 60  # appends a call makes when nothing stops it (about 3 s)
SETTLE = 0.4  # seconds to wait after the cancel for appends that should not come


def ticking(log: list[float], work: str) -> Tool:
    """A sync tool that appends `time.monotonic()` to `log` TICKS times, EVERY seconds apart."""

    def pause() -> None:
        if work == "busy":  # pure Python work: nothing blocks in C
            end = time.monotonic() + EVERY
            while time.monotonic() < end:
                sum(range(200))
        else:
            time.sleep(EVERY)

    def tick() -> dict[str, int]:
        """Appends to a list in a loop."""
        for _ in range(TICKS):
            if work == "swallows":
                try:
                    log.append(time.monotonic())
                    pause()
                except Exception:  # noqa: BLE001 - what careless user code does
                    continue
            else:
                log.append(time.monotonic())
                pause()
        return {"ticks": TICKS}

    return tool(tick)


def runner_with(tools: list[Tool], calls: int = 1) -> tuple[Runner, InMemorySessionService]:
    sessions = InMemorySessionService()
    batch = [FunctionCall(t.name, {}) for t in tools for _ in range(calls)]
    agent = LlmAgent(name="a", model=ScriptedModel([batch, "done"]), tools=tools, tool_execution_strategy="parallel")
    return Runner(app_name="a", agent=agent, session_service=sessions), sessions


def spinning(seconds: float) -> Tool:
    """A sync tool that runs Python code for `seconds`, then returns."""

    def short() -> dict[str, bool]:
        """Python work for a moment."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        return {"ok": True}

    return tool(short)


async def until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the run never got under way"
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("work", ["sleeps", "busy", "swallows"])
@pytest.mark.parametrize("how", ["task.cancel", "runner.cancel"])
async def test_a_cancelled_run_stops_its_sync_tool(how: str, work: str, tally: Any) -> None:
    with tally.case(f"interrupts: sync tool stopped by {how} ({work})"):
        log: list[float] = []
        # A parallel batch of three calls: every thread stops. (Not three busy ones: they would
        # hold the GIL so much that the cancel itself takes several appends to reach them.)
        parallel = 3 if how == "runner.cancel" and work != "busy" else 1
        runner, sessions = runner_with([ticking(log, work)], calls=parallel)
        session = await sessions.create(app_name="a", user_id="u")
        task = asyncio.create_task(runner.run_to_result(user_id="u", session_id=session.id, content="go"))
        await until(lambda: len(log) >= 3 * parallel)
        cancelled_at = time.monotonic()
        if how == "task.cancel":
            task.cancel()
        else:
            thread = threading.Thread(target=runner.cancel, kwargs={"user_id": "u", "session_id": session.id})
            thread.start()
            thread.join()
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
        assert isinstance(outcome, asyncio.CancelledError), outcome
        await asyncio.sleep(SETTLE)
        after = [t for t in log if t > cancelled_at]
        assert len(after) <= parallel, (
            f"{len(after)} appends after the cancel ({len(log)} in all, {parallel} thread(s)): the tool ran on"
        )
        stored = await sessions.get(app_name="a", user_id="u", session_id=session.id)
        codes = [r.response.get("code") for e in stored.events for r in e.function_responses()]
        assert codes == ["cancelled"] * parallel, codes


async def test_the_stop_never_reaches_a_thread_after_its_call(tally: Any) -> None:
    """Runs cancelled at random moments around the end of a short sync call; then every later
    call on the pool's threads runs to its end, and no pool thread died of a stray stop."""
    rng = random.Random(20261202)
    died: list[BaseException] = []
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_value) if args.exc_value else None
    try:
        for _ in range(150):
            runner, sessions = runner_with([spinning(rng.uniform(0, 0.003))])
            session = await sessions.create(app_name="a", user_id="u")
            task = asyncio.create_task(runner.run_to_result(user_id="u", session_id=session.id, content="go"))
            await asyncio.sleep(rng.uniform(0, 0.004))
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        completed = 0
        for _ in range(40):  # each call: a few ms of bytecode, where a stray stop would land

            @tool
            def steady() -> dict[str, int]:
                """Counts for a while."""
                total = 0
                for i in range(30_000):
                    total += i
                return {"total": total}

            result = await LlmAgent(
                name="a", model=ScriptedModel([FunctionCall("steady", {}), "done"]), tools=[steady]
            ).run_async("go")
            responses = [r.response for e in result.events for r in e.function_responses()]
            assert responses == [{"total": sum(range(30_000))}], responses
            completed += 1
        await asyncio.sleep(0.1)
        assert not died, f"pool threads died: {died!r}"
    finally:
        threading.excepthook = previous_hook
    tally.record("interrupts: stop sent only inside the cancelled call", 150 + completed, 40 - completed)
