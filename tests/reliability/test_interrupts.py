"""Interrupts: a run cancelled at any point leaves its session consistent, and the next run works.

200 runs per session service (in memory, SQLite) are cancelled at seeded random points:
while the model streams (a tiny `Llm` that awaits between chunks), while each tool of a
PARALLEL batch runs, while a SEQUENTIAL batch runs, while a tool is retried (RetryBudget with
a delay), while sync tools run on worker threads, between model turns. Half are cancelled with
`task.cancel()` on the loop, half with `runner.cancel(...)` from another thread. Consumers
vary too: a plain `async for`, `aclosing(...)` with an await between events (what a UI that
sends each event somewhere does), `run_to_result`, and a new task per step (`anext`).

After each cancel the stored session must be consistent:
- every function call has exactly one response with the same id, stored after it;
- no partial event (streamed chunk, tool progress) was stored, no event id repeats;
- the state equals the initial state plus the fold of the stored events' deltas, scope by
  scope (for SQLite also read straight from its tables), and has no `temp:` key;
and the NEXT run on the same session must end with the expected text and leave it consistent.

A run whose consumer walks away is closed at once, though a variable still holds the stream:
a cancel that lands in the consumer's own await, a failure or a `break` inside `async for`
(at random points of every scenario, too). `runner.cancel()` reaches a run whichever task steps
it, and closes one nobody steps. A consumer that steps by hand (`anext`) and fails leaves the
stream open, as Python does: the next run takes the session over and answers the abandoned
run's call "interrupted", and closing the abandoned stream later, while the next run is in a
tool, leaves that run's call alone.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    FunctionTool,
    InMemorySessionService,
    Llm,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    Part,
    RetryBudget,
    Runner,
    Session,
    SqliteSessionService,
    ToolContext,
)
from adk_notebook.models.scripted import to_response

RUNS_PER_SERVICE = 200
SEED = 20261129
USER = "u"
LONG_TEXT = " ".join(f"word{i}" for i in range(30))
RECOVERED = "recovered after the cancel"


# -- a model that streams slowly ---------------------------------------------------------------
class SlowStreamingModel(Llm):
    """Streams each answer word by word, with an await before every chunk, like a provider.

    `plan[turn]` is the answer to the `turn`-th model call of an invocation (turn = the number of
    tool responses since the last user message); the answer to "again" is always RECOVERED.
    """

    def __init__(self, plan: list[Any], delay: float) -> None:
        self.plan = plan
        self.delay = delay
        self.name = "slow-stream"
        self.requests: list[LlmRequest] = []
        self.full_texts = {RECOVERED} | {t for item in plan if (t := to_response(_fresh(item)).content.text)}

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        self.requests.append(request)
        last_user = max(i for i, c in enumerate(request.contents) if c.role == "user" and c.text)
        if request.contents[last_user].text == "again":
            item: Any = RECOVERED
        else:
            turn = sum(1 for c in request.contents[last_user + 1 :] if c.role == "tool")
            item = self.plan[turn]
        response = to_response(_fresh(item))
        if stream and response.content is not None:
            for part in response.content.parts:
                for word in (part.text or "").split(" "):
                    if word:
                        await asyncio.sleep(self.delay)
                        yield LlmResponse(Content("model", [Part(text=word + " ")]), partial=True, turn_complete=False)
        await asyncio.sleep(self.delay)
        yield response


def _fresh(item: Any) -> Any:
    """A copy of a plan item with new FunctionCall objects (the agent writes ids into them)."""
    if isinstance(item, FunctionCall):
        return FunctionCall(item.name, dict(item.args))
    if isinstance(item, Part) and item.function_call is not None:
        return Part(function_call=_fresh(item.function_call))
    if isinstance(item, list):
        return [_fresh(i) for i in item]
    return item


# -- tools that write state, report progress, sleep, fail ----------------------------------------
@dataclass
class Probe:
    """Where a run is, so a cancel can be aimed: tool starts and events seen."""

    started: list[str] = field(default_factory=list)
    attempts: int = 0
    trigger: Callable[[str], None] = lambda point: None


def make_tools(probe: Probe, rng: random.Random) -> list[FunctionTool]:
    async def work(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        n = args["n"]
        probe.started.append(f"tool{n}")
        probe.trigger(f"tool{n}")
        ctx.state[f"tool{n}"] = n
        ctx.state["user:last_tool"] = n
        ctx.state["app:calls"] = ctx.state.get("app:calls", 0) + 1
        ctx.state["temp:scratch"] = n
        for step in range(3):
            await ctx.emit_progress("status", f"tool{n} step {step}")
            await asyncio.sleep(args["sleep"] / 3)
        return {"n": n}

    def blocking(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        n = args["n"]
        probe.started.append(f"sync{n}")
        probe.trigger(f"sync{n}")
        ctx.state[f"sync{n}"] = n
        ctx.emit_progress("stdout", f"sync{n} working")
        time.sleep(args["sleep"])
        return {"n": n}

    async def flaky(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        probe.attempts += 1
        probe.trigger(f"attempt{probe.attempts}")
        ctx.state["flaky_attempts"] = probe.attempts
        await asyncio.sleep(args["sleep"])
        if probe.attempts <= args["fail"]:
            raise RuntimeError(f"transient failure {probe.attempts}")
        return {"attempts": probe.attempts}

    return [
        FunctionTool("work", "Async work.", work),
        FunctionTool("blocking", "Blocking work.", blocking),
        FunctionTool("flaky", "Fails, then works.", flaky),
    ]


# -- scenarios ---------------------------------------------------------------------------------
@dataclass
class Scenario:
    kind: str
    plan: list[Any]
    strategy: str = "sequential"
    points: list[str] = field(default_factory=list)  # where a cancel may be aimed


def make_scenario(kind: str, rng: random.Random) -> Scenario:
    sleep = lambda: round(rng.uniform(0.002, 0.01), 4)  # noqa: E731
    if kind == "stream":
        return Scenario(kind, [LONG_TEXT], points=[f"event{i}" for i in range(1, 30)])
    if kind in ("parallel", "sequential"):
        k = rng.randint(2, 5)
        calls = [FunctionCall("work", {"n": i, "sleep": sleep()}) for i in range(k)]
        return Scenario(kind, [calls, "batch done"], strategy=kind, points=[f"tool{i}" for i in range(k)])
    if kind == "retries":
        fail = rng.randint(1, 3)
        calls = [FunctionCall("flaky", {"fail": fail, "sleep": sleep()})]
        return Scenario(kind, [calls, "retried"], points=[f"attempt{i}" for i in range(1, fail + 2)])
    if kind == "sync":
        k = rng.randint(2, 4)
        calls = [FunctionCall("blocking", {"n": i, "sleep": sleep()}) for i in range(k)]
        return Scenario(kind, [calls, "threads done"], strategy="parallel", points=[f"sync{i}" for i in range(k)])
    if kind == "turns":  # three model turns, streamed text between them
        plan = [
            [Part(text="first I look "), Part(function_call=FunctionCall("work", {"n": 0, "sleep": sleep()}))],
            [FunctionCall("work", {"n": 1, "sleep": sleep()}), FunctionCall("work", {"n": 2, "sleep": sleep()})],
            "three turns done",
        ]
        return Scenario(
            kind, plan, strategy="parallel", points=["tool0", "tool1", "tool2"] + [f"event{i}" for i in range(1, 9)]
        )
    raise AssertionError(kind)


KINDS = ["stream", "parallel", "sequential", "retries", "sync", "turns"]


# -- consistency -------------------------------------------------------------------------------
def check_consistent(session: Session, initial: dict[str, Any], full_texts: set[str]) -> int:
    """Assert the stored session is consistent; returns the number of problems found (0)."""
    events = session.events
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids)), "duplicate event ids"
    calls: dict[str, int] = {}
    answered: dict[str, int] = {}
    for index, event in enumerate(events):
        assert not event.partial and event.progress is None, "a partial event was stored"
        assert event.content is not None and event.content.parts, f"an empty event was stored: {event}"
        if event.author != "user" and event.text:
            assert event.text in full_texts, f"a streamed chunk was stored as an answer: {event.text!r}"
        for call in event.function_calls():
            assert call.id and call.id not in calls, f"call id {call.id} missing or repeated"
            calls[call.id] = index
        for response in event.function_responses():
            assert response.id not in answered, f"call {response.id} answered twice"
            assert response.id in calls and calls[response.id] < index, (
                f"response {response.id} without its call before it"
            )
            answered[response.id] = index
    assert set(calls) == set(answered), f"calls without a response: {set(calls) - set(answered)}"
    folded = dict(initial)
    for event in events:
        folded.update(event.actions.state_delta)
    assert not any(k.startswith("temp:") for k in session.state), session.state
    assert session.state == folded, f"state {session.state} is not the fold of its events {folded}"
    return 0


def check_sqlite_tables(path: str, app: str, session_id: str, initial: dict[str, Any]) -> None:
    """The scoped state rows themselves equal the fold of the stored deltas of each scope."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT data FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? ORDER BY seq",
            (app, USER, session_id),
        ).fetchall()
        own = json.loads(
            conn.execute(
                "SELECT state FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?", (app, USER, session_id)
            ).fetchone()[0]
        )
        app_row = conn.execute("SELECT state FROM app_states WHERE app_name = ?", (app,)).fetchone()
        user_row = conn.execute(
            "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?", (app, USER)
        ).fetchone()
    scopes: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    deltas = [initial] + [json.loads(data)["actions"]["state_delta"] for (data,) in rows]
    for delta in deltas:
        for key, value in delta.items():
            assert not key.startswith("temp:"), "a temp: key reached the file"
            scopes["app" if key.startswith("app:") else "user" if key.startswith("user:") else "session"][key] = value
    assert own == scopes["session"]
    assert (json.loads(app_row[0]) if app_row else {}) == scopes["app"]
    assert (json.loads(user_row[0]) if user_row else {}) == scopes["user"]


