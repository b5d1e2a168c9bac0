"""PostgresSessionService under what a busy notebook server gives it, on a real PostgreSQL at its defaults.

- 200 runs starting at once on one fresh service (no pool yet), against a server at the
  default max_connections=100: every run completes and keeps all its events and state.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
from session_stores import fresh_schema, postgres_dsn  # noqa: F401 - a fixture

from adk_notebook import (
    FunctionCall,
    LlmAgent,
    PostgresSessionService,
    RunConfig,
    Runner,
    ScriptedModel,
    ToolContext,
    tool,
)

AUTO_CREATE = RunConfig(auto_create_session=True)


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
        assert conn.execute("SHOW max_connections").fetchone() == ("100",), "the server is at its default"
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
