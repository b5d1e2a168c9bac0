"""A session service named by a URL: what `ADK_SESSIONS` and `%adk sessions --use` take.

memory                                   InMemorySessionService()
sqlite:///chats.db, sqlite:////srv/a.db  SqliteSessionService (SQLAlchemy's form, as google-adk's
                                         db_url: three slashes then a relative path, four for /)
postgresql://user@host:5432/db           PostgresSessionService (extra `[postgres]`)
"""

from __future__ import annotations

import os
from typing import Any

from ..core.errors import AdkError
from .base import BaseSessionService
from .in_memory import InMemorySessionService
from .sqlite import SqliteSessionService

__all__ = ["ENV", "open_session_service", "session_service_from_env"]

ENV = "ADK_SESSIONS"


def open_session_service(url: str, **options: Any) -> BaseSessionService:
    """The session service `url` names (see the module docstring); `options` go to a persistent
    one's constructor (e.g. `lease_seconds=`)."""
    if url in ("", "memory"):
        return InMemorySessionService()
    if url.startswith("sqlite:///"):
        return SqliteSessionService(os.path.expanduser(url.removeprefix("sqlite:///")), **options)
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresSessionService

        return PostgresSessionService(url, **options)
    shown = url.split("://", 1)[0] + "://..." if "://" in url else url
    raise AdkError.session(
        f"{shown!r} names no session service. Use 'memory', 'sqlite:///chats.db' (a file; four slashes for an "
        "absolute path) or 'postgresql://user@host/database'.",
        code="session_url_invalid",
        category="invalid_input",
    )


def session_service_from_env() -> BaseSessionService:
    """The service `ADK_SESSIONS` names (how a JupyterHub points every kernel at one database); in memory
    when it is unset."""
    return open_session_service(os.environ.get(ENV, "memory"))
