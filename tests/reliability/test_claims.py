"""Claims a run leaves on its session: a dead run's claim never blocks the session, a live one always does.

A run claims its session in the SQLite file (one run per session, across processes). A claimant
process is started for real, let into its tool (holding the session), and then, per case:
- still alive: every other run is refused with session_busy, naming the process and how to
  release it (`release_run`);
- killed with SIGKILL, its pid free: the next run takes the session over, with no manual step;
- killed, its pid handed to an unrelated process (the kernel reuses pids; root can choose the
  next one, so the test makes it happen now): the same, and the stranger is left alone;
and, without a claimant process:
- a claim recorded by an earlier process with this very pid (a kernel restarted into the same
  pid): taken over;
- a claim from another machine, which cannot be checked from here: refused with the way to
  release it, and usable once released; the same for a run of this process whose task is stuck.

After each takeover the killed run's open call is answered "interrupted" and nothing else is
lost. A refusal that blocks a session no run holds, or a takeover of a live run's session,
counts as lost.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

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

ROUNDS = 3
RELEASE = "service.release_run(app_name='a', user_id='u', session_id='s1')"


def runner(service: Any, answer: str = "hello") -> Runner:
    return Runner(app_name="a", agent=LlmAgent(name="a", model=ScriptedModel([answer])), session_service=service)


async def refused(service: Any, *words: str) -> None:
    with pytest.raises(AdkError) as caught:
        await runner(service).run_to_result(user_id="u", session_id="s1", content="hi")
    assert caught.value.code == "session_busy" and RELEASE in caught.value.message, caught.value.message
    assert all(w in caught.value.message for w in words), caught.value.message


async def taken_over(path: Path) -> None:
    with SqliteSessionService(path) as service:
        result = await runner(service).run_to_result(user_id="u", session_id="s1", content="hi")
        stored = await service.get(app_name="a", user_id="u", session_id="s1")
    assert result.text == "hello"
    calls = [c.id for e in stored.events for c in e.function_calls()]
    answers = {r.id: r.response.get("code") for e in stored.events for r in e.function_responses()}
    assert sorted(calls) == sorted(answers) and set(answers.values()) <= {"interrupted"}, answers


def claimed_by_a_killed_run(path: Path) -> int:
    """A session claimed by a real run, whose process is then killed inside its tool; returns its pid."""
    with SqliteSessionService(path) as service:
        asyncio.run(service.create(app_name="a", user_id="u", session_id="s1"))
    claimant = subprocess.Popen([sys.executable, "-c", CLAIMANT, f"sqlite:///{path}", "30"], stdout=subprocess.PIPE)
    try:
        assert claimant.stdout is not None and claimant.stdout.readline() == b"in tool\n"
        with SqliteSessionService(path) as service:
            asyncio.run(refused(service, f"process {claimant.pid} on this machine"))
    finally:
        claimant.kill()
        claimant.wait()
    return claimant.pid


@pytest.mark.parametrize("pid_reused", [False, True], ids=["pid-free", "pid-reused"])
def test_a_killed_claimant_never_blocks_the_session(tmp_path: Path, tally: Any, pid_reused: bool) -> None:
    label = "reused by another process" if pid_reused else "free"
    for round_ in range(ROUNDS):
        with tally.case(f"stale claims: claimant killed, its pid {label}"):
            path = tmp_path / f"s{round_}.db"
            pid = claimed_by_a_killed_run(path)
            stranger = start_with_pid(pid, ["sleep", "60"]) if pid_reused else None
            try:
                asyncio.run(taken_over(path))
                assert stranger is None or stranger.poll() is None
            finally:
                if stranger is not None:
                    stranger.kill()
                    stranger.wait()


async def test_a_claim_of_an_earlier_process_with_this_pid_is_taken_over(tmp_path: Path, tally: Any) -> None:
    with tally.case("stale claims: an earlier process with this pid"):
        path = tmp_path / "s.db"
        with SqliteSessionService(path) as service:
            await service.create(app_name="a", user_id="u", session_id="s1")
            with sqlite3.connect(path) as raw:  # what a kernel that restarted into the same pid finds
                raw.execute(
                    "INSERT INTO session_runs (app_name, user_id, session_id, run_id, pid, host, started) "
                    "VALUES ('a', 'u', 's1', 'e-before', ?, ?, 'boot:1')",
                    (os.getpid(), socket.gethostname()),
                )
        await taken_over(path)


async def test_a_claim_that_cannot_be_checked_is_refused_until_released(tmp_path: Path, tally: Any) -> None:
    with tally.case("stale claims: another machine's, released by hand"):
        path = tmp_path / "s.db"
        with SqliteSessionService(path) as service:
            await service.create(app_name="a", user_id="u", session_id="s1")
            with sqlite3.connect(path) as raw:
                raw.execute(
                    "INSERT INTO session_runs (app_name, user_id, session_id, run_id, pid, host) "
                    "VALUES ('a', 'u', 's1', 'e-far', 1, 'build-box-7')"
                )
            await refused(service, "'build-box-7'", "cannot be checked from here")
            assert await service.release_run(app_name="a", user_id="u", session_id="s1")
        await taken_over(path)


async def test_a_stuck_run_in_memory_is_refused_until_released(tally: Any) -> None:
    with tally.case("stale claims: a stuck run in memory, released by hand"):
        stuck = asyncio.Event()

        @tool
        async def hang() -> dict:
            """Never return."""
            await stuck.wait()
            return {}

        service = InMemorySessionService()
        await service.create(app_name="a", user_id="u", session_id="s1")
        agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("hang", {}), "done"]), tools=[hang])
        running = asyncio.create_task(
            Runner(app_name="a", agent=agent, session_service=service).run_to_result(
                user_id="u", session_id="s1", content="go"
            )
        )
        await asyncio.sleep(0.2)
        await refused(service)
        assert await service.release_run(app_name="a", user_id="u", session_id="s1")
        assert not await service.release_run(app_name="a", user_id="u", session_id="s1")
        result = await runner(service).run_to_result(user_id="u", session_id="s1", content="hi")
        assert result.text == "hello"
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