# -- one interrupted run -----------------------------------------------------------------------
@dataclass
class Outcome:
    landed: int = 0
    finished_first: int = 0
    calls_cancelled: int = 0  # runs whose stored calls got the "cancelled" answer
    checked: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


async def interrupted_run(i: int, rng: random.Random, service: Any, sqlite_path: str | None, outcome: Outcome) -> None:
    kind = KINDS[i % len(KINDS)]
    scenario = make_scenario(kind, rng)
    app = f"app{i}"
    probe = Probe()
    model = SlowStreamingModel(scenario.plan, delay=rng.uniform(0.0002, 0.002))
    agent = LlmAgent(
        name="agent",
        model=model,
        tools=make_tools(probe, rng),
        tool_execution_strategy=scenario.strategy,
        tool_retry_budgets={"flaky": RetryBudget(max_retries=3, delay=rng.uniform(0.001, 0.005))},
        output_key="answer",
    )
    runner = Runner(app_name=app, agent=agent, session_service=service)
    initial = {"init": i, "user:seen": True, "app:version": 1}
    session = await service.create(app_name=app, user_id=USER, state=initial)
    target = rng.choice(scenario.points)
    how = rng.choice(["task", "thread"])
    consumer = rng.choice(["plain", "aclosing", "result", "tasks"])
    extra_delay = rng.choice([0.0, 0.0, rng.uniform(0, 0.004)])
    loop = asyncio.get_running_loop()
    fired = threading.Event()
    task: asyncio.Task[Any] | None = None

    def cancel_now() -> None:
        if how == "task":
            if extra_delay:
                loop.call_later(extra_delay, task.cancel)
            else:
                task.cancel()
        else:
            fired.set()

    def trigger(point: str) -> None:
        if point == target and not fired.is_set():
            if how == "task":
                fired.set()
            # from a worker thread (sync tools) the loop must do it
            if threading.current_thread() is threading.main_thread():
                cancel_now()
            else:
                loop.call_soon_threadsafe(cancel_now)

    probe.trigger = trigger

    def canceller() -> None:
        if fired.wait(5):
            time.sleep(extra_delay)
            runner.cancel(user_id=USER, session_id=session.id)

    async def consume() -> None:
        seen = 0
        if consumer == "result":
            await runner.run_to_result(user_id=USER, session_id=session.id, content="go")
            return
        stream = runner.run(user_id=USER, session_id=session.id, content="go")
        if consumer == "plain":
            async for _event in stream:
                seen += 1
                trigger(f"event{seen}")
        elif consumer == "tasks":  # a new task steps the stream each time, as a UI pulling events may
            # aclosing: a cancel landing between two steps cancels this consumer, not the run,
            # which would otherwise stay paused (and its session claimed) while the stream is held.
            async with aclosing(stream):
                while True:
                    try:
                        await asyncio.ensure_future(anext(stream))
                    except StopAsyncIteration:
                        return
                    seen += 1
                    trigger(f"event{seen}")
        else:
            async with aclosing(stream):
                async for _event in stream:
                    seen += 1
                    trigger(f"event{seen}")
                    await asyncio.sleep(0)  # e.g. sending the event to a front end

    if consumer == "result" and target.startswith("event"):
        target = rng.choice([p for p in scenario.points if not p.startswith("event")] or ["time"])
    thread = threading.Thread(target=canceller, daemon=True) if how == "thread" else None
    if thread is not None:
        thread.start()
    task = asyncio.create_task(consume())
    if target == "time":  # no tool to aim at: a random moment
        loop.call_later(rng.uniform(0, 0.03), trigger, "time")
    try:
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done, f"{kind}/{how}/{consumer}@{target}: the run hung"
    finally:
        fired.set()  # release a canceller that never fired
        if thread is not None:
            thread.join(5)
    if task.cancelled():
        outcome.landed += 1
        outcome.by_kind[kind] = outcome.by_kind.get(kind, 0) + 1
    else:
        task.result()  # a run that ended otherwise must have ended well
        outcome.finished_first += 1

    stored = await service.get(app_name=app, user_id=USER, session_id=session.id)
    check_consistent(stored, initial, model.full_texts)
    if sqlite_path is not None:
        check_sqlite_tables(sqlite_path, app, session.id, initial)
    if any(r.response.get("code") == "cancelled" for e in stored.events for r in e.function_responses()):
        outcome.calls_cancelled += 1
    # the next run on the same session works and ends with the expected text
    result = await runner.run_to_result(user_id=USER, session_id=session.id, content="again")
    assert result.text == RECOVERED, f"{kind}/{how}/{consumer}@{target}: next run ended with {result.text!r}"
    stored = await service.get(app_name=app, user_id=USER, session_id=session.id)
    check_consistent(stored, initial, model.full_texts)
    if sqlite_path is not None:
        check_sqlite_tables(sqlite_path, app, session.id, initial)
    assert stored.state["answer"] == RECOVERED
    outcome.checked += 1


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_cancel_at_random_points_keeps_the_session_consistent(backend: str, tmp_path: Any, tally: Any) -> None:
    rng = random.Random(f"{SEED}-{backend}")
    outcome = Outcome()
    path = str(tmp_path / "sessions.db") if backend == "sqlite" else None
    service = SqliteSessionService(path) if path else InMemorySessionService()
    started = time.perf_counter()
    tried = 0
    try:
        with asyncio.Runner() as loop:
            while outcome.landed < RUNS_PER_SERVICE and tried < 2 * RUNS_PER_SERVICE:
                loop.run(interrupted_run(tried, rng, service, path, outcome))
                tried += 1
    finally:
        if isinstance(service, SqliteSessionService):
            service.close()
        tally.record(
            f"cancel at random points ({backend})",
            tried,
            tried - outcome.checked,
            f"{outcome.landed} cancels landed mid-run, {outcome.finished_first} runs finished before the "
            f"cancel, {outcome.calls_cancelled} with stored calls answered 'cancelled'; landed by kind {dict(sorted(outcome.by_kind.items()))}; {time.perf_counter() - started:.1f}s",
        )
    assert outcome.landed == RUNS_PER_SERVICE


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_break_at_random_points_frees_the_session(backend: str, tmp_path: Any, tally: Any) -> None:
    """`break` out of `async for` at a random event of every scenario, the stream still held: the
    stored session is consistent at once, and the next message on it is not refused."""
    rng = random.Random(f"{SEED}-break-{backend}")
    path = str(tmp_path / "sessions.db") if backend == "sqlite" else None
    service = SqliteSessionService(path) if path else InMemorySessionService()
    tried = lost = 0

    async def one(i: int) -> None:
        scenario = make_scenario(KINDS[i % len(KINDS)], rng)
        model = SlowStreamingModel(scenario.plan, delay=0)
        agent = LlmAgent(
            name="agent",
            model=model,
            tools=make_tools(Probe(), rng),
            tool_execution_strategy=scenario.strategy,
            tool_retry_budgets={"flaky": RetryBudget(max_retries=3)},
        )
        runner = Runner(app_name=f"b{i}", agent=agent, session_service=service)
        session = await service.create(app_name=f"b{i}", user_id=USER)
        held = runner.run(user_id=USER, session_id=session.id, content="go")
        stop_at = rng.randint(1, 12)
        seen = 0
        async for _ in held:
            seen += 1
            if seen == stop_at:
                break
        for _ in range(50):  # the close the break started gets its turns (the next message would wait for it)
            await asyncio.sleep(0)
        stored = await service.get(app_name=f"b{i}", user_id=USER, session_id=session.id)
        check_consistent(stored, {}, model.full_texts)
        assert (await runner.run_to_result(user_id=USER, session_id=session.id, content="again")).text == RECOVERED
        check_consistent(await service.get(app_name=f"b{i}", user_id=USER, session_id=session.id), {}, model.full_texts)
        assert open_claims(path) == []

    try:
        with asyncio.Runner() as loop:
            for i in range(60):
                tried += 1
                try:
                    loop.run(one(i))
                except BaseException:
                    lost += 1
                    raise
    finally:
        if isinstance(service, SqliteSessionService):
            service.close()
        tally.record(f"break out of async for at random points, stream held ({backend})", tried, lost)


