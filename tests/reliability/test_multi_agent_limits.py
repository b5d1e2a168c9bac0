"""Multi-agent limits: a run's limits hold for the whole run, whatever shape its agents take.

- `RunConfig(max_llm_calls=)` counts every model call of the run (loops, transfers, agents used
  as tools, nested), as google-adk counts them per invocation: N calls are made, the next is
  refused with AdkError ``max_llm_calls_exceeded``.
- An agent that reaches itself through `AgentTool` stops at the run's `time_limit` and at a
  cancel, and the session keeps every call answered; the calls nest at most `MAX_DEPTH` deep.
- Agents that hand the conversation to each other for ever stop at `RunConfig(max_transfers=)`
  with AdkError ``max_transfers_exceeded``, never RecursionError: a transfer does not nest.
- MapAgent's work per item does not grow with the number of items: counted as the Python calls
  a run makes (exact and repeatable, where wall time on a shared machine is not).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    Agent,
    AgentTool,
    Event,
    FunctionCall,
    FunctionModel,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    LoopAgent,
    MapAgent,
    ParallelAgent,
    RunConfig,
    Runner,
    SequentialAgent,
    tool,
)
from adk_notebook.agents.agent_tool import MAX_DEPTH

FAMILY = "multi-agent limits"
RUNAWAY = 40  # a model asked more often than this means a limit did not hold
SLACK = 1.5  # seconds: these machines are shared


class Counted:
    """One model shared by every agent of a test: it answers with `answer(request)` and counts the calls."""

    def __init__(self, answer: Callable[[LlmRequest], Any]) -> None:
        self.calls = 0
        self.model = FunctionModel(self._answer, name="counted")
        self._reply = answer

    def _answer(self, request: LlmRequest) -> Any:
        self.calls += 1
        if self.calls > RUNAWAY:
            return AssertionError(f"the model was called {self.calls} times: no limit stopped the run")
        return self._reply(request)


def _transfer(to: str) -> Any:
    return FunctionCall("transfer_to_agent", {"agent_name": to})


def _ping_pong_answer(request: LlmRequest) -> Any:
    """desk's model hands over to billing, billing's back to desk (each sees where it may go)."""
    return _transfer("billing" if "billing:" in request.tools[0].description else "desk")


def _ask_helper(request: LlmRequest) -> Any:
    """The lead asks its `helper` tool; the helper (offered no tools) answers."""
    if any(d.name == "helper" for d in request.tools):
        return FunctionCall("helper", {"request": "more"})
    return "a fact"


def loop() -> tuple[Counted, Agent]:
    counted = Counted(lambda request: "again")
    return counted, LoopAgent(name="refine", sub_agents=[LlmAgent(name="critic", model=counted.model)])


def transfers() -> tuple[Counted, Agent]:
    counted = Counted(_ping_pong_answer)
    billing = LlmAgent(name="billing", model=counted.model)
    return counted, LlmAgent(name="desk", model=counted.model, sub_agents=[billing])


def agent_tool() -> tuple[Counted, Agent]:
    counted = Counted(_ask_helper)
    helper = LlmAgent(name="helper", model=counted.model)
    return counted, LlmAgent(name="lead", model=counted.model, tools=[AgentTool(helper)])


def parallel() -> tuple[Counted, Agent]:
    counted = Counted(lambda request: "an opinion")
    return counted, ParallelAgent(
        name="panel", sub_agents=[LlmAgent(name=f"p{i}", model=counted.model) for i in range(5)]
    )


def nested() -> tuple[Counted, Agent]:
    """A loop around a pipeline whose first agent asks another agent as a tool."""
    counted = Counted(_ask_helper)
    helper = LlmAgent(name="helper", model=counted.model)
    lead = LlmAgent(name="lead", model=counted.model, tools=[AgentTool(helper)])
    closer = LlmAgent(name="closer", model=counted.model)
    return counted, LoopAgent(name="outer", sub_agents=[SequentialAgent(name="pipeline", sub_agents=[lead, closer])])


SHAPES = {"loop": loop, "transfers": transfers, "agent tool": agent_tool, "parallel": parallel, "nested": nested}


async def _run(agent: Agent, **config: Any) -> tuple[Runner, str, list[Event]]:
    """Run `agent` once on "go"; the runner, the session id and the events it streamed (it may raise)."""
    runner = Runner(app_name="app", agent=agent, session_service=InMemorySessionService())
    session = await runner.session_service.create(app_name="app", user_id="u")
    events: list[Event] = []
    async for event in runner.run(user_id="u", session_id=session.id, content="go", run_config=RunConfig(**config)):
        events.append(event)
    return runner, session.id, events


async def _unanswered(runner: Runner, session_id: str) -> list[str]:
    """The stored function calls without a stored response: a consistent session has none."""
    session = await runner.session_service.get(app_name="app", user_id="u", session_id=session_id)
    assert session is not None
    answered = {r.id for e in session.events for r in e.function_responses()}
    return [c.name for e in session.events for c in e.function_calls() if c.id not in answered]


# -- max_llm_calls is the run's ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_max_llm_calls_limits_the_whole_run(shape: str, tally: Any) -> None:
    counted, agent = SHAPES[shape]()
    with tally.case(f"{FAMILY}: max_llm_calls=3 over a {shape}"):
        with pytest.raises(AdkError) as caught:
            await _run(agent, max_llm_calls=3)
        assert counted.calls == 3, f"{counted.calls} model calls were made under max_llm_calls=3"
        error = caught.value
        assert (error.component, error.code) == ("agent", "max_llm_calls_exceeded"), repr(error)
        assert "max_llm_calls=3" in error.message


async def test_a_run_within_max_llm_calls_ends_normally() -> None:
    lead_answers = iter([FunctionCall("helper", {"request": "more"}), "done"])
    helper = LlmAgent(name="helper", model=FunctionModel(lambda request: "a fact"))
    lead = LlmAgent(name="lead", model=FunctionModel(lambda request: next(lead_answers)), tools=[AgentTool(helper)])
    _, _, events = await _run(lead, max_llm_calls=3)  # lead, helper, lead: exactly the limit
    assert _steps(events)[-1] == ("lead", "done")


# -- an agent that reaches itself through AgentTool ------------------------------------------------


def _self_tool() -> Agent:
    """`echo` has itself as a tool, and its model always calls it."""
    echo = LlmAgent(name="echo", model=_asks("echo"))
    echo.tools.append(AgentTool(echo))
    return echo


def _asks(other: str) -> FunctionModel:
    return FunctionModel(lambda request: FunctionCall(other, {"request": "again"}))


def _round_trip() -> Agent:
    """`ping` asks `pong` as a tool, which asks `ping`, and so on."""
    ping = LlmAgent(name="ping", model=_asks("pong"))
    pong = LlmAgent(name="pong", model=_asks("ping"), tools=[AgentTool(ping)])
    ping.tools.append(AgentTool(pong))
    return ping


RECURSIONS = {"A has AgentTool(A)": _self_tool, "A -> AgentTool(B) -> AgentTool(A)": _round_trip}


@pytest.mark.parametrize("shape", list(RECURSIONS))
async def test_a_recursive_agent_tool_stops_at_the_run_time_limit(shape: str, tally: Any) -> None:
    limit = 1.0
    with tally.case(f"{FAMILY}: {shape} under time_limit"):
        started = time.perf_counter()
        runner = Runner(app_name="app", agent=RECURSIONS[shape](), session_service=InMemorySessionService())
        session = await runner.session_service.create(app_name="app", user_id="u")
        with pytest.raises(AdkError) as caught:
            async for _ in runner.run(
                user_id="u", session_id=session.id, content="go", run_config=RunConfig(time_limit=limit)
            ):
                pass
        took = time.perf_counter() - started
        assert (caught.value.category.value, caught.value.code) == ("timeout", "run_time_limit"), repr(caught.value)
        assert took < limit + SLACK, f"the run took {took:.2f} s under time_limit={limit}"
        assert await _unanswered(runner, session.id) == []


@pytest.mark.parametrize("shape", list(RECURSIONS))
async def test_a_recursive_agent_tool_stops_at_cancel(shape: str, tally: Any) -> None:
    with tally.case(f"{FAMILY}: {shape} cancelled"):
        runner = Runner(app_name="app", agent=RECURSIONS[shape](), session_service=InMemorySessionService())
        session = await runner.session_service.create(app_name="app", user_id="u")

        async def consume() -> None:
            async for _ in runner.run(user_id="u", session_id=session.id, content="go"):
                pass

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.5)
        assert not task.done(), task  # still recursing
        started = time.perf_counter()
        assert runner.cancel(user_id="u", session_id=session.id)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, SLACK)
        took = time.perf_counter() - started
        assert task.cancelled(), task
        assert took < SLACK, f"the run took {took:.2f} s to stop after cancel"
        assert await _unanswered(runner, session.id) == []
        assert not runner.cancel(user_id="u", session_id=session.id)  # the session is free again


async def test_agent_tool_calls_nest_at_most_max_depth_and_the_model_hears_why(tally: Any) -> None:
    asked = 0

    def answer(request: LlmRequest) -> Any:
        """Ask itself once per level; then answer with what it heard (the refusal, passed up)."""
        nonlocal asked
        heard = request.contents[-1].parts[0].function_response
        if heard is not None:
            return heard.response.get("result") or f"stopped: {heard.response['error']}"
        asked += 1
        return FunctionCall("echo", {"request": "again"})

    echo = LlmAgent(name="echo", model=FunctionModel(answer))
    echo.tools.append(AgentTool(echo))
    with tally.case(f"{FAMILY}: A has AgentTool(A), no limits set"):
        runner, session_id, events = await asyncio.wait_for(_run(echo), 30)
        assert asked == MAX_DEPTH + 1  # the root's call, then one per level; the last is refused
        final = _steps(events)[-1][1]
        assert final.startswith("stopped: ") and f"nested {MAX_DEPTH} deep" in final, final
        assert await _unanswered(runner, session_id) == []


# -- endless transfers -------------------------------------------------------------------------------


def _ping_pong(depths: list[int] | None = None, rounds: int | None = None) -> Agent:
    """desk and billing hand the conversation to each other (for ever, or until `rounds` model
    calls were made, then the one asked answers); `depths` gets the stack's depth at each call."""

    def answer(request: LlmRequest) -> Any:
        if depths is not None:
            depths.append(_stack_depth())
        if rounds is not None and len(model.requests) >= rounds:
            return "done"
        return _ping_pong_answer(request)

    model = FunctionModel(answer)
    return LlmAgent(name="desk", model=model, sub_agents=[LlmAgent(name="billing", model=model)])


