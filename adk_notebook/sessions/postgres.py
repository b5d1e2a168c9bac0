"""Sessions in PostgreSQL: one database that kernels, processes and machines share (extra `[postgres]`).

Tables, created on first use in the connection's schema (`adk_schema` keeps the version, for
later migrations); prefixed, so they sit beside other programs' tables in a shared database:

    adk_sessions      (app_name, user_id, id) -> session-scope state (JSONB), times
    adk_events        seq (insertion order), session key, id, Event.to_dict() JSON text, timestamp
    adk_app_states    app_name -> `app:` state (JSONB)
    adk_user_states   (app_name, user_id) -> `user:` state (JSONB)
    adk_session_runs  session key -> the lease of the run holding it (see .leases)

The contract is SqliteSessionService's: `temp:` keys are never stored; each event is one
transaction with its state changes, which merge in the database (`state || delta`), so two
processes never lose each other's update. Lease times come from the database's clock, so
machines whose clocks disagree still agree on when a lease lapses.

psycopg's async pool belongs to one event loop; the service keeps one per loop it is used
from (a kernel's loop, the private loop of `agent.run()`), opened on first use by one caller
while the others that arrive meanwhile wait for it. A pool holds at most `max_connections`
connections; a caller finding them all busy waits for one rather than opening more, so many
runs at once never exceed what the server allows.

jsonb cannot hold U+0000 (no PostgreSQL text can), which is valid JSON that a model or a tool
may put in state. Strings in the state columns are stored escaped: NUL as U+FFFF "0", U+FFFF
itself (a noncharacter, meant for no text) as U+FFFF U+FFFF; they read back exactly. Event
rows are JSON text, whose escape `\u0000` PostgreSQL keeps as it is.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Self

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg.types.json import Jsonb, set_json_loads
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        'PostgresSessionService needs psycopg 3 and its pool: pip install "adk-notebook[postgres]"',
        name="psycopg",
    ) from exc

from ..core.errors import AdkError
from ..core.events import Event, new_id
from ..core.session import Session
from ..core.state import checked_state, split_delta
from .base import BaseSessionService, event_json, session_busy, session_exists
from .leases import Heartbeat, Lease, held_by_another, lease_lost

__all__ = ["PostgresSessionService"]

SCHEMA_VERSION = 1
_JSON = json.JSONEncoder(separators=(",", ":"))
_LOCK_KEY = 0x41444B53  # "ADKS": the advisory lock that serializes creating the tables

_SCHEMA = """
CREATE TABLE IF NOT EXISTS adk_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS adk_sessions (
    app_name     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    id           TEXT NOT NULL,
    state        JSONB NOT NULL DEFAULT '{}',
    created_time DOUBLE PRECISION NOT NULL,
    updated_time DOUBLE PRECISION NOT NULL,
    created_seq  BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS adk_events (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    data       TEXT NOT NULL,
    timestamp  DOUBLE PRECISION NOT NULL,
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES adk_sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS adk_events_by_session ON adk_events (app_name, user_id, session_id, seq);
CREATE TABLE IF NOT EXISTS adk_app_states (
    app_name TEXT PRIMARY KEY,
    state    JSONB NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS adk_user_states (
    app_name TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    state    JSONB NOT NULL DEFAULT '{}',
    PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS adk_session_runs (
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    started    TEXT NOT NULL DEFAULT '',
    expires    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id)
);
"""

_KEY = "app_name = %s AND user_id = %s AND id = %s"
_RUN_KEY = "app_name = %s AND user_id = %s AND session_id = %s"
_NOW = "extract(epoch FROM clock_timestamp())::float8"
# A session's row with the app and user state it sees (and for `get`, its events), in one round trip.
_SCOPES = (
    "FROM adk_sessions s LEFT JOIN adk_app_states a ON a.app_name = s.app_name "
    "LEFT JOIN adk_user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id "
)
_WITH_SCOPES = "SELECT s.id, s.state, s.updated_time, a.state, u.state " + _SCOPES
_EVENTS_OF_S = "FROM adk_events e WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id"
_GET = (
    "SELECT s.id, s.state, s.updated_time, a.state, u.state, "
    f"ARRAY(SELECT seq {_EVENTS_OF_S} ORDER BY seq), ARRAY(SELECT data {_EVENTS_OF_S} ORDER BY seq) "
    + _SCOPES
    + "WHERE s.app_name = %s AND s.user_id = %s AND s.id = %s"
)
_MERGE_APP_WITH = (
    "a AS (INSERT INTO adk_app_states (app_name, state) SELECT %s, %s FROM s "
    "ON CONFLICT (app_name) DO UPDATE SET state = adk_app_states.state || excluded.state)"
)
_MERGE_USER_WITH = (
    "u AS (INSERT INTO adk_user_states (app_name, user_id, state) SELECT %s, %s, %s FROM s "
    "ON CONFLICT (app_name, user_id) DO UPDATE SET state = adk_user_states.state || excluded.state)"
)
_MERGE_APP = (
    "INSERT INTO adk_app_states (app_name, state) VALUES (%s, %s) "
    "ON CONFLICT (app_name) DO UPDATE SET state = adk_app_states.state || excluded.state RETURNING state"
)
_MERGE_USER = (
    "INSERT INTO adk_user_states (app_name, user_id, state) VALUES (%s, %s, %s) "
    "ON CONFLICT (app_name, user_id) DO UPDATE SET state = adk_user_states.state || excluded.state RETURNING state"
)


class PostgresSessionService(BaseSessionService):
    """Keeps sessions, their events and the app/user state in a PostgreSQL database.

    Args:
        dsn: A libpq connection string or URL, e.g. "postgresql://adk@db.internal/agents"
            (a password in it never shows in reprs or errors; better, use ~/.pgpass or PGPASSWORD).
        lease_seconds: How long a run's claim on its session outlives its last heartbeat (see
            .leases): the longest another process waits for a session whose run died unseen.
        max_connections: The most connections each event loop's pool opens.
        timeout: Seconds to wait for a connection (the server down, the pool exhausted).

    Use it as an async context manager, or `await service.aclose()` when done.
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease_seconds: float = 30.0,
        max_connections: int = 10,
        timeout: float = 30.0,
    ) -> None:
        self._dsn = dsn
        self._max, self._timeout = max_connections, timeout
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        # Held while a loop's pool opens (and the tables are made), so its callers share one pool.
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._tables_ready = False
        self._heartbeat = Heartbeat(self._renew, lease_seconds)
        # The heartbeat thread's own connection (the pools belong to event loops).
        self._renewer: psycopg.Connection[Any] | None = None
        self._renewer_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresSessionService({_shown(self._dsn)!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool of this event loop, forget those of loops that ended, stop the heartbeat."""
        self._heartbeat.stop()
        loop = asyncio.get_running_loop()
        pools, self._pools = self._pools, {}
        self._opening.pop(loop, None)
        for pool_loop, pool in pools.items():
            if pool_loop is loop:
                await pool.close()
            elif not pool_loop.is_closed():
                self._pools[pool_loop] = pool  # still in use there
        with self._renewer_lock:
            if self._renewer is not None:
                self._renewer.close()
                self._renewer = None

    async def create(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        session_id = session_id or new_id()
        app, user, own = split_delta(checked_state(state or {}))
        async with self._transaction() as conn:
            inserted = await conn.execute(
                "INSERT INTO adk_sessions (app_name, user_id, id, state, created_time, updated_time) "
                f"VALUES (%s, %s, %s, %s, {_NOW}, {_NOW}) ON CONFLICT DO NOTHING RETURNING updated_time",
                (app_name, user_id, session_id, _jsonb(own)),
            )
            created = await inserted.fetchone()
            if created is None:
                raise session_exists(app_name, user_id, session_id)
            app_state = await _scope(
                conn,
                _MERGE_APP,
                "SELECT state FROM adk_app_states WHERE app_name = %s",
                (app_name,),
                app,
            )
            user_state = await _scope(
                conn,
                _MERGE_USER,
                "SELECT state FROM adk_user_states WHERE app_name = %s AND user_id = %s",
                (app_name, user_id),
                user,
            )
        return Session(
            session_id,
            app_name,
            user_id,
            state={**own, **app_state, **user_state},
            last_update_time=created[0],
        )

    async def get(self, *, app_name: str, user_id: str, session_id: str) -> Session | None:
        # One statement: the state and the events of one moment.
        async with self._statement() as conn:
            found = await conn.execute(_GET, (app_name, user_id, session_id))
            row = await found.fetchone()
        if row is None:
            return None
        events = [_read_event(self, session_id, seq, data) for seq, data in zip(row[5], row[6], strict=True)]
        return Session(
            session_id,
            app_name,
            user_id,
            state=_merged(row),
            events=events,
            last_update_time=row[2],
        )

    async def list(self, *, app_name: str, user_id: str) -> list[Session]:
        async with self._statement() as conn:
            found = await conn.execute(
                _WITH_SCOPES + "WHERE s.app_name = %s AND s.user_id = %s ORDER BY s.created_seq",
                (app_name, user_id),
            )
            rows = await found.fetchall()
        return [Session(row[0], app_name, user_id, state=_merged(row), last_update_time=row[2]) for row in rows]

    async def delete(self, *, app_name: str, user_id: str, session_id: str) -> None:
        # Its events go with it (ON DELETE CASCADE).
        async with self._statement() as conn:
            await conn.execute(
                f"DELETE FROM adk_sessions WHERE {_KEY}",
                (app_name, user_id, session_id),
            )

    async def _store_event(
        self,
        session: Session,
        event: Event,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        session_delta: dict[str, Any],
    ) -> None:
        key = (session.app_name, session.user_id, session.id)
        data = event_json(event, "PostgreSQL")
        # One statement, so one round trip and atomic; every part hangs on the session's row, so
        # an event for a session deleted while running is dropped whole.
        parts = [f"s AS (UPDATE adk_sessions SET state = state || %s, updated_time = %s WHERE {_KEY} RETURNING 1)"]
        params: list[Any] = [_jsonb(session_delta), event.timestamp, *key]
        if app_delta:
            parts.append(_MERGE_APP_WITH)
            params += [session.app_name, _jsonb(app_delta)]
        if user_delta:
            parts.append(_MERGE_USER_WITH)
            params += [session.app_name, session.user_id, _jsonb(user_delta)]
        statement = (
            "WITH " + ", ".join(parts) + " INSERT INTO adk_events (app_name, user_id, session_id, id, data, "
            "timestamp) SELECT %s, %s, %s, %s, %s, %s FROM s"
        )
        async with self._statement() as conn:
            if self._heartbeat.may_have_lapsed(event.invocation_id):
                await self._confirm_lease(conn, key, event.invocation_id)
            await conn.execute(statement, (*params, *key, event.id, data, event.timestamp))

    async def _confirm_lease(self, conn: psycopg.AsyncConnection[Any], key: tuple[str, str, str], run_id: str) -> None:
        """Renew run `run_id`'s lease before it writes, or raise `lease_lost` when another run took it."""
        renewed = await conn.execute(
            f"UPDATE adk_session_runs SET expires = {_NOW} + %s WHERE {_RUN_KEY} AND run_id = %s",
            (self._heartbeat.seconds, *key, run_id),
        )
        if not renewed.rowcount:
            raise lease_lost(key, run_id, self._heartbeat.seconds)
        self._heartbeat.confirmed([run_id])

    async def begin_run(self, session: Session, run_id: str) -> None:
        """Lease the session in the database; an expired lease, or a dead local process's, is taken over."""
        key = (session.app_name, session.user_id, session.id)
        async with self._transaction() as conn:
            # Lock the session's row, so two claimants of one session take turns here.
            await conn.execute(f"SELECT 1 FROM adk_sessions WHERE {_KEY} FOR UPDATE", key)
            found = await conn.execute(
                f"SELECT {_NOW}, run_id, pid, host, started, expires FROM (SELECT 1) AS one "
                f"LEFT JOIN adk_session_runs ON {_RUN_KEY}",
                key,
            )
            now, *row = await found.fetchone() or (0.0, None)
            if held := held_by_another(row, run_id, now):
                raise session_busy(*key, *held.holder(now))
            mine = Lease.mine(run_id, self._heartbeat.seconds, now)
            await conn.execute(
                "INSERT INTO adk_session_runs (app_name, user_id, session_id, run_id, pid, host, started, expires) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET "
                "run_id = excluded.run_id, pid = excluded.pid, host = excluded.host, started = excluded.started, "
                "expires = excluded.expires",
                (*key, run_id, mine.pid, mine.host, mine.started, mine.expires),
            )
        self._heartbeat.hold(run_id)

    async def end_run(self, session: Session, run_id: str) -> None:
        self._heartbeat.drop(run_id)
        async with self._statement() as conn:
            await conn.execute(
                f"DELETE FROM adk_session_runs WHERE {_RUN_KEY} AND run_id = %s",
                (session.app_name, session.user_id, session.id, run_id),
            )

    async def release_run(self, *, app_name: str, user_id: str, session_id: str) -> bool:
        """Drop the lease of the run holding a session, whoever holds it; False when none did.

        For a lease not to wait out (a run on another machine that is gone for good, or a run of
        this process whose task is stuck); otherwise two runs will write to one conversation.
        """
        async with self._statement() as conn:
            deleted = await conn.execute(
                f"DELETE FROM adk_session_runs WHERE {_RUN_KEY}",
                (app_name, user_id, session_id),
            )
            return deleted.rowcount > 0

    def _renew(self, run_ids: Collection[str], expires: float) -> Collection[str]:
        """The heartbeat (a thread): push the leases on by their length, by the database's clock."""
        with self._renewer_lock:
            if self._renewer is None or self._renewer.closed:
                self._renewer = psycopg.connect(
                    self._dsn,
                    autocommit=True,
                    connect_timeout=max(1, int(self._timeout)),
                )
            try:
                renewed = self._renewer.execute(
                    f"UPDATE adk_session_runs SET expires = {_NOW} + %s WHERE run_id = ANY(%s) RETURNING run_id",
                    (self._heartbeat.seconds, list(run_ids)),
                )
                return [run_id for (run_id,) in renewed.fetchall()]
            except psycopg.Error:
                self._renewer.close()
                raise

    def _transaction(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        """A transaction on a pooled connection of this loop, for work of several statements."""
        return self._connection(atomic=True)

    def _statement(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        """A pooled connection in autocommit, for one statement (atomic by itself): no BEGIN, no COMMIT."""
        return self._connection(atomic=False)

    @asynccontextmanager
    async def _connection(self, *, atomic: bool) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection of this loop; psycopg errors come out as AdkError."""
        try:
            pool = await self._pool()
            async with pool.connection(timeout=self._timeout) as conn:
                if atomic:
                    async with conn.transaction():
                        yield conn
                else:
                    yield conn
        except PoolTimeout as exc:
            raise AdkError.session(
                f"Could not get a connection to the session database {_shown(self._dsn)!r} within "
                f"{self._timeout:g}s: {exc}. Check that the server runs and accepts this DSN, or pass a larger "
                "`timeout=` (or `max_connections=`) to PostgresSessionService.",
                code="session_db_unreachable",
                category="unavailable",
            ) from exc
        except psycopg.Error as exc:
            raise AdkError.session(
                f"The session database {_shown(self._dsn)!r} failed: {_hide(self._dsn, str(exc))}",
                code="session_db_error",
                category="internal",
            ) from exc

    async def _pool(self) -> AsyncConnectionPool:
        """This loop's pool, the tables made; the first caller opens it, those arriving meanwhile wait."""
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None and self._tables_ready:
            return pool
        async with self._opening.setdefault(loop, asyncio.Lock()):
            pool = self._pools.get(loop)
            if pool is None:
                for ended in [other for other in self._pools if other.is_closed()]:
                    del self._pools[ended]  # its connections went with its loop
                    self._opening.pop(ended, None)
                pool = self._pools[loop] = await self._open_pool()
            if not self._tables_ready:
                async with pool.connection(timeout=self._timeout) as conn:
                    await _create_tables(conn, _shown(self._dsn))
                self._tables_ready = True
        return pool

    async def _open_pool(self) -> AsyncConnectionPool:
        pool = AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._max,
            open=False,
            timeout=self._timeout,
            kwargs={"autocommit": True},
            configure=_configure,
            name="adk-sessions",
        )
        try:
            await pool.open(wait=True, timeout=self._timeout)
        except BaseException:
            # No workers left retrying a server that is not there.
            await pool.close()
            raise
        return pool


async def _create_tables(conn: psycopg.AsyncConnection[Any], shown: str) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                await conn.execute(statement)
        found = await (await conn.execute("SELECT max(version) FROM adk_schema")).fetchone()
        version = found[0] if found else None
        if version is None:
            await conn.execute("INSERT INTO adk_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
        elif version > SCHEMA_VERSION:
            raise AdkError.session(
                f"The session tables in {shown!r} were written by a newer adk-notebook (schema version {version}; "
                f"this one reads up to {SCHEMA_VERSION}). Upgrade adk-notebook, or use another database or schema.",
                code="session_db_too_new",
                category="unsupported",
            )


async def _scope(
    conn: psycopg.AsyncConnection[Any],
    merge: str,
    select: str,
    key: tuple[str, ...],
    delta: dict[str, Any],
) -> dict[str, Any]:
    """One scoped state after merging `delta` into it (or as it is, when there is nothing to merge)."""
    found = await conn.execute(merge, (*key, _jsonb(delta))) if delta else await conn.execute(select, key)
    row = await found.fetchone()
    return dict(row[0]) if row else {}


def _merged(row: tuple[Any, ...]) -> dict[str, Any]:
    """Session, then app, then user state: the order a session sees them in."""
    return {**row[1], **(row[3] or {}), **(row[4] or {})}


_NUL, _ESC = "\x00", "\uffff"
_ESCAPES = re.compile("\uffff([\uffff0])")


def _jsonb(value: dict[str, Any]) -> Jsonb:
    return Jsonb(value, dumps=_dumps)


def _dumps(value: dict[str, Any]) -> str:
    """State as a jsonb column keeps it (see the module docstring); the walk only when it holds NUL or U+FFFF."""
    text = _JSON.encode(value)  # ASCII: the two show as \u0000 and \uffff
    return _JSON.encode(_escaped(value)) if "\\u0000" in text or "\\uffff" in text else text


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(_ESC, _ESC + _ESC).replace(_NUL, _ESC + "0")
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    return value


def _loads(data: bytes | str) -> Any:
    """A jsonb column's value as it was given to `_dumps` (the server sends U+FFFF unescaped)."""
    value = json.loads(data)
    escaped = _ESC.encode() in data if isinstance(data, bytes) else _ESC in data
    return _unescaped(value) if escaped else value


def _unescaped(value: Any) -> Any:
    if isinstance(value, str):
        return _ESCAPES.sub(lambda m: _ESC if m[1] == _ESC else _NUL, value) if _ESC in value else value
    if isinstance(value, dict):
        return {_unescaped(k): _unescaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescaped(v) for v in value]
    return value


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    """Each pooled connection reads jsonb through `_loads`."""
    set_json_loads(_loads, conn)


def _read_event(service: PostgresSessionService, session_id: str, seq: int, data: str) -> Event:
    try:
        return Event.from_dict(json.loads(data))
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise AdkError.session(
            f"{service!r} has a damaged row: event seq {seq} of session {session_id!r} is not an event this "
            f"version can read ({type(exc).__name__}: {exc}). Remove it (`DELETE FROM adk_events WHERE seq = {seq}`) "
            "or delete the session.",
            code="session_db_damaged",
            category="internal",
        ) from exc


# The libpq parameters that are secrets: the login's password, and the one that decrypts the SSL key.
_SECRETS = ("password", "sslpassword")


def _shown(dsn: str) -> str:
    """The DSN without its secrets, for reprs and errors (whether they came in a URL or as key=value)."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<an unreadable DSN>"
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None and k not in _SECRETS})


def _hide(dsn: str, text: str) -> str:
    """`text` with the DSN's secrets, should a server message echo one, blotted out."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return text
    for secret in (str(params[k]) for k in _SECRETS if params.get(k)):
        text = text.replace(secret, "***")
    return text