async def test_one_runner_refuses_a_second_run_while_cancelling(tally: Any) -> None:
    """While a run is in progress its session is busy; right after a cancel it is free again."""
    gate = asyncio.Event()

    async def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        gate.set()
        await asyncio.sleep(10)
        return {}

    sessions = InMemorySessionService()
    model = SlowStreamingModel([[FunctionCall("wait", {})], "never"], delay=0)
    runner = Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=model, tools=[FunctionTool("wait", "Wait.", wait)]),
        session_service=sessions,
    )
    session = await sessions.create(app_name="a", user_id=USER)
    task = asyncio.create_task(runner.run_to_result(user_id=USER, session_id=session.id, content="go"))
    await asyncio.wait_for(gate.wait(), 5)
    with pytest.raises(AdkError) as busy:
        await runner.run_to_result(user_id=USER, session_id=session.id, content="again")
    assert busy.value.code == "session_busy"
    assert runner.cancel(user_id=USER, session_id=session.id)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await runner.run_to_result(user_id=USER, session_id=session.id, content="again")).text == RECOVERED
    tally.record("second run on a busy session (one Runner)", 1, 0)


# -- a cancel in the consumer's own await, without aclosing --------------------------------------
@dataclass
class Abandoned:
    runner: Runner
    service: Any
    model: SlowStreamingModel
    session: Session
    stream: Any  # the abandoned `runner.run(...)` generator, still referenced
    path: str | None