def _stack_depth() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


async def test_endless_transfers_end_with_a_clear_error(tally: Any) -> None:
    with tally.case(f"{FAMILY}: endless transfers, default RunConfig"):
        runner = Runner(app_name="app", agent=_ping_pong(), session_service=InMemorySessionService())
        session = await runner.session_service.create(app_name="app", user_id="u")
        transferred = 0
        with pytest.raises(AdkError) as caught:
            async for event in runner.run(user_id="u", session_id=session.id, content="go"):
                transferred += not event.partial and event.actions.transfer_to_agent is not None
        error = caught.value
        assert (error.component, error.code) == ("agent", "max_transfers_exceeded"), repr(error)
        limit = RunConfig().max_transfers
        assert f"max_transfers={limit}" in error.message and "'billing'" in error.message
        assert transferred == limit + 1  # the transfer past the limit is stored, answered, and refused
        assert await _unanswered(runner, session.id) == []


async def test_a_transfer_does_not_deepen_the_stack(tally: Any) -> None:
    depths: list[int] = []
    with tally.case(f"{FAMILY}: 80 transfers, stack depth"):
        _, _, events = await _run(_ping_pong(depths, rounds=81))
        assert _steps(events)[-1] == ("desk", "done") and len(depths) == 81
        # desk runs the chain; billing and desk again run inside it, one level down, however often
        assert max(depths[1:]) == max(depths[1:3]), f"the stack grew from {depths[1]} to {max(depths)} frames"


