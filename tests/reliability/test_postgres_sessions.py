"""PostgresSessionService under what a busy notebook server gives it, on a real PostgreSQL at its defaults.

- A NUL character (U+0000) wherever a run puts text: PostgreSQL text and jsonb cannot hold one,
  yet it is valid JSON that a model, a tool or a user may send. Each route: the run completes,
  the stored session (reopened) has it back exactly, and every call has its response.
- 200 runs starting at once on one fresh service (no pool yet), against a server at the
  default max_connections=100: every run completes and keeps all its events and state.
- Secrets of the DSN (`password`, `sslpassword`, as a URL or as key=value) in no repr, error
  or log line, whichever form they came in.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from typing import Any

import psycopg
import pytest
from postgres_server import free_port
from session_stores import fresh_schema, postgres_dsn  # noqa: F401 - a fixture

from adk_notebook import (
    AdkError,
    FunctionCall,
    LlmAgent,
    PostgresSessionService,
    RunConfig,
    Runner,
    ScriptedModel,
    ToolContext,
    tool,
)

NUL = "\x00"
AUTO_CREATE = RunConfig(auto_create_session=True)

# Where a NUL comes in: (the tool's argument, what the tool returns, the state it writes, the model's answer).
ROUTES: dict[str, tuple[str, Any, dict[str, Any], str]] = {
    "tool args": (f"a{NUL}b", {"ok": True}, {}, "done"),
    "tool response": ("a", {"text": f"x{NUL}y", f"k{NUL}": [NUL, {"n": f"{NUL}{NUL}"}]}, {}, "done"),
    "state a tool writes": (
        "a",
        {"ok": True},
        {f"s{NUL}": {f"k{NUL}": [NUL]}, f"app:{NUL}": NUL, "user:u": NUL},
        "done",
    ),
    "model text": ("a", {"ok": True}, {}, f"the answer{NUL} is 42"),
}


@pytest.mark.parametrize("route", ROUTES)
async def test_a_nul_anywhere_in_a_run_is_stored_and_read_back(postgres_dsn: str, tally: Any, route: str) -> None:  # noqa: F811
    arg, returned, writes, answer = ROUTES[route]

    @tool
    def echo(tool_context: ToolContext, text: str) -> dict:
        """Return the scripted response and write the scripted state."""
        for key, value in writes.items():
            tool_context.state[key] = value
        return {"got": text, **returned}

    dsn = fresh_schema(postgres_dsn)
    agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("echo", {"text": arg}), answer]), tools=[echo])
    with tally.case(f"postgres: NUL in {route}"):
        async with PostgresSessionService(dsn) as service:
            result = await Runner(app_name="a", agent=agent, session_service=service).run_to_result(
                user_id="u", session_id="s", content=f"go{NUL}", run_config=AUTO_CREATE
            )
            assert result.text == answer
        async with PostgresSessionService(dsn) as service:
            stored = await service.get(app_name="a", user_id="u", session_id="s")
        assert stored is not None
        calls = [c for e in stored.events for c in e.function_calls()]
        responses = {r.id: r.response for e in stored.events for r in e.function_responses()}
        assert [c.args for c in calls] == [{"text": arg}]
        assert responses == {calls[0].id: {"got": arg, **returned}}, "the call has its response, whole"
        assert stored.events[0].text == f"go{NUL}" and stored.events[-1].text == answer
        assert {k: stored.state[k] for k in writes} == writes


async def test_200_runs_at_once_on_a_fresh_service_all_complete(postgres_dsn: str, tally: Any) -> None:  # noqa: F811
    n = 200

    @tool
    async def note(tool_context: ToolContext, i: int) -> dict:
        """Write the run's number to every scope."""
        tool_context.state[f"app:n{i}"] = i
        tool_context.state["mine"] = i
        return {"noted": i}

    async def run(service: PostgresSessionService, i: int) -> str:
        agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("note", {"i": i}), f"noted {i}"]), tools=[note])
        result = await Runner(app_name="a", agent=agent, session_service=service).run_to_result(
            user_id=f"u{i % 10}", session_id=f"s{i}", content=f"run {i}", run_config=AUTO_CREATE
        )
        return result.text

    dsn = fresh_schema(postgres_dsn)
    with psycopg.connect(dsn) as conn:
        limit = int(conn.execute("SHOW max_connections").fetchone()[0])
    assert limit <= 100, f"the server allows {limit} connections, more than its default 100"
    async with PostgresSessionService(dsn) as service:  # no pool yet: all 200 ask for one at once
        results = await asyncio.gather(*(run(service, i) for i in range(n)), return_exceptions=True)
    failed = [f"run {i}: {r!r}" for i, r in enumerate(results) if r != f"noted {i}"]
    lost = set(range(n)) - {i for i, r in enumerate(results) if r == f"noted {i}"}
    async with PostgresSessionService(dsn) as service:
        for i in range(n):
            stored = await service.get(app_name="a", user_id=f"u{i % 10}", session_id=f"s{i}")
            if stored is None or len(stored.events) != 4 or stored.state.get(f"app:n{i}") != i:
                lost.add(i)
    tally.record("postgres: 200 runs at once on one fresh service", n, len(lost))
    assert not failed, f"{len(failed)} of {n} runs failed, e.g. {failed[:3]}"
    assert not lost


SECRET, SSL_SECRET = "hunter2-7c1f", "ssl-key-pass-9d4e"
DSN_FORMS = {
    "URL password": "postgresql://adk:{secret}@127.0.0.1:{port}/agents",
    "URL ?sslpassword=": "postgresql://adk@127.0.0.1:{port}/agents?sslpassword={ssl}",
    "URL ?password=&sslpassword=": "postgresql://adk@127.0.0.1:{port}/agents?password={secret}&sslpassword={ssl}",
    "key=value password": "host=127.0.0.1 port={port} user=adk dbname=agents password={secret}",
    "key=value sslpassword": "host=127.0.0.1 port={port} user=adk dbname=agents sslpassword='{ssl}'",
}


@pytest.mark.parametrize("form", DSN_FORMS)
async def test_dsn_secrets_never_show(form: str, tally: Any, caplog: pytest.LogCaptureFixture) -> None:
    dsn = DSN_FORMS[form].format(secret=SECRET, ssl=SSL_SECRET, port=free_port())
    caplog.set_level(logging.DEBUG)
    with tally.case(f"postgres: DSN secrets hidden ({form})"):
        service = PostgresSessionService(dsn, timeout=1)
        with pytest.raises(AdkError) as caught:
            await service.create(app_name="a", user_id="u")
        await service.aclose()
        assert caught.value.code == "session_db_unreachable" and "127.0.0.1" in repr(service)
        shown = "\n".join([repr(service), str(caught.value), *traceback.format_exception(caught.value), caplog.text])
        assert SECRET not in shown and SSL_SECRET not in shown, shown
