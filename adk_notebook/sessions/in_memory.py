"""Sessions in a dict: the default, for notebooks, tests and scripts.

State goes in and comes out as copies, as it does through a database: a session that `get`
returned, or a value a tool stored and then kept changing, never changes what is stored.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.events import Event, new_id
from ..core.session import Session
from ..core.state import checked_state, split_delta
from .base import BaseSessionService, session_exists

__all__ = ["InMemorySessionService"]


@dataclass(slots=True)
class _Stored:
    state: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    last_update_time: float = field(default_factory=time.time)


class InMemorySessionService(BaseSessionService):
    """Keeps sessions for the life of the process.

    `get` (and `create`, `list`) return snapshots: the state is a deep copy, so changing it
    changes nothing stored (state changes go through an event's `state_delta`). The events
    are the stored `Event` objects, in a new list: read them, do not change them.
    """

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str], _Stored] = {}
        self._app_state: dict[str, dict[str, Any]] = {}
        self._user_state: dict[tuple[str, str], dict[str, Any]] = {}

    async def create(
        self, *, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        session_id = session_id or new_id()
        key = (app_name, user_id, session_id)
        if key in self._sessions:
            raise session_exists(app_name, user_id, session_id)
        app, user, own = split_delta(_copy(checked_state(state or {})))
        self._app_state.setdefault(app_name, {}).update(app)
        self._user_state.setdefault((app_name, user_id), {}).update(user)
        self._sessions[key] = _Stored(own)
        return self._snapshot(key, self._sessions[key])

    async def get(self, *, app_name: str, user_id: str, session_id: str) -> Session | None:
        key = (app_name, user_id, session_id)
        stored = self._sessions.get(key)
        return None if stored is None else self._snapshot(key, stored)

    async def list(self, *, app_name: str, user_id: str) -> list[Session]:
        return [
            Session(sid, app, uid, state=self._merged_state(app, uid, stored), last_update_time=stored.last_update_time)
            for (app, uid, sid), stored in self._sessions.items()
            if app == app_name and uid == user_id
        ]

    async def delete(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._sessions.pop((app_name, user_id, session_id), None)

    async def _store_event(
        self,
        session: Session,
        event: Event,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        session_delta: dict[str, Any],
    ) -> None:
        stored = self._sessions.get((session.app_name, session.user_id, session.id))
        if stored is None:  # deleted while running: nothing left to keep it in
            return
        stored.events.append(event)
        stored.last_update_time = event.timestamp
        if session_delta:
            stored.state.update(_copy(session_delta))
        if app_delta:
            self._app_state.setdefault(session.app_name, {}).update(_copy(app_delta))
        if user_delta:
            self._user_state.setdefault((session.app_name, session.user_id), {}).update(_copy(user_delta))

    def _merged_state(self, app_name: str, user_id: str, stored: _Stored) -> dict[str, Any]:
        return _copy(
            {
                **stored.state,
                **self._app_state.get(app_name, {}),
                **self._user_state.get((app_name, user_id), {}),
            }
        )

    def _snapshot(self, key: tuple[str, str, str], stored: _Stored) -> Session:
        app_name, user_id, session_id = key
        return Session(
            session_id,
            app_name,
            user_id,
            state=self._merged_state(app_name, user_id, stored),
            events=list(stored.events),
            last_update_time=stored.last_update_time,
        )


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    """A deep copy of state: fast for the JSON-like values state holds, `copy.deepcopy` for the rest.

    An object that cannot be copied (a lock, a connection) is kept as it is, as before.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    try:
        return copy.deepcopy(value)
    except (TypeError, copy.Error):
        return value