async def test_a_transfer_back_runs_the_agent_at_once_and_its_answer_ends_the_run() -> None:
    answers = iter([_transfer("billing"), _transfer("desk"), "desk again"])
    model = FunctionModel(lambda request: next(answers))
    desk = LlmAgent(name="desk", model=model, sub_agents=[LlmAgent(name="billing", model=model)])
    _, _, events = await _run(desk)
    assert _steps(events) == [("desk", "-> billing"), ("billing", "-> desk"), ("desk", "desk again")]


def _steps(events: list[Event]) -> list[tuple[str, str]]:
    """(author, what it did) of each stored answer and transfer."""
    steps = []
    for event in events:
        if event.partial or event.author == "user":
            continue
        if event.actions.transfer_to_agent is not None:
            steps.append((event.author, f"-> {event.actions.transfer_to_agent}"))
        elif event.text:
            steps.append((event.author, event.text))
    return steps


# -- MapAgent scales linearly ------------------------------------------------------------------------


@tool
async def lookup(query: str) -> dict:
    """Look something up.

    Args:
        query: What to look up.
    """
    return {"found": query}


def _look_then_summarize(request: LlmRequest) -> Any:
    if request.contents[-1].role == "tool":
        return "a short summary"
    return FunctionCall("lookup", {"query": "x"})


