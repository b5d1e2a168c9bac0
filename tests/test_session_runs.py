"""One run at a time per session, across services and processes; dangling calls repaired."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys

import pytest
from claimant import CLAIMANT, start_with_pid

from adk_notebook import (
    AdkError,
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    Runner,
    ScriptedModel,
    SqliteSessionService,
    tool,
)
from adk_notebook.sessions.leases import _started_from_proc, _started_from_ps


def agent_waiting_on(gate: asyncio.Event) -> LlmAgent:
    @tool
    async def wait() -> dict:
        """Wait for the gate."""
        await gate.wait()
        return {"waited": True}

    return LlmAgent(name="a", model=ScriptedModel([FunctionCall("wait", {}), "done"] * 3), tools=[wait])


async def test_two_services_on_one_file_cannot_run_one_session_at_once(tmp_path) -> None:
    path = tmp_path / "s.db"
    gate = asyncio.Event()
    with SqliteSessionService(path) as first_service, SqliteSessionService(path) as second_service:
        session = await first_service.create(app_name="a", user_id="u")
        first = Runner(app_name="a", agent=agent_waiting_on(gate), session_service=first_service)
        second = Runner(app_name="a", agent=agent_waiting_on(gate), session_service=second_service)
        running = asyncio.create_task(first.run_to_result(user_id="u", session_id=session.id, content="1"))
        await asyncio.sleep(0.1)
        with pytest.raises(AdkError) as caught:
            await second.run_to_result(user_id="u", session_id=session.id, content="2")
        assert caught.value.code == "session_busy"
        gate.set()
        assert (await running).text == "done"
        assert (await second.run_to_result(user_id="u", session_id=session.id, content="3")).text == "done"
        stored = await second_service.get(app_name="a", user_id="u", session_id=session.id)
        assert [e.content.text for e in stored.events if e.author == "user"] == ["1", "3"], (
            "the refused run wrote nothing"
        )


async def test_a_claim_left_by_a_dead_process_is_taken_over(tmp_path) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionService(path) as service:
        session = await service.create(app_name="a", user_id="u")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with sqlite3.connect(path) as raw:  # what a process killed mid-run leaves behind
        import socket

        raw.execute(
            "INSERT INTO session_runs (app_name, user_id, session_id, run_id, pid, host) VALUES (?, ?, ?, ?, ?, ?)",
            ("a", "u", session.id, "e-dead", int(dead.stdout), socket.gethostname()),
        )
    with SqliteSessionService(path) as service:
        result = await LlmAgent(name="a", model=ScriptedModel(["hello"])).run_async(
            "hi", session_id=session.id, user_id="u", session_service=service
        )
    assert result.text == "hello"


async def test_a_claim_whose_pid_another_process_reused_is_taken_over(tmp_path) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionService(path) as service:
        await service.create(app_name="a", user_id="u", session_id="s1")
    claimant = subprocess.Popen([sys.executable, "-c", CLAIMANT, f"sqlite:///{path}", "30"], stdout=subprocess.PIPE)
    try:
        assert claimant.stdout.readline() == b"in tool\n"  # it holds the session, inside its tool
        with SqliteSessionService(path) as service:
            runner = Runner(
                app_name="a", agent=LlmAgent(name="a", model=ScriptedModel(["hello"])), session_service=service
            )
            with pytest.raises(AdkError) as caught:  # while it lives, the session is its
                await runner.run_to_result(user_id="u", session_id="s1", content="hi")
            message = caught.value.message
            assert caught.value.code == "session_busy" and f"process {claimant.pid} on this machine" in message
            assert "service.release_run(app_name='a', user_id='u', session_id='s1')" in message
    finally:
        claimant.kill()  # kill -9: its claim stays in the file
        claimant.wait()
    stranger = start_with_pid(claimant.pid, ["sleep", "60"])  # an unrelated process, with the claimant's pid
    try:
        with SqliteSessionService(path) as service:
            runner = Runner(
                app_name="a", agent=LlmAgent(name="a", model=ScriptedModel(["hello"])), session_service=service
            )
            result = await runner.run_to_result(user_id="u", session_id="s1", content="hi")
            assert result.text == "hello", "the session is usable again, with no manual step"
            stored = await service.get(app_name="a", user_id="u", session_id="s1")
        answers = [r.response["code"] for e in stored.events for r in e.function_responses()]
        assert answers == ["interrupted"], "the killed run's call is answered"
        assert stranger.poll() is None, "the stranger was left alone"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("started", [_started_from_proc, _started_from_ps], ids=["/proc", "ps"])
def test_a_process_start_time_tells_a_new_process_from_the_one_that_had_its_pid(started) -> None:
    if started is _started_from_proc and not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc here")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        first = started(sleeper.pid)
        assert first and started(sleeper.pid) == first  # the same process: the same reading
        assert started(os.getpid()) not in (None, first)  # another process (this one started earlier)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert started(sleeper.pid) is None  # gone


async def test_a_claim_from_another_machine_is_refused_with_the_way_to_release_it(tmp_path) -> None:
    path = tmp_path / "s.db"
    with SqliteSessionService(path) as service:
        session = await service.create(app_name="a", user_id="u", session_id="s1")
        with sqlite3.connect(path) as raw:  # a run on another machine sharing the file (its pid means nothing here)
            raw.execute(
                "INSERT INTO session_runs (app_name, user_id, session_id, run_id, pid, host) "
                "VALUES ('a', 'u', 's1', 'e-far', 1, 'build-box-7')"
            )
        runner = Runner(app_name="a", agent=LlmAgent(name="a", model=ScriptedModel(["hello"])), session_service=service)
        with pytest.raises(AdkError) as caught:
            await runner.run_to_result(user_id="u", session_id=session.id, content="hi")
        message = str(caught.value)
        assert caught.value.code == "session_busy" and "'build-box-7'" in message and "e-far" in message
        assert "service.release_run(app_name='a', user_id='u', session_id='s1')" in message
        assert await service.release_run(app_name="a", user_id="u", session_id="s1") is True
        assert await service.release_run(app_name="a", user_id="u", session_id="s1") is False  # nothing left to drop
        assert (await runner.run_to_result(user_id="u", session_id=session.id, content="hi")).text == "hello"


async def test_a_stream_abandoned_between_events_does_not_hold_the_session() -> None:
    sessions = InMemorySessionService()
    gate = asyncio.Event()
    runner = Runner(app_name="a", agent=agent_waiting_on(gate), session_service=sessions)
    session = await sessions.create(app_name="a", user_id="u")
    kept = []

    async def consume() -> None:
        stream = runner.run(user_id="u", session_id=session.id, content="go")
        kept.append(stream)  # held, e.g. by a notebook variable: never finalized
        async for event in stream:
            if event.function_calls():
                await asyncio.sleep(30)  # the consumer's own await, where the cancel lands

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    result = await runner.run_to_result(user_id="u", session_id=session.id, content="again")
    assert result.text == "done"
    stored = await sessions.get(app_name="a", user_id="u", session_id=session.id)
    answers = {r.id: r.response for e in stored.events for r in e.function_responses()}
    assert all(c.id in answers for e in stored.events for c in e.function_calls())
    # The cancel closed the abandoned run, and the next run waited for that close: its own answer.
    assert list(answers.values())[0]["code"] == "cancelled"
