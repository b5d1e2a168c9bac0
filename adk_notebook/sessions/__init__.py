"""Session services: where conversations and their state are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.session import Session
from .base import BaseSessionService
from .in_memory import InMemorySessionService
from .sqlite import SqliteSessionService

if TYPE_CHECKING:
    from .postgres import PostgresSessionService as PostgresSessionService  # for type checkers

# PostgresSessionService (extra `[postgres]`) is importable by name but not listed, so that
# `from adk_notebook.sessions import *` works without the extra.
__all__ = ["BaseSessionService", "InMemorySessionService", "Session", "SqliteSessionService"]


def __getattr__(name: str) -> object:
    # PostgresSessionService imports psycopg (extra `[postgres]`) on first use.
    if name == "PostgresSessionService":
        from .postgres import PostgresSessionService

        return PostgresSessionService
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