async def abandon_a_run(backend: str, tmp_path: Any, ending: str, stepping: str = "async for") -> Abandoned:
    """Start a run whose consumer ends (`ending`: "cancelled" or "failed") while it awaits something
    of its own after the function call event (no aclosing); the stream stays referenced, as a
    notebook global or a UI object would hold it. The consumer steps it with `async for`, or by
    hand with `anext()` (`stepping="anext"`)."""
    path = str(tmp_path / "sessions.db") if backend == "sqlite" else None
    service = SqliteSessionService(path) if path else InMemorySessionService()
    model = SlowStreamingModel([[FunctionCall("work", {"n": 0, "sleep": 0.001})], "done"], delay=0)
    runner = Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=model, tools=make_tools(Probe(), random.Random(0))),
        session_service=service,
    )
    session = await service.create(app_name="a", user_id=USER)
    stream = runner.run(user_id=USER, session_id=session.id, content="go")
    shown = asyncio.Event()
    sending: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def consume() -> None:
        if stepping == "anext":
            while not (await anext(stream)).function_calls():
                pass
            shown.set()
            await sending
            return
        async for event in stream:
            if event.function_calls():
                shown.set()
                await sending  # e.g. sending the event over a websocket

    task = asyncio.create_task(consume())
    await asyncio.wait_for(shown.wait(), 5)
    if ending == "cancelled":
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        sending.set_exception(ConnectionError("the websocket closed"))
        with pytest.raises(ConnectionError):
            await task
    return Abandoned(runner, service, model, session, stream, path)


