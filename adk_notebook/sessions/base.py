"""Sessions: one conversation's events and state, and the services that keep them."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ..core.content import Content
from ..core.errors import AdkError
from ..core.events import Event
from ..core.state import TEMP_PREFIX, split_delta

__all__ = ["BaseSessionService", "Session", "session_exists", "session_not_found"]


@dataclass(slots=True, eq=False)
class Session:
    """A conversation: its events in order and its state (app, user and session scopes merged)."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    last_update_time: float = field(default_factory=time.time)

    def conversation_history(self) -> list[Content]:
        return [e.content for e in self.events if e.content is not None]


def session_not_found(app_name: str, user_id: str, session_id: str) -> AdkError:
    return AdkError.session(
        f"Session {session_id!r} of user {user_id!r} in app {app_name!r} does not exist. Create it first with "
        f"`await session_service.create(app_name={app_name!r}, user_id={user_id!r})` and use the id it returns, "
        "or run with `RunConfig(auto_create_session=True)`.",
        code="session_not_found",
        category="not_found",
    )


def session_exists(app_name: str, user_id: str, session_id: str) -> AdkError:
    return AdkError.session(
        f"Session {session_id!r} already exists for user {user_id!r} in app {app_name!r}; "
        "use `get(...)` to continue it or pass another session_id.",
        code="session_exists",
        category="invalid_input",
    )


class BaseSessionService(ABC):
    """Stores sessions. Subclasses persist; this base applies events to the live session object."""

    @abstractmethod
    async def create(
        self, *, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session: ...

    @abstractmethod
    async def get(self, *, app_name: str, user_id: str, session_id: str) -> Session | None: ...

    @abstractmethod
    async def list(self, *, app_name: str, user_id: str) -> list[Session]:
        """The user's sessions in the app, without their events."""

    @abstractmethod
    async def delete(self, *, app_name: str, user_id: str, session_id: str) -> None: ...

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store a complete event and apply its state delta; partial events are not stored."""
        if event.partial:
            return event
        delta = event.actions.state_delta
        if any(key.startswith(TEMP_PREFIX) for key in delta):
            # temp: values serve this invocation through the live session; they never reach storage.
            event.actions.state_delta = {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}
        # Store first: when storing fails, the live session must not claim what was never kept.
        await self._store_event(session, event, *split_delta(event.actions.state_delta))
        if delta:
            session.state.update(delta)
        session.events.append(event)
        session.last_update_time = event.timestamp
        return event

    @abstractmethod
    async def _store_event(
        self,
        session: Session,
        event: Event,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        session_delta: dict[str, Any],
    ) -> None:
        """Persist one complete event and the scoped parts of its state delta."""
