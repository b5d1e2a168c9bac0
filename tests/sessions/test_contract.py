"""The session-service contract, run unchanged against memory, SQLite and PostgreSQL.

Storage: create/get/list/delete, events kept whole and in order, state scopes (`app:` for the
app, `user:` for the user, the rest for the session; `temp:` never stored) across users and
reopen. Runs: one run per session (in one process, and across processes through a lease), a
killed process's lease taken over within the lease time, the calls a dead run left answered,
200 concurrent runs with nothing lost.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import pytest
from claimant import CLAIMANT
from session_stores import Store, rich_events

from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    LlmAgent,
    Part,
    Runner,
    ScriptedModel,
    ToolContext,
    Usage,
    tool,
)

APP = "demo"
RELEASE = "service.release_run(app_name='a', user_id='u', session_id='s1')"


# -- storage ------------------------------------------------------------------------------------


async def test_round_trip_create_get_list_delete(store: Store) -> None:
    service = store.service
    session = await service.create(app_name=APP, user_id="u1", state={"user_name": "Ana"})
    other = await service.create(app_name=APP, user_id="u1", session_id="s2")
    assert other.id == "s2" and session.state == {"user_name": "Ana"}
    for event in rich_events():
        await service.append_event(session, event)
    live_events = list(session.events)

    service = store.reopen()
    got = await service.get(app_name=APP, user_id="u1", session_id=session.id)
    assert got is not None and got.events == live_events
    assert got.events[0].content.parts[1].inline_data.data == b"\x89PNG\x00\xff"
    assert got.events[1].function_calls() == [FunctionCall("get_weather", {"city": "Tokyo", "days": [1, 2]}, "call-1")]
    assert got.events[2].function_responses()[0].parts[0].inline_data.data == b"\x01\x02"
    assert got.events[3].text == "Sunny in Tokyo. ☀" and got.events[3].usage == Usage(20, 7, 27)
    assert got.state == {"user_name": "Ana", "last_city": "Tokyo", "app:calls": 1}
    assert got.last_update_time == live_events[-1].timestamp

    listed = await service.list(app_name=APP, user_id="u1")
    assert [s.id for s in listed] == [session.id, "s2"]
    assert all(s.events == [] for s in listed) and listed[0].state == got.state
    assert await service.list(app_name=APP, user_id="u2") == []

    await service.delete(app_name=APP, user_id="u1", session_id=session.id)
    assert await service.get(app_name=APP, user_id="u1", session_id=session.id) is None
    assert [s.id for s in await service.list(app_name=APP, user_id="u1")] == ["s2"]
    # No error.
    await service.delete(app_name=APP, user_id="u1", session_id="never-existed")


async def test_missing_session_is_none(store: Store) -> None:
    assert await store.service.get(app_name=APP, user_id="u1", session_id="nope") is None


async def test_duplicate_session_id_is_rejected_without_side_effects(
    store: Store,
) -> None:
    await store.service.create(app_name=APP, user_id="u1", session_id="s1")
    with pytest.raises(AdkError) as info:
        await store.service.create(app_name=APP, user_id="u1", session_id="s1", state={"app:x": 1})
    assert info.value.code == "session_exists" and info.value.category == "invalid_input"
    other = await store.service.create(app_name=APP, user_id="u2")
    assert "app:x" not in other.state


async def test_scopes_across_users_and_reopen(store: Store) -> None:
    service = store.service
    first = await service.create(
        app_name=APP,
        user_id="u1",
        state={"app:theme": "dark", "user:lang": "pt", "draft": 1, "temp:scratch": "x"},
    )
    assert first.state == {"app:theme": "dark", "user:lang": "pt", "draft": 1}
    await service.append_event(
        first,
        Event(
            "agent",
            actions=EventActions(
                state_delta={
                    "app:count": 1,
                    "user:seen": True,
                    "topic": "weather",
                    "temp:token": "temp-value-9f3a",
                }
            ),
        ),
    )
    # Served to the live invocation.
    assert first.state["temp:token"] == "temp-value-9f3a"

    service = store.reopen()
    same = await service.get(app_name=APP, user_id="u1", session_id=first.id)
    assert same.state == {
        "app:theme": "dark",
        "app:count": 1,
        "user:lang": "pt",
        "user:seen": True,
        "draft": 1,
        "topic": "weather",
    }
    assert same.events[0].actions.state_delta == {
        "app:count": 1,
        "user:seen": True,
        "topic": "weather",
    }

    # Same user, another session.
    sibling = await service.create(app_name=APP, user_id="u1")
    assert sibling.state == {
        "app:theme": "dark",
        "app:count": 1,
        "user:lang": "pt",
        "user:seen": True,
    }
    # Another user: app scope only.
    stranger = await service.create(app_name=APP, user_id="u2")
    assert stranger.state == {"app:theme": "dark", "app:count": 1}
    elsewhere = await service.create(app_name="other-app", user_id="u1")
    assert elsewhere.state == {}

    # A write from the stranger's session reaches the app scope of everyone, even after reopen.
    await service.append_event(stranger, Event("agent", actions=EventActions(state_delta={"app:count": 2})))
    service = store.reopen()
    again = await service.get(app_name=APP, user_id="u1", session_id=first.id)
    assert again.state["app:count"] == 2 and "temp:token" not in again.state
    assert [s.state for s in await service.list(app_name=APP, user_id="u2")] == [{"app:theme": "dark", "app:count": 2}]


async def test_partial_events_are_not_stored(store: Store) -> None:
    session = await store.service.create(app_name=APP, user_id="u1")
    await store.service.append_event(
        session,
        Event(
            "agent",
            Content.model("Sun"),
            partial=True,
            actions=EventActions(state_delta={"x": 1}),
        ),
    )
    await store.service.append_event(session, Event("agent", Content.model("Sunny.")))
    got = await store.reopen().get(app_name=APP, user_id="u1", session_id=session.id)
    assert [e.text for e in got.events] == ["Sunny."] and "x" not in got.state


async def test_none_is_stored_as_null(store: Store) -> None:
    session = await store.service.create(app_name=APP, user_id="u1", state={"a": 1, "user:b": 2})
    delta = {"a": None, "user:b": None}
    await store.service.append_event(session, Event("agent", actions=EventActions(state_delta=delta)))
    got = await store.reopen().get(app_name=APP, user_id="u1", session_id=session.id)
    assert got.state == {"a": None, "user:b": None}


async def test_nul_characters_in_state_and_events_are_kept_exactly(store: Store) -> None:
    # U+0000 is valid JSON ("\u0000") but no PostgreSQL text or jsonb value can hold it; whatever
    # a store does to keep it must give back exactly what went in, look-alikes of its escape included.
    tricky = ["a\x00b", "\x00", "\uffff0", "\uffff\uffff", "\uffff\x00", "\\u0000", "plain"]
    nested = {"k\x00": tricky, "deep": {"\x00": {"x": "\x00\x00"}}}
    state = {"s\x00": nested, "app:a\x00": tricky, "user:u\x00": "\x00", "plain": 1}
    session = await store.service.create(app_name=APP, user_id="u1", state=state)
    call = FunctionCall("look\x00up", {"q\x00": "a\x00b", "list": tricky}, id="call-\x00")
    answer = {"result": "x\x00y", "more": nested}
    delta = {"app:n\x00": nested, "user:v": "\uffff0", "s2": {"\x00": "\x00"}}
    events = [
        Event("user", Content.user("hi\x00there")),
        Event("agent", Content("model", [Part(function_call=call)])),
        Event(
            "agent",
            Content("tool", [Part(function_response=FunctionResponse(call.name, answer, id=call.id))]),
            actions=EventActions(state_delta=delta),
        ),
        Event("agent", Content.model("\x00 done \uffff0")),
    ]
    for event in events:
        await store.service.append_event(session, event)
    live = list(session.events)
    expected = {**state, **delta}
    assert session.state == expected

    service = store.reopen()
    got = await service.get(app_name=APP, user_id="u1", session_id=session.id)
    assert got is not None and got.events == live and got.state == expected
    assert [s.state for s in await service.list(app_name=APP, user_id="u1")] == [expected]
    sibling = await service.create(app_name=APP, user_id="u1")
    assert sibling.state == {"app:a\x00": tricky, "app:n\x00": nested, "user:u\x00": "\x00", "user:v": "\uffff0"}


async def test_event_for_a_deleted_session_is_dropped(store: Store) -> None:
    session = await store.service.create(app_name=APP, user_id="u1")
    await store.service.delete(app_name=APP, user_id="u1", session_id=session.id)
    await store.service.append_event(session, Event("agent", actions=EventActions(state_delta={"user:x": 1})))
    service = store.reopen()
    assert await service.get(app_name=APP, user_id="u1", session_id=session.id) is None
    assert (await service.create(app_name=APP, user_id="u1")).state == {}


async def test_state_that_json_cannot_carry_is_a_clear_error(store: Store) -> None:
    db = store.service
    with pytest.raises(AdkError) as info:
        await db.create(app_name=APP, user_id="u1", state={"when": object()})
    assert info.value.category == "invalid_input" and "'when'" in info.value.message
    assert await db.list(app_name=APP, user_id="u1") == []
    session = await db.create(app_name=APP, user_id="u1")
    event = Event(
        "agent",
        Content.model("kept"),
        actions=EventActions(state_delta={"blob": {1, 2}, "n": 1}),
    )
    with pytest.raises(AdkError) as info:
        await db.append_event(session, event)
    assert info.value.code == "not_serializable" and "'blob'" in info.value.message
    assert "stored without this key" in info.value.message
    # The event and the state it could keep are stored, so nothing it answered is lost.
    for view in (
        session,
        await store.reopen().get(app_name=APP, user_id="u1", session_id=session.id),
    ):
        assert [e.text for e in view.events] == ["kept"] and view.state == {"n": 1}


async def test_event_metadata_a_database_cannot_keep_is_an_error_naming_the_event_and_the_value(
    shared_store: Store,
) -> None:
    db = shared_store.service
    session = await db.create(app_name=APP, user_id="u1")
    event = Event("agent", Content.model("lost"))
    event.metadata["seen"] = {"at": object()}
    with pytest.raises(AdkError) as info:
        await db.append_event(session, event)
    database = {"sqlite": "SQLite", "postgres": "PostgreSQL"}[shared_store.kind]
    assert info.value.code == "not_serializable" and info.value.category == "invalid_input"
    assert f"Cannot store event {event.id!r} in the {database} session database" in info.value.message
    assert "seen" in info.value.message and "at" in info.value.message, info.value.message
    stored = await shared_store.reopen().get(app_name=APP, user_id="u1", session_id=session.id)
    assert stored is not None and stored.events == []


# -- runs ---------------------------------------------------------------------------------------


def waiting_agent(gate: asyncio.Event) -> LlmAgent:
    @tool
    async def wait() -> dict:
        """Wait for the gate."""
        await gate.wait()
        return {"waited": True}

    return LlmAgent(
        name="a",
        model=ScriptedModel([FunctionCall("wait", {}), "done"] * 3),
        tools=[wait],
    )


def answering(service: object, answer: str = "hello") -> Runner:
    return Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=ScriptedModel([answer])),
        session_service=service,
    )


async def test_a_second_run_is_refused_naming_the_holder_and_release_run(
    store: Store,
) -> None:
    service = store.service
    await service.create(app_name="a", user_id="u", session_id="s1")
    gate = asyncio.Event()
    first = asyncio.create_task(
        Runner(app_name="a", agent=waiting_agent(gate), session_service=service).run_to_result(
            user_id="u", session_id="s1", content="1"
        )
    )
    await asyncio.sleep(0.2)
    with pytest.raises(AdkError) as caught:
        await answering(store.open()).run_to_result(user_id="u", session_id="s1", content="2")
    assert caught.value.code == "session_busy" and RELEASE in caught.value.message
    if store.shared:
        # The holder: its run and process.
        assert "on this machine" in caught.value.message
    gate.set()
    assert (await first).text == "done"
    assert (await answering(service).run_to_result(user_id="u", session_id="s1", content="3")).text == "hello"
    stored = await service.get(app_name="a", user_id="u", session_id="s1")
    assert [e.content.text for e in stored.events if e.author == "user"] == [
        "1",
        "3",
    ], "the refused run wrote nothing"


async def test_a_stuck_run_is_released_by_hand(store: Store) -> None:
    service = store.service
    await service.create(app_name="a", user_id="u", session_id="s1")
    stuck = asyncio.create_task(
        Runner(app_name="a", agent=waiting_agent(asyncio.Event()), session_service=service).run_to_result(
            user_id="u", session_id="s1", content="go"
        )
    )
    await asyncio.sleep(0.2)
    assert await service.release_run(app_name="a", user_id="u", session_id="s1") is True
    # Nothing left.
    assert await service.release_run(app_name="a", user_id="u", session_id="s1") is False
    assert (await answering(service).run_to_result(user_id="u", session_id="s1", content="hi")).text == "hello"
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck


async def test_calls_a_dead_run_left_unanswered_are_answered_before_the_next(
    store: Store,
) -> None:
    service = store.service
    session = await service.create(app_name="a", user_id="u")
    # A run that died inside its tool: the call is stored, its response never was.
    await service.append_event(session, Event("user", Content.user("weather?"), "e-old"))
    call = FunctionCall("get_weather", {"city": "Lima"}, "call-1")
    await service.append_event(session, Event("a", Content("model", [Part(function_call=call)]), "e-old"))

    model = ScriptedModel(["Sorry, let me try again."])
    runner = Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=model),
        session_service=store.reopen(),
    )
    events = [e async for e in runner.run(user_id="u", session_id=session.id, content="still there?")]

    history = model.requests[0].contents
    assert [c.role for c in history] == ["user", "model", "tool", "user"]
    answer = history[2].parts[0].function_response
    assert (answer.id, answer.response["code"]) == ("call-1", "interrupted")
    assert events[-1].text == "Sorry, let me try again."


async def test_200_concurrent_runs_on_distinct_sessions_lose_nothing(
    store: Store,
) -> None:
    n = 200

    @tool
    async def note(tool_context: ToolContext, i: int) -> dict:
        """Write the run's number to every scope."""
        tool_context.state[f"app:n{i}"] = i
        tool_context.state["user:last"] = i
        tool_context.state["mine"] = i
        await asyncio.sleep(0)
        return {"noted": i}

    def agent(i: int) -> LlmAgent:
        return LlmAgent(
            name="a",
            model=ScriptedModel([FunctionCall("note", {"i": i}), f"noted {i}"]),
            tools=[note],
        )

    service = store.service
    for i in range(n):
        await service.create(app_name="a", user_id=f"u{i % 10}", session_id=f"s{i}")
    results = await asyncio.gather(
        *(
            Runner(app_name="a", agent=agent(i), session_service=service).run_to_result(
                user_id=f"u{i % 10}", session_id=f"s{i}", content=f"run {i}"
            )
            for i in range(n)
        )
    )
    assert [r.text for r in results] == [f"noted {i}" for i in range(n)]
    service = store.reopen()
    for i in range(n):
        stored = await service.get(app_name="a", user_id=f"u{i % 10}", session_id=f"s{i}")
        assert [e.author for e in stored.events] == ["user", "a", "a", "a"], i
        assert stored.events[0].content.text == f"run {i}" and stored.events[-1].text == f"noted {i}"
        assert stored.state["mine"] == i and stored.state[f"app:n{i}"] == i
    app_state = (await service.get(app_name="a", user_id="u0", session_id="s0")).state
    assert {k for k in app_state if k.startswith("app:")} == {f"app:n{i}" for i in range(n)}, "no app update lost"


