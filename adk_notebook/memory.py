"""Long-term memory: past sessions a tool can search with `ctx.search_memory(query)`."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from .core.content import Content
from .core.session import Session

__all__ = ["BaseMemoryService", "InMemoryMemoryService", "MemoryEntry"]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    content: Content
    author: str
    session_id: str
    timestamp: float


class BaseMemoryService(ABC):
    @abstractmethod
    async def add_session_to_memory(self, session: Session) -> None: ...

    @abstractmethod
    async def search(self, *, app_name: str, user_id: str, query: str) -> list[MemoryEntry]: ...


class InMemoryMemoryService(BaseMemoryService):
    """Keyword search over the text of remembered sessions (any query word matches)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], list[tuple[frozenset[str], MemoryEntry]]] = {}

    async def add_session_to_memory(self, session: Session) -> None:
        entries = self._entries.setdefault((session.app_name, session.user_id), [])
        for event in session.events:
            if event.content is not None and event.content.text:
                words = frozenset(w.lower() for w in _WORD.findall(event.content.text))
                entries.append((words, MemoryEntry(event.content, event.author, session.id, event.timestamp)))

    async def search(self, *, app_name: str, user_id: str, query: str) -> list[MemoryEntry]:
        wanted = {w.lower() for w in _WORD.findall(query)}
        return [entry for words, entry in self._entries.get((app_name, user_id), []) if wanted & words]
