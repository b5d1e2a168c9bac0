"""Sessions: one conversation's events and state, and the services that keep them."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ..core.content import make_sendable
from ..core.errors import AdkError
from ..core.events import Event
from ..core.json_value import json_problem
from ..core.session import Session
from ..core.state import TEMP_PREFIX, split_delta, storable
from .leases import mark_run_live, run_is_live

__all__ = [
    "BaseSessionService",
    "session_busy",
    "session_exists",
    "session_not_found",
]


def session_not_found(app_name: str, user_id: str, session_id: str) -> AdkError:
    return AdkError.session(
        f"Session {session_id!r} of user {user_id!r} in app {app_name!r} does not exist. Create it first with "
        f"`await session_service.create(app_name={app_name!r}, user_id={user_id!r})` and use the id it returns, "
        "or run with `RunConfig(auto_create_session=True)`.",
        code="session_not_found",
        category="not_found",
    )


def session_busy(app_name: str, user_id: str, session_id: str, holder: str = "", note: str = "") -> AdkError:
    """The refusal of a second run; `holder` says who holds the session, `note` anything more about it."""
    return AdkError.session(
        f"Session {session_id!r} already has a run in progress{holder}; wait for it to finish (or cancel it "
        f"with runner.cancel(...)) before sending the next message.{note} If that run is gone for good, release "
        f"the session with `await service.release_run(app_name={app_name!r}, user_id={user_id!r}, "
        f"session_id={session_id!r})`.",
        code="session_busy",
        category="unavailable",
    )


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))


def event_json(event: Event, database: str) -> str:
    """An event as a database store keeps it. State and content are made storable before they get
    here (see `BaseSessionService.append_event`); what is left to fail is the event's metadata."""
    value = event.to_dict()
    try:
        return _COMPACT_JSON.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise AdkError.session(
            f"Cannot store event {event.id!r} in the {database} session database: "
            f"{json_problem(value, 'the event')}. Keep event metadata to str, int, float, bool, None, lists and dicts.",
            code="not_serializable",
            category="invalid_input",
        ) from exc


def session_exists(app_name: str, user_id: str, session_id: str) -> AdkError:
    return AdkError.session(
        f"Session {session_id!r} already exists for user {user_id!r} in app {app_name!r}; "
        "use `get(...)` to continue it or pass another session_id.",
        code="session_exists",
        category="invalid_input",
    )


class BaseSessionService(ABC):
    """Stores sessions. Subclasses persist; this base applies events to the live session object."""

    _run_claims: dict[tuple[str, str, str], str] | None = None  # session key -> run id (see begin_run)

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

    async def begin_run(self, session: Session, run_id: str) -> None:
        """Claim `session` for one run; raise `session_busy` while another live run holds it.

        Two runs on one conversation would interleave their tool calls and responses (which
        providers reject) and lose each other's state updates, so the second one is refused.
        This base keeps the claims in the service object; a store shared between processes
        keeps them in the store as leases (see .leases).
        """
        claims = self._claims()
        key = (session.app_name, session.user_id, session.id)
        holder = claims.get(key)
        if holder is not None and holder != run_id and run_is_live(holder):
            raise session_busy(*key)
        mark_run_live(run_id, True)
        claims[key] = run_id

    async def end_run(self, session: Session, run_id: str) -> None:
        """Release the claim of `begin_run` (a no-op when another run took over a stale claim)."""
        mark_run_live(run_id, False)
        claims = self._claims()
        key = (session.app_name, session.user_id, session.id)
        if claims.get(key) == run_id:
            del claims[key]

    async def release_run(self, *, app_name: str, user_id: str, session_id: str) -> bool:
        """Drop the claim of the run holding a session, whoever holds it; False when none did.

        Only for a run that is gone but still holds its session (here: its task is stuck for
        good); otherwise two runs will write to one conversation.
        """
        return self._claims().pop((app_name, user_id, session_id), None) is not None

    def _claims(self) -> dict[tuple[str, str, str], str]:
        if self._run_claims is None:
            self._run_claims = {}
        return self._run_claims

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store a complete event and apply its state delta; partial events are not stored.

        Whatever is stored is sent again in every later request, so the event is made sendable
        first (`make_sendable`: text repaired, values strict JSON cannot carry answered with an
        error naming where they are). A state value no store could keep (a datetime put in
        `actions.state_delta` directly; writes through `ctx.state` are refused where they
        happen) is left out: the event is stored without it, then AdkError `not_serializable`
        names the key. Nothing the event carries besides is lost.
        """
        if event.partial:
            return event
        if event.content is not None:
            make_sendable(event.content)
        live = delta = event.actions.state_delta
        refused: list[str] = []
        if delta:
            live, event.actions.state_delta, refused = _storable_delta(delta)
        # Store first: when storing fails, the live session must not claim what was never kept.
        await self._store_event(session, event, *split_delta(event.actions.state_delta))
        if live:
            session.state.update(live)
        session.events.append(event)
        session.last_update_time = event.timestamp
        if refused:
            raise AdkError.session(
                f"{' '.join(refused)} The event was stored without {'this key' if len(refused) == 1 else 'these keys'}.",
                code="not_serializable",
                category="invalid_input",
            )
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


def _storable_delta(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(what the live session takes, what is stored, why the rest was refused) of a state delta.

    `temp:` values serve this invocation through the live session; they never reach storage.
    """
    live: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    refused: list[str] = []
    for key, value in delta.items():
        if isinstance(key, str) and key.startswith(TEMP_PREFIX):
            live[key] = value
            continue
        try:
            live[key] = stored[key] = storable(key, value)
        except AdkError as exc:
            refused.append(exc.message)
    return live, stored, refused
