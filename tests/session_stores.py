"""The session stores the tests run against, and events that exercise every part a store keeps.

`postgres_dsn` starts one PostgreSQL for the whole test session (tests/postgres_server.py), for
the test folders that import it; each test gets a schema of its own in it (`fresh_schema`), so
tests never see each other's tables. Without an installed server the PostgreSQL cases skip,
unless ADK_POSTGRES_REQUIRED=1 (CI) makes them fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from postgres_server import find_bin, postgres_server

from adk_notebook import (
    BaseSessionService,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    InMemorySessionService,
    Part,
    SqliteSessionService,
    Usage,
)
from adk_notebook.sessions.urls import open_session_service

__all__ = ["Store", "fresh_schema", "postgres_dsn", "rich_events"]

REQUIRED = os.environ.get("ADK_POSTGRES_REQUIRED", "") not in ("", "0")


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    bin_dir = find_bin()
    if bin_dir is None:
        reason = "no PostgreSQL server installed (apt-get install postgresql)"
        if REQUIRED:
            pytest.fail(f"PostgreSQL required (ADK_POSTGRES_REQUIRED=1) but {reason}", pytrace=False)
        pytest.skip(reason)
    with postgres_server(bin_dir) as dsn:
        yield dsn


def rich_events() -> list[Event]:
    call = FunctionCall("get_weather", {"city": "Tokyo", "days": [1, 2]}, id="call-1")
    return [
        Event(
            "user",
            Content.user("What's in this image?").with_inline_data("image/png", b"\x89PNG\x00\xff"),
        ),
        Event(
            "weather",
            Content("model", [Part(function_call=call)]),
            invocation_id="inv-1",
            usage=Usage(10, 5, 15),
        ),
        Event(
            "weather",
            Content(
                "tool",
                [
                    Part(
                        function_response=FunctionResponse(
                            "get_weather",
                            {"condition": "sunny"},
                            id="call-1",
                            parts=[Part.from_bytes("image/jpeg", b"\x01\x02")],
                        )
                    )
                ],
            ),
            invocation_id="inv-1",
            actions=EventActions(state_delta={"last_city": "Tokyo", "app:calls": 1}),
        ),
        Event(
            "weather",
            Content.model("Sunny in Tokyo. ☀"),
            invocation_id="inv-1",
            turn_complete=True,
            usage=Usage(20, 7, 27),
            metadata={"finish_reason": "stop"},
        ),
    ]


def fresh_schema(dsn: str) -> str:
    """A DSN whose tables land in a new, empty schema of the server at `dsn`."""
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{dsn}?options={quote(f'-csearch_path={schema}')}"


class Store:
    """One kind of service under test. `url` names its store for another process; `reopen()` is a
    new service on the same store (memory: the same service, as nothing else can reach it)."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind, self.url = kind, url
        self.opened: list[BaseSessionService] = []
        self.service = self.open()

    @property
    def shared(self) -> bool:
        """Whether other processes can reach this store."""
        return self.kind != "memory"

    def open(self, **options: Any) -> BaseSessionService:
        if self.kind == "memory" and self.opened:
            return self.opened[0]
        service = open_session_service(self.url, **options)
        self.opened.append(service)
        return service

    def reopen(self) -> BaseSessionService:
        if self.kind == "sqlite":
            self.service.close()  # type: ignore[attr-defined]
        self.service = self.open()
        return self.service

    async def close(self) -> None:
        for service in self.opened:
            if isinstance(service, SqliteSessionService):
                service.close()
            elif not isinstance(service, InMemorySessionService):
                await service.aclose()  # type: ignore[attr-defined]
