"""PostgresSessionService beyond the contract: its tables, its schema version, its errors, its secrets."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
from postgres_server import free_port
from session_stores import fresh_schema

from adk_notebook import AdkError, Event, EventActions, PostgresSessionService


def test_without_psycopg_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "try:\n    from adk_notebook import PostgresSessionService\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "adk-notebook[postgres]"' in shown


async def test_tables_are_made_on_first_use_with_a_schema_version(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone() == (0,)
    async with PostgresSessionService(dsn) as service:
        await service.list(app_name="a", user_id="u")
    with psycopg.connect(dsn) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        tables = {name for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}
        assert tables == {"adk_schema", "adk_sessions", "adk_events", "adk_app_states", "adk_user_states",
                          "adk_session_runs"}  # fmt: skip
        assert conn.execute("SELECT version FROM adk_schema").fetchall() == [(1,)]
        conn.execute("UPDATE adk_schema SET version = 99")
    with pytest.raises(AdkError) as caught:
        async with PostgresSessionService(dsn) as service:
            await service.list(app_name="a", user_id="u")
    assert caught.value.code == "session_db_too_new" and "Upgrade adk-notebook" in caught.value.message


async def test_temp_values_never_reach_the_database(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    async with PostgresSessionService(dsn) as service:
        session = await service.create(app_name="a", user_id="u", state={"temp:init": "temp-initial-51c7"})
        delta = {"temp:token": "temp-value-9f3a", "kept": "kept-value-2b8e"}
        await service.append_event(session, Event("agent", actions=EventActions(state_delta=delta)))
    with psycopg.connect(dsn) as conn:
        everything = " ".join(
            str(row)
            for table in (
                "adk_sessions",
                "adk_events",
                "adk_app_states",
                "adk_user_states",
            )
            for row in conn.execute(f"SELECT * FROM {table}").fetchall()
        )
    assert "kept-value-2b8e" in everything
    assert "temp-value-9f3a" not in everything and "temp-initial-51c7" not in everything


async def test_a_server_that_does_not_answer_is_a_clear_error_without_the_password() -> None:
    service = PostgresSessionService(f"postgresql://adk:hunter2@127.0.0.1:{free_port()}/agents", timeout=1)
    assert "hunter2" not in repr(service) and "127.0.0.1" in repr(service)
    with pytest.raises(AdkError) as caught:
        await service.create(app_name="a", user_id="u")
    assert caught.value.code == "session_db_unreachable" and "hunter2" not in str(caught.value)
    assert "Check that the server runs" in caught.value.message
    await service.aclose()