def open_claims(path: str | None) -> list[tuple[Any, ...]]:
    if path is None:
        return []
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT session_id, run_id, pid FROM session_runs").fetchall()


def call_codes(contents: list[Content]) -> dict[str, Any]:
    return {r.id: r.response.get("code") for content in contents for r in content.function_responses()}


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_a_consumer_failing_in_its_own_await_then_the_next_run_recovers(
    backend: str, tmp_path: Any, tally: Any
) -> None:
    """A consumer that steps the stream by hand and fails (rather than being cancelled) leaves it
    open, as Python does: the next run takes over the session (the task that held it is gone),
    answers its call "interrupted" before the model call, and ends well; closing the old stream
    adds nothing."""
    with tally.case(f"consumer fails in its own await (anext, no aclosing): next run recovers ({backend})"):
        run = await abandon_a_run(backend, tmp_path, "failed", stepping="anext")
        sid = run.session.id
        stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        (call,) = [c for e in stored.events for c in e.function_calls()]
        result = await run.runner.run_to_result(user_id=USER, session_id=sid, content="again")  # not refused
        assert result.text == RECOVERED
        assert call_codes(run.model.requests[-1].contents) == {call.id: "interrupted"}
        initial: dict[str, Any] = {}
        stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        check_consistent(stored, initial, run.model.full_texts)
        await run.stream.aclose()  # what the asyncgen finalizer does once the stream is dropped
        after = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        assert [e.id for e in after.events] == [e.id for e in stored.events], "closing the old stream wrote again"
        assert open_claims(run.path) == []
        if run.path is not None:
            check_sqlite_tables(run.path, "a", sid, initial)
            run.service.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_a_consumer_failing_inside_async_for_closes_the_run(backend: str, tmp_path: Any, tally: Any) -> None:
    """The failure leaves the `async for`: the run is closed at once (its call answered
    "cancelled", its claim released), though a variable still holds the stream."""
    with tally.case(f"consumer fails inside async for (no aclosing): run closed at once ({backend})"):
        run = await abandon_a_run(backend, tmp_path, "failed")
        sid = run.session.id
        for _ in range(20):
            await asyncio.sleep(0)
        stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        assert set(call_codes([e.content for e in stored.events if e.content]).values()) == {"cancelled"}
        assert open_claims(run.path) == []
        result = await run.runner.run_to_result(user_id=USER, session_id=sid, content="again")
        assert result.text == RECOVERED
        check_consistent(await run.service.get(app_name="a", user_id=USER, session_id=sid), {}, run.model.full_texts)
        if run.path is not None:
            run.service.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_cancel_in_the_consumers_own_await_closes_the_run(backend: str, tmp_path: Any, tally: Any) -> None:
    """The cancel lands in the consumer's await, not in the stream, which a variable still holds:
    the run is closed anyway, its call answered "cancelled" and its claim released (in the file
    too, where another process would otherwise find the session busy while this kernel lives)."""
    with tally.case(f"cancel in the consumer's own await (no aclosing): run closed at once ({backend})"):
        run = await abandon_a_run(backend, tmp_path, "cancelled")
        sid = run.session.id

        async def answered() -> bool:
            stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
            calls = {c.id for e in stored.events for c in e.function_calls()}
            return bool(calls) and calls == set(call_codes([e.content for e in stored.events if e.content]))

        deadline = time.monotonic() + 5
        while not (await answered() and open_claims(run.path) == []) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        assert set(call_codes([e.content for e in stored.events if e.content]).values()) == {"cancelled"}
        assert open_claims(run.path) == []
        with pytest.raises(StopAsyncIteration):  # the stream is closed: nothing more comes from it
            await anext(run.stream)
        result = await run.runner.run_to_result(user_id=USER, session_id=sid, content="again")
        assert result.text == RECOVERED
        assert "interrupted" not in call_codes(run.model.requests[-1].contents).values()
        stored = await run.service.get(app_name="a", user_id=USER, session_id=sid)
        check_consistent(stored, {}, run.model.full_texts)
        if run.path is not None:
            check_sqlite_tables(run.path, "a", sid, {})
            run.service.close()