async def _python_calls_of_a_map(items: int, max_concurrency: int | None) -> int:
    """The Python function calls one MapAgent run over `items` items makes (each item: a tool call, then an answer)."""
    worker = LlmAgent(
        name="worker", model=FunctionModel(_look_then_summarize), instruction="Summarize {temp:item}.", tools=[lookup]
    )
    each = MapAgent(name="each", sub_agent=worker, items_key="docs", output_key="out", max_concurrency=max_concurrency)
    runner = Runner(app_name="app", agent=each, session_service=InMemorySessionService())
    session = await runner.session_service.create(app_name="app", user_id="u", state={"docs": list(range(items))})
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        async for _ in runner.run(user_id="u", session_id=session.id, content="go"):
            pass
    finally:
        sys.setprofile(None)
    stored = await runner.session_service.get(app_name="app", user_id="u", session_id=session.id)
    assert stored is not None and stored.state["out"] == ["a short summary"] * items
    return calls


@pytest.mark.parametrize("max_concurrency", [None, 4])
def test_a_map_of_4x_the_items_does_4x_the_work(max_concurrency: int | None, tally: Any) -> None:
    with tally.case(f"{FAMILY}: MapAgent 100 vs 400 items, max_concurrency={max_concurrency}"):
        small = _python_calls_in_a_fresh_process(100, max_concurrency)
        large = _python_calls_in_a_fresh_process(400, max_concurrency)
        # linear: 4x, plus a little; each model call reading every sibling's events made it ~7x
        assert large / small < 4.5, f"100 items: {small} calls, 400 items: {large} calls ({large / small:.1f}x)"


def _python_calls_in_a_fresh_process(items: int, max_concurrency: int | None) -> int:
    """`_python_calls_of_a_map` in a process of its own: the profile hook counts only this run's
    calls (after tests/reliability/test_interrupts.py in the same process it never returned)."""
    code = (
        "import asyncio, sys; sys.path.insert(0, sys.argv[1]); "
        "from test_multi_agent_limits import _python_calls_of_a_map as count; "
        "print(asyncio.run(count(int(sys.argv[2]), None if sys.argv[3] == 'None' else int(sys.argv[3]))))"
    )
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", code, here, str(items), str(max_concurrency)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(here).parent), os.environ.get("PYTHONPATH", "")])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])
