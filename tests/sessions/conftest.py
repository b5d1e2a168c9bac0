"""The session services under contract: in memory, SQLite, and PostgreSQL on a real server.

`postgres_dsn` starts one PostgreSQL for the whole test session (tests/postgres_server.py);
each test gets a schema of its own in it, so tests never see each other's tables. Without an
installed server the PostgreSQL cases skip, unless ADK_POSTGRES_REQUIRED=1 (CI) makes them fail.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from postgres_server import find_bin, postgres_server
from session_stores import Store, fresh_schema

REQUIRED = os.environ.get("ADK_POSTGRES_REQUIRED", "") not in ("", "0")
KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    bin_dir = find_bin()
    if bin_dir is None:
        reason = "no PostgreSQL server installed (apt-get install postgresql)"
        if REQUIRED:
            pytest.fail(
                f"PostgreSQL required (ADK_POSTGRES_REQUIRED=1) but {reason}",
                pytrace=False,
            )
        pytest.skip(reason)
    with postgres_server(bin_dir) as dsn:
        yield dsn


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