async def test_a_stream_dropped_after_a_break_is_closed_without_the_garbage_collector(tally: Any) -> None:
    """Breaking out of `async for` and dropping the stream closes the run as soon as the last
    reference goes (Python's async-generator finalizer), with the cycle collector off: nothing
    the runner keeps may hold the stream in a reference cycle."""
    with tally.case("stream dropped after a break (cycle collector off): run closed at once"):
        sessions = InMemorySessionService()
        model = SlowStreamingModel([[FunctionCall("work", {"n": 0, "sleep": 0.001})], "done"], delay=0)
        runner = Runner(
            app_name="a",
            agent=LlmAgent(name="a", model=model, tools=make_tools(Probe(), random.Random(0))),
            session_service=sessions,
        )
        session = await sessions.create(app_name="a", user_id=USER)
        gc.disable()
        try:
            stream = runner.run(user_id=USER, session_id=session.id, content="go")
            async for event in stream:
                if event.function_calls():
                    break
            del stream, event
            for _ in range(20):  # the finalizer schedules aclose() on the loop
                await asyncio.sleep(0)
            stored = await sessions.get(app_name="a", user_id=USER, session_id=session.id)
            assert set(call_codes([e.content for e in stored.events if e.content]).values()) == {"cancelled"}
            result = await runner.run_to_result(user_id=USER, session_id=session.id, content="again")  # not busy
        finally:
            gc.enable()
        assert result.text == RECOVERED


