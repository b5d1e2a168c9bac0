"""Session services: where conversations and their state are kept."""

from ..core.session import Session
from .base import BaseSessionService
from .in_memory import InMemorySessionService
from .sqlite import SqliteSessionService

__all__ = ["BaseSessionService", "InMemorySessionService", "Session", "SqliteSessionService"]