# -- across processes ---------------------------------------------------------------------------


# How a claimant is started somewhere this process cannot look: another host name (a UTS
# namespace: another machine), or this host name with its own processes (a pid namespace: a
# container that shares the host's name). Either way only its lease tells whether it lives.
ELSEWHERE = {
    "here": [],
    "another machine": [
        "unshare",
        "--uts",
        "sh",
        "-c",
        'hostname box-2 && exec "$@"',
        "sh",
    ],
    "another container": ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"],
}


def start_claimant(
    store: Store, lease: float, where: str = "here", tool_seconds: float = 120
) -> subprocess.Popen[bytes]:
    """A process whose run holds session s1 inside its tool (for `tool_seconds`), started `where`
    (see ELSEWHERE)."""
    argv = [
        *ELSEWHERE[where],
        sys.executable,
        "-c",
        CLAIMANT,
        store.url,
        str(lease),
        str(tool_seconds),
    ]
    claimant = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert claimant.stdout is not None
    line = claimant.stdout.readline()
    if line != b"in tool\n":
        claimant.kill()
        stderr = claimant.communicate()[1].decode(errors="replace")
        if where != "here" and "unshare" in stderr:
            pytest.skip(f"cannot make a namespace here: {stderr.strip()}")
        pytest.fail(f"the claimant did not reach its tool: {stderr[-2000:]}")
    return claimant