async def test_closing_an_abandoned_stream_late_leaves_the_next_run_alone(tally: Any) -> None:
    with tally.case("abandoned stream closed during the next run"):
        gate = asyncio.Event()

        async def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
            gate.set()
            await asyncio.sleep(0.1)
            return {"waited": True}

        sessions = InMemorySessionService()
        model = SlowStreamingModel([[FunctionCall("wait", {})], "done"], delay=0)
        runner = Runner(
            app_name="a",
            agent=LlmAgent(name="a", model=model, tools=[FunctionTool("wait", "Wait.", wait)]),
            session_service=sessions,
        )
        session = await sessions.create(app_name="a", user_id=USER)
        stream = runner.run(user_id=USER, session_id=session.id, content="go")

        async def consume() -> None:
            async for event in stream:
                if event.function_calls():
                    await asyncio.sleep(10)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(_until(lambda: model.requests), 5)
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.clear()
        second = asyncio.create_task(runner.run_to_result(user_id=USER, session_id=session.id, content="go"))
        await asyncio.wait_for(gate.wait(), 5)  # the next run is inside its tool
        await stream.aclose()
        assert (await second).text == "done"
        stored = await sessions.get(app_name="a", user_id=USER, session_id=session.id)
        check_consistent(stored, {}, model.full_texts)


async def _until(condition: Callable[[], Any]) -> None:
    while not condition():
        await asyncio.sleep(0.001)


# -- runner.cancel() whoever steps the stream; a break out of `async for` on a held stream ----------
def _sleeper_runner(seconds: float) -> tuple[Runner, InMemorySessionService, SlowStreamingModel, asyncio.Event]:
    started = asyncio.Event()

    async def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(seconds)
        return {"waited": seconds}

    sessions = InMemorySessionService()
    model = SlowStreamingModel([[FunctionCall("wait", {})], "done"], delay=0)
    runner = Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=model, tools=[FunctionTool("wait", "Wait.", wait)]),
        session_service=sessions,
    )
    return runner, sessions, model, started


