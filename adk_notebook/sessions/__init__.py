"""Session services: where conversations and their state are kept."""

from .base import BaseSessionService, Session
from .in_memory import InMemorySessionService
from .sqlite import SqliteSessionService

__all__ = ["BaseSessionService", "InMemorySessionService", "Session", "SqliteSessionService"]