async def refused(store: Store, *words: str) -> None:
    with pytest.raises(AdkError) as caught:
        await answering(store.service).run_to_result(user_id="u", session_id="s1", content="hi")
    assert caught.value.code == "session_busy" and RELEASE in caught.value.message, caught.value.message
    assert all(w in caught.value.message for w in words), caught.value.message


async def test_two_processes_on_one_session_the_second_is_refused(
    shared_store: Store,
) -> None:
    await shared_store.service.create(app_name="a", user_id="u", session_id="s1")
    claimant = start_claimant(shared_store, lease=30)
    try:
        await refused(shared_store, f"process {claimant.pid} on this machine")
    finally:
        claimant.kill()
        claimant.wait()
    # A dead process of this machine: its lease is stale at once.
    result = await answering(shared_store.service).run_to_result(user_id="u", session_id="s1", content="hi")
    assert result.text == "hello"


async def test_a_process_killed_mid_run_on_another_machine_loses_its_lease_within_the_lease_time(
    shared_store: Store,
) -> None:
    lease = 2.0
    await shared_store.service.create(app_name="a", user_id="u", session_id="s1")
    claimant = start_claimant(shared_store, lease, "another machine")
    try:
        # Twice its lease: only its heartbeat keeps the session its.
        await asyncio.sleep(2 * lease)
        await refused(shared_store, "'box-2'", "cannot be checked from here")
    finally:
        claimant.kill()  # SIGKILL: no end_run, no last word; its lease row stays
        claimant.wait()
    killed = time.monotonic()
    await refused(shared_store, "'box-2'")  # not yet: the lease has time left
    while True:
        try:
            result = await answering(shared_store.service).run_to_result(user_id="u", session_id="s1", content="hi")
            break
        except AdkError as exc:
            assert exc.code == "session_busy"
            assert time.monotonic() - killed < lease + 1.0, "the lease outlived its length"
            await asyncio.sleep(0.1)
    assert result.text == "hello"
    stored = await shared_store.service.get(app_name="a", user_id="u", session_id="s1")
    calls = [c.id for e in stored.events for c in e.function_calls()]
    answers = {r.id: r.response.get("code") for e in stored.events for r in e.function_responses()}
    assert len(calls) == 1 and answers == {calls[0]: "interrupted"}, "the killed run's call is answered"