@pytest.mark.parametrize("from_thread", [False, True], ids=["same-loop", "other-thread"])
async def test_cancel_reaches_a_run_stepped_from_other_tasks(from_thread: bool, tally: Any) -> None:
    """The stream is stepped from a new task each time (as the docstring allows): cancel() stops
    the run inside its tool at once, whichever task steps it, and the session is free again."""
    with tally.case(f"runner.cancel() on a stream stepped from other tasks ({'thread' if from_thread else 'loop'})"):
        runner, sessions, model, started = _sleeper_runner(30)
        session = await sessions.create(app_name="a", user_id=USER)
        stream = runner.run(user_id=USER, session_id=session.id, content="go")

        async def consume() -> None:
            while True:
                try:
                    await asyncio.ensure_future(anext(stream))  # one task per step
                except StopAsyncIteration:
                    return

        consumer = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 5)
        begun = time.monotonic()
        if from_thread:
            result: list[bool] = []
            thread = threading.Thread(target=lambda: result.append(runner.cancel(user_id=USER, session_id=session.id)))
            thread.start()
            thread.join()
            assert result == [True]
        else:
            assert runner.cancel(user_id=USER, session_id=session.id)
        done, _ = await asyncio.wait({consumer}, timeout=5)
        assert done and time.monotonic() - begun < 2, "cancel() did not stop the run"
        stored = await sessions.get(app_name="a", user_id=USER, session_id=session.id)
        assert set(call_codes([e.content for e in stored.events if e.content]).values()) == {"cancelled"}
        assert (await runner.run_to_result(user_id=USER, session_id=session.id, content="again")).text == RECOVERED
        check_consistent(await sessions.get(app_name="a", user_id=USER, session_id=session.id), {}, model.full_texts)


async def test_cancel_closes_a_held_stream_that_nobody_steps(tally: Any) -> None:
    """The consumer holds the stream and awaits something of its own: cancel() closes the run (its
    call answered "cancelled"), the consumer's task is left alone, and its next step ends the stream."""
    with tally.case("runner.cancel() on a held stream between two steps"):
        runner, sessions, _, _ = _sleeper_runner(0.01)
        session = await sessions.create(app_name="a", user_id=USER)
        stream = runner.run(user_id=USER, session_id=session.id, content="go")
        while not (await anext(stream)).function_calls():  # stepped by hand: no `async for` to end
            pass
        assert runner.cancel(user_id=USER, session_id=session.id)

        async def answered() -> bool:
            stored = await sessions.get(app_name="a", user_id=USER, session_id=session.id)
            return set(call_codes([e.content for e in stored.events if e.content]).values()) == {"cancelled"}

        deadline = time.monotonic() + 5
        while not await answered():
            assert time.monotonic() < deadline, "cancel() did not close the held stream"
            await asyncio.sleep(0.005)
        with pytest.raises(StopAsyncIteration):
            await anext(stream)
        assert (await runner.run_to_result(user_id=USER, session_id=session.id, content="again")).text == RECOVERED


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_a_break_out_of_async_for_on_a_held_stream_frees_the_session(
    backend: str, tmp_path: Any, tally: Any
) -> None:
    """`async for` over a stream a variable still holds (a notebook global), then `break` on the
    function call event: the next message is not refused, and the model sees every call answered."""
    with tally.case(f"break out of async for on a held stream: next message works ({backend})"):
        path = str(tmp_path / "sessions.db") if backend == "sqlite" else None
        service = SqliteSessionService(path) if path else InMemorySessionService()
        model = SlowStreamingModel([[FunctionCall("work", {"n": 0, "sleep": 0.001})], "done"], delay=0)
        runner = Runner(
            app_name="a",
            agent=LlmAgent(name="a", model=model, tools=make_tools(Probe(), random.Random(0))),
            session_service=service,
        )
        session = await service.create(app_name="a", user_id=USER)
        held = runner.run(user_id=USER, session_id=session.id, content="go")
        async for event in held:
            if event.function_calls():
                break
        result = await runner.run_to_result(user_id=USER, session_id=session.id, content="again")
        assert result.text == RECOVERED
        sent = model.requests[-1].contents
        calls = {c.id for content in sent for c in content.function_calls()}
        assert calls and calls == set(call_codes(sent)), "a call went to the model unanswered"
        stored = await service.get(app_name="a", user_id=USER, session_id=session.id)
        check_consistent(stored, {}, model.full_texts)
        assert open_claims(path) == []
        if isinstance(service, SqliteSessionService):
            service.close()
        assert held is not None
