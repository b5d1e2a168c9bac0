"""The session services under contract: in memory, SQLite, and PostgreSQL on a real server.

`postgres_dsn` starts one PostgreSQL for the whole test session (tests/postgres_server.py);
each test gets a schema of its own in it, so tests never see each other's tables. Without an
installed server the PostgreSQL cases skip, unless ADK_POSTGRES_REQUIRED=1 (CI) makes them fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from postgres_server import find_bin, postgres_server

from adk_notebook import BaseSessionService, InMemorySessionService, SqliteSessionService
from adk_notebook.sessions.urls import open_session_service

REQUIRED = os.environ.get("ADK_POSTGRES_REQUIRED", "") not in ("", "0")
KINDS = ["memory", "sqlite", "postgres"]


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


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    kind = request.param
    if kind == "postgres":
        url = fresh_schema(request.getfixturevalue("postgres_dsn"))
    else:
        url = "memory" if kind == "memory" else f"sqlite:///{tmp_path / 'sessions.db'}"
    store = Store(kind, url)
    yield store
    await store.close()


@pytest.fixture(params=[k for k in KINDS if k != "memory"])
async def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store that several processes reach: SQLite and PostgreSQL."""
    if request.param == "postgres":
        url = fresh_schema(request.getfixturevalue("postgres_dsn"))
    else:
        url = f"sqlite:///{tmp_path / 'sessions.db'}"
    store = Store(request.param, url)
    yield store
    await store.close()