async def test_a_live_run_in_another_container_of_this_host_keeps_its_session(
    shared_store: Store,
) -> None:
    # Its pid (1 or 2 in its namespace) is some other process here: checking it would free the session.
    await shared_store.service.create(app_name="a", user_id="u", session_id="s1")
    claimant = start_claimant(shared_store, 30, "another container")
    try:
        await refused(shared_store, "another container (pid namespace) of this machine")
    finally:
        claimant.kill()  # --kill-child: the claimant goes with it
        claimant.wait()


async def test_a_paused_run_whose_lease_was_taken_over_writes_nothing_more(
    shared_store: Store,
) -> None:
    lease = 1.5
    await shared_store.service.create(app_name="a", user_id="u", session_id="s1")
    claimant = start_claimant(shared_store, lease, tool_seconds=2 * lease)
    claimant.send_signal(signal.SIGSTOP)  # a laptop lid closed mid-run: no heartbeat
    try:
        await asyncio.sleep(lease + 0.5)
        result = await answering(shared_store.service).run_to_result(user_id="u", session_id="s1", content="hi")
        assert result.text == "hello", "the lapsed lease was taken over"
    finally:
        claimant.send_signal(signal.SIGCONT)  # it wakes up, its tool returns, its run wants to go on
    _, stderr = claimant.communicate(timeout=60)
    assert claimant.returncode != 0 and "lost session 's1'" in stderr.decode(), stderr.decode()[-2000:]
    stored = await shared_store.service.get(app_name="a", user_id="u", session_id="s1")
    calls = [c.id for e in stored.events for c in e.function_calls()]
    answers = {r.id: r.response.get("code") for e in stored.events for r in e.function_responses()}
    assert answers == {calls[0]: "interrupted"}, "the woken run wrote nothing into the session it lost"
    assert [e.text for e in stored.events][-2:] == ["hi", "hello"]
