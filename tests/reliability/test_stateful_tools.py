"""StatefulTool runs one call at a time: across threads, event loops, and runs that are cancelled.

Each handler counts how many calls are inside it at once. Four threads each run `agent.run()`
(one private event loop per call) with PARALLEL batches of the same tool; then, in one loop,
a run is cancelled while its sync handler is still inside and a second run calls the tool at
once; a call cancelled while it waits for its turn must not keep the next one out either.
A call is "overlapped" (lost) when it entered the handler while another was still inside.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from adk_notebook import FunctionCall, FunctionModel, LlmAgent, LlmRequest, Runner, StatefulTool, ToolContext

THREADS = 4
TURNS = 5
CALLS_PER_TURN = 2


class Inside:
    """Counts the calls inside a handler; `overlapped` those that found another one there."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.calls = 0
        self.overlapped = 0
        self.finished = 0

    def enter(self) -> None:
        with self.lock:
            self.calls += 1
            if self.now:
                self.overlapped += 1
            self.now += 1

    def leave(self) -> None:
        with self.lock:
            self.now -= 1
            self.finished += 1


def counting_tool(kind: str, seconds: float = 0.002) -> tuple[StatefulTool[dict[str, Any]], Inside]:
    inside = Inside()

    def sync_handler(state: dict[str, Any], ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        inside.enter()
        try:
            seen = state["count"]
            time.sleep(args.get("seconds", seconds))
            state["count"] = seen + 1
        finally:
            inside.leave()
        return {"count": state["count"]}

    async def async_handler(state: dict[str, Any], ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        inside.enter()
        try:
            seen = state["count"]
            await asyncio.sleep(args.get("seconds", seconds))
            state["count"] = seen + 1
        finally:
            inside.leave()
        return {"count": state["count"]}

    handler = sync_handler if kind == "sync" else async_handler
    return StatefulTool("bump", "Add one to the counter.", {"count": 0}, handler), inside


def batches_then_answer(turns: int, per_turn: int, args: dict[str, Any] | None = None) -> FunctionModel:
    def answer(request: LlmRequest) -> Any:
        last_user = max(i for i, c in enumerate(request.contents) if c.role == "user")
        done = sum(1 for c in request.contents[last_user + 1 :] if c.role == "tool")
        if done >= turns:
            return "done"
        return [FunctionCall("bump", dict(args or {})) for _ in range(per_turn)]

    return FunctionModel(answer)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_calls_from_several_threads_run_one_at_a_time(kind: str, tally: Any) -> None:
    tool, inside = counting_tool(kind)
    agent = LlmAgent(
        name="a", model=batches_then_answer(TURNS, CALLS_PER_TURN), tools=[tool], tool_execution_strategy="parallel"
    )
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            assert agent.run("go").text == "done"
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    tally.record(
        f"StatefulTool from {THREADS} threads' agent.run() ({kind} handler)",
        inside.calls,
        inside.overlapped + (THREADS * TURNS * CALLS_PER_TURN - inside.finished),
    )
    assert not failures, failures
    assert inside.calls == THREADS * TURNS * CALLS_PER_TURN
    assert inside.overlapped == 0, f"{inside.overlapped} of {inside.calls} calls ran while another was inside"
    assert tool.state["count"] == inside.calls, "a read-modify-write of the state was lost"


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_cancelled_run_keeps_the_tool_until_its_handler_returns(kind: str, tally: Any) -> None:
    """Run A is cancelled while its handler is inside; run B calls the tool at once and must wait
    until A's handler has returned (a sync handler's thread runs on). Run C, cancelled while it
    waits for its turn behind B, must neither run its handler nor leave the tool locked for D."""
    with tally.case(f"StatefulTool: run cancelled inside its {kind} handler, next run waits for it"):
        tool, inside = counting_tool(kind)
        agent = LlmAgent(name="a", model=batches_then_answer(1, 1, {"seconds": 0.3}), tools=[tool])
        runner = Runner(app_name="a", agent=agent)

        async def start(user: str) -> asyncio.Task[Any]:
            session = await runner.session_service.create(app_name="a", user_id=user)
            return asyncio.create_task(runner.run_to_result(user_id=user, session_id=session.id, content="go"))

        async def until(condition: Any) -> None:
            while not condition():
                await asyncio.sleep(0.002)

        first = await start("A")
        await asyncio.wait_for(until(lambda: inside.now == 1), 5)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        second = await start("B")
        await asyncio.wait_for(until(lambda: inside.calls == 2), 5)  # B is inside
        waiting = await start("C")
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (await asyncio.wait_for(second, 10)).text == "done"
        last = await start("D")
        assert (await asyncio.wait_for(last, 10)).text == "done", "the tool stayed locked after C's cancel"
        assert inside.overlapped == 0, "a call entered the handler while the cancelled run's call was still inside"
        assert inside.calls == 3, f"{inside.calls} handler calls, expected A's, B's and D's (C must not run)"
