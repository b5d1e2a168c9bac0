"""The session services under contract: in memory, SQLite, and PostgreSQL on a real server
(`postgres_dsn`, see tests/session_stores.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_stores import Store, fresh_schema, postgres_dsn  # noqa: F401 - a fixture

KINDS = ["memory", "sqlite", "postgres"]


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
