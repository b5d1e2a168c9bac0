"""Sessions in a SQLite file: persistent, embedded, standard library only.

Tables (schema version 4, kept in `PRAGMA user_version`):

    sessions      (app_name, user_id, id) -> session-scope state JSON, created/updated times
    events        seq (insertion order), session key, id, Event.to_dict() JSON, timestamp
    app_states    app_name -> `app:` state JSON
    user_states   (app_name, user_id) -> `user:` state JSON
    session_runs  session key -> the lease of the run holding it: run id, process id and start, host,
                  expiry (see .leases; by the clocks of the machines sharing the file)

`temp:` keys never reach the file. Each stored event is one transaction together with its
state changes, so a crash never keeps one without the other. sqlite3 is synchronous, but every
call is small (well under a millisecond), so the async methods do the work on the calling
thread; one connection, guarded by a lock, serves every thread (the notebook runs agents on
worker threads).
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import threading
import time
import weakref
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any, Self

from ..core.errors import AdkError
from ..core.events import Event, new_id
from ..core.json_value import repair_text
from ..core.session import Session
from ..core.state import checked_state, split_delta
from .base import BaseSessionService, event_json, session_busy, session_exists
from .leases import Heartbeat, Lease, held_by_another, lease_lost

__all__ = ["SqliteSessionService"]

_SCHEMA_VERSION = 4  # 2 -> 3: session_runs.started; 3 -> 4: session_runs.expires (leases)
DEFAULT_LEASE = 30.0  # seconds; also what a claim written without an expiry gets
# One encoder (dumps() builds one per call). ASCII output: a surrogate that got past
# make_sendable (in an event's metadata, say) becomes an escape, not text SQLite cannot encode.
_JSON = json.JSONEncoder(separators=(",", ":"))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    app_name     TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    id           TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT '{}',
    created_time REAL NOT NULL,
    updated_time REAL NOT NULL,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS events (
    seq        INTEGER PRIMARY KEY,
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    data       TEXT NOT NULL,
    timestamp  REAL NOT NULL,
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (app_name, user_id, session_id, seq);
CREATE TABLE IF NOT EXISTS app_states (
    app_name TEXT PRIMARY KEY,
    state    TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS user_states (
    app_name TEXT NOT NULL,
    user_id  TEXT NOT NULL,
    state    TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS session_runs (
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    started    TEXT NOT NULL DEFAULT '',
    expires    REAL NOT NULL DEFAULT ((julianday('now') - 2440587.5) * 86400.0 + 30),
    PRIMARY KEY (app_name, user_id, session_id)
);
"""

# One probe per table: a file whose tables share our names but not our columns fails here.
_PROBES = (
    "SELECT app_name, user_id, id, state, created_time, updated_time FROM sessions LIMIT 0",
    "SELECT seq, app_name, user_id, session_id, id, data, timestamp FROM events LIMIT 0",
    "SELECT app_name, state FROM app_states LIMIT 0",
    "SELECT app_name, user_id, state FROM user_states LIMIT 0",
    "SELECT app_name, user_id, session_id, run_id, pid, host, started, expires FROM session_runs LIMIT 0",
)

_SESSION_KEY = "app_name = ? AND user_id = ? AND id = ?"
_APP_STATE = "SELECT state FROM app_states WHERE app_name = ?"
_USER_STATE = "SELECT state FROM user_states WHERE app_name = ? AND user_id = ?"
_PUT_APP_STATE = (
    "INSERT INTO app_states (app_name, state) VALUES (?, ?) ON CONFLICT (app_name) DO UPDATE SET state = excluded.state"
)
_PUT_USER_STATE = (
    "INSERT INTO user_states (app_name, user_id, state) VALUES (?, ?, ?) "
    "ON CONFLICT (app_name, user_id) DO UPDATE SET state = excluded.state"
)
_SCOPED = {"app_states": (_APP_STATE, _PUT_APP_STATE), "user_states": (_USER_STATE, _PUT_USER_STATE)}


class SqliteSessionService(BaseSessionService):
    """Keeps sessions, their events and the app/user state in one SQLite file.

    Args:
        path: The database file; it is created (with its tables) when missing, but its folder
            must exist. Several services, threads or processes may share one file.
        timeout: Seconds to wait for another connection's write lock before giving up.
        lease_seconds: How long a run's claim on its session outlives its last heartbeat (see
            .leases): the longest another process waits for a session whose run died
            unseen (on another machine sharing the file).

    Use it as a context manager, or call `close()` when done:

        with SqliteSessionService("sessions.db") as sessions:
            runner = Runner(app_name="demo", agent=agent, session_service=sessions)
    """

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 5.0, lease_seconds: float = DEFAULT_LEASE
    ) -> None:
        self.path = os.path.expanduser(os.fspath(path))
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = _open(self.path, timeout)
        self._heartbeat = Heartbeat(self._renew, lease_seconds)
        # Closed at interpreter exit too: a connection left open keeps the -wal and -shm files.
        self._closer = weakref.finalize(self, _close, self._lock, self._conn)

    def __repr__(self) -> str:
        closed = ", closed" if self._conn is None else ""
        return f"SqliteSessionService({self.path!r}{closed})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the last one to close folds the WAL back into the file). Idempotent.

        A service still open when the program ends is closed then (or when it is garbage collected).
        The `-wal` and `-shm` files stay while another connection to the file is open: another
        service, say one a notebook cell made before it was run again (Out[] still holds it).
        """
        self._heartbeat.stop()
        with self._lock:
            self._conn = None
        self._closer()

    async def create(
        self, *, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        session_id = session_id or new_id()
        app, user, own = split_delta(checked_state(state or {}))
        own_json = _JSON.encode(own)
        now = time.time()
        with self._transaction(write=True) as conn:
            if conn.execute(f"SELECT 1 FROM sessions WHERE {_SESSION_KEY}", (app_name, user_id, session_id)).fetchone():
                raise session_exists(app_name, user_id, session_id)
            conn.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, created_time, updated_time) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (app_name, user_id, session_id, own_json, now, now),
            )
            app_state = _merge(self.path, conn, "app_states", (app_name,), app)
            user_state = _merge(self.path, conn, "user_states", (app_name, user_id), user)
        return Session(session_id, app_name, user_id, state={**own, **app_state, **user_state}, last_update_time=now)

    async def get(self, *, app_name: str, user_id: str, session_id: str) -> Session | None:
        key = (app_name, user_id, session_id)
        with self._transaction() as conn:
            row = conn.execute(f"SELECT state, updated_time FROM sessions WHERE {_SESSION_KEY}", key).fetchone()
            if row is None:
                return None
            scoped = _scoped_state(self.path, conn, app_name, user_id)
            rows = conn.execute(
                "SELECT seq, id, data FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? ORDER BY seq",
                key,
            ).fetchall()
        events = [_read_event(self.path, key, *event_row) for event_row in rows]
        state = {**_read_state(self.path, row[0], "sessions", key), **scoped}
        return Session(session_id, app_name, user_id, state=state, events=events, last_update_time=row[1])

    async def list(self, *, app_name: str, user_id: str) -> list[Session]:
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT id, state, updated_time FROM sessions WHERE app_name = ? AND user_id = ? ORDER BY rowid",
                (app_name, user_id),
            ).fetchall()
            scoped = _scoped_state(self.path, conn, app_name, user_id) if rows else {}
        return [
            Session(
                sid,
                app_name,
                user_id,
                state={**_read_state(self.path, state, "sessions", (app_name, user_id, sid)), **scoped},
                last_update_time=updated,
            )
            for sid, state, updated in rows
        ]

    async def delete(self, *, app_name: str, user_id: str, session_id: str) -> None:
        with self._transaction(write=True) as conn:  # its events go with it (ON DELETE CASCADE)
            conn.execute(f"DELETE FROM sessions WHERE {_SESSION_KEY}", (app_name, user_id, session_id))

    async def _store_event(
        self,
        session: Session,
        event: Event,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        session_delta: dict[str, Any],
    ) -> None:
        data = event_json(event, "SQLite")
        key = (session.app_name, session.user_id, session.id)
        run_id = event.invocation_id
        with self._transaction(write=True) as conn:
            if self._heartbeat.may_have_lapsed(run_id):  # then the lease decides, in this transaction
                renewed = conn.execute(
                    "UPDATE session_runs SET expires = ? WHERE app_name = ? AND user_id = ? AND session_id = ? "
                    "AND run_id = ?",
                    (time.time() + self._heartbeat.seconds, *key, run_id),
                )
                if not renewed.rowcount:
                    raise lease_lost(key, run_id, self._heartbeat.seconds)
                self._heartbeat.confirmed([run_id])
            row = conn.execute(f"SELECT state FROM sessions WHERE {_SESSION_KEY}", key).fetchone()
            if row is None:  # deleted while running: nothing left to keep it in
                return
            if session_delta:
                state = _read_state(self.path, row[0], "sessions", key)
                state.update(session_delta)
                conn.execute(
                    f"UPDATE sessions SET state = ?, updated_time = ? WHERE {_SESSION_KEY}",
                    (_JSON.encode(state), event.timestamp, *key),
                )
            else:
                conn.execute(f"UPDATE sessions SET updated_time = ? WHERE {_SESSION_KEY}", (event.timestamp, *key))
            conn.execute(
                "INSERT INTO events (app_name, user_id, session_id, id, data, timestamp) VALUES (?, ?, ?, ?, ?, ?)",
                (*key, event.id, data, event.timestamp),
            )
            if app_delta:
                _merge(self.path, conn, "app_states", (session.app_name,), app_delta)
            if user_delta:
                _merge(self.path, conn, "user_states", (session.app_name, session.user_id), user_delta)

    async def begin_run(self, session: Session, run_id: str) -> None:
        """Lease the session in the file, so runs in other processes and machines see the claim.

        An expired lease, or one whose process on this machine is gone, is taken over (see .leases).
        """
        key = (session.app_name, session.user_id, session.id)
        now = time.time()
        mine = Lease.mine(run_id, self._heartbeat.seconds, now)
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT run_id, pid, host, started, expires FROM session_runs "
                "WHERE app_name = ? AND user_id = ? AND session_id = ?",
                key,
            ).fetchone()
            if held := held_by_another(row, run_id, now):
                raise session_busy(*key, *held.holder(now))
            conn.execute(
                "INSERT OR REPLACE INTO session_runs (app_name, user_id, session_id, run_id, pid, host, started, expires) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, run_id, mine.pid, mine.host, mine.started, mine.expires),
            )
        self._heartbeat.hold(run_id)

    async def end_run(self, session: Session, run_id: str) -> None:
        self._heartbeat.drop(run_id)
        with self._transaction(write=True) as conn:
            conn.execute(
                "DELETE FROM session_runs WHERE app_name = ? AND user_id = ? AND session_id = ? AND run_id = ?",
                (session.app_name, session.user_id, session.id, run_id),
            )

    def _renew(self, run_ids: Collection[str], expires: float) -> Collection[str]:
        with self._transaction(write=True) as conn:
            return [
                r
                for r in run_ids
                if conn.execute("UPDATE session_runs SET expires = ? WHERE run_id = ?", (expires, r)).rowcount
            ]

    async def release_run(self, *, app_name: str, user_id: str, session_id: str) -> bool:
        """Drop the claim of the run holding a session, whoever holds it; False when none did.

        For a claim not to wait out: one left by a process on another machine sharing this
        file, whose lease has not lapsed yet, or a run of this process whose task is stuck.
        Only call it when that run is really gone, or two runs will write to one conversation.
        """
        with self._transaction(write=True) as conn:
            cursor = conn.execute(
                "DELETE FROM session_runs WHERE app_name = ? AND user_id = ? AND session_id = ?",
                (app_name, user_id, session_id),
            )
            return cursor.rowcount > 0

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction under the lock; sqlite3 errors come out as AdkError."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise AdkError.session(
                    f"{self!r} is closed. Open a new one: `SqliteSessionService({self.path!r})`.",
                    code="session_service_closed",
                    category="invalid_input",
                )
            try:
                # IMMEDIATE takes the write lock up front, so a read-modify-write of the state
                # cannot lose another process's update.
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise _storage_error(self.path, exc, self._timeout) from exc
                if isinstance(exc, UnicodeEncodeError):  # sqlite3 could not encode a parameter as UTF-8
                    raise _not_text(self.path, exc) from exc
                raise


def _close(lock: threading.Lock, conn: sqlite3.Connection) -> None:
    """Close `conn` once no transaction holds it (at exit, one on a daemon thread gets a moment to end)."""
    locked = lock.acquire(timeout=1.0)
    try:
        conn.close()
    finally:
        if locked:
            lock.release()


def _open(path: str, timeout: float) -> sqlite3.Connection:
    if path not in ("", ":memory:"):
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise AdkError.session(
                f"Cannot create the session database {path!r}: the folder {folder!r} does not exist. "
                f"Create it first (`Path({folder!r}).mkdir(parents=True)`) or pass a path in an existing folder.",
                code="session_db_folder_missing",
                category="invalid_input",
            )
        if os.path.isdir(path):
            raise AdkError.session(
                f"{path!r} is a folder; SqliteSessionService needs a file path, e.g. "
                f"{os.path.join(path, 'sessions.db')!r}.",
                code="session_db_is_folder",
                category="invalid_input",
            )
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")  # the first read of the file: a non-database fails here
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > _SCHEMA_VERSION:
            raise AdkError.session(
                f"{path!r} was written by a newer adk-notebook (schema version {version}; this one reads up to "
                f"{_SCHEMA_VERSION}). Upgrade adk-notebook, or pass another path.",
                code="session_db_too_new",
                category="unsupported",
            )
        if version < _SCHEMA_VERSION:
            _upgrade(conn)
        for probe in _PROBES:
            conn.execute(probe)
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.Error):
            raise _storage_error(path, exc, timeout) from exc
        raise
    return conn


def _upgrade(conn: sqlite3.Connection) -> None:
    """Create what is missing, in one transaction: the tables, and the columns later versions added."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            conn.execute(statement)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(session_runs)")}
        if "started" not in columns:  # a version 2 file
            conn.execute("ALTER TABLE session_runs ADD COLUMN started TEXT NOT NULL DEFAULT ''")
        if "expires" not in columns:  # a version 2 or 3 file: its claims get a default lease from now
            conn.execute("ALTER TABLE session_runs ADD COLUMN expires REAL NOT NULL DEFAULT 0")
            conn.execute("UPDATE session_runs SET expires = ?", (time.time() + DEFAULT_LEASE,))
        conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise


def _storage_error(path: str, exc: sqlite3.Error, timeout: float) -> AdkError:
    name = getattr(exc, "sqlite_errorname", "")
    if name in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in str(exc):
        return AdkError.session(
            f"{path!r} is not a SQLite database (or is damaged): {exc}. Pass a new file name, or the path of a "
            "database that SqliteSessionService created.",
            code="session_db_invalid",
            category="invalid_input",
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return AdkError.session(
            f"The session database {path!r} stayed locked by another connection for {timeout:g}s. Retry, or pass "
            "a larger `timeout=` to SqliteSessionService.",
            code="session_db_busy",
            category="unavailable",
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_PERM", "SQLITE_CANTOPEN")):
        folder = os.path.dirname(os.path.abspath(path))
        return AdkError.session(
            f"Cannot open or write the session database {path!r} ({exc}): check that its folder {folder!r} lets "
            "this user create files and that the file, if it exists, is readable and writable; or pass another path.",
            code="session_db_not_writable",
            category="invalid_input",
        )
    if isinstance(exc, sqlite3.OperationalError) and "no such" in str(exc):
        return AdkError.session(
            f"{path!r} holds tables that SqliteSessionService did not create ({exc}). Pass another path.",
            code="session_db_invalid",
            category="invalid_input",
        )
    return AdkError.session(
        f"The session database {path!r} failed: {exc}.", code="session_db_error", category="internal"
    )


def _merge(
    path: str, conn: sqlite3.Connection, table: str, key: tuple[str, ...], delta: dict[str, Any]
) -> dict[str, Any]:
    """Read-modify-write one scoped state row inside the caller's transaction; returns the new state."""
    select, upsert = _SCOPED[table]
    row = conn.execute(select, key).fetchone()
    state = _read_state(path, row[0], table, key) if row else {}
    if delta:
        state.update(delta)
        conn.execute(upsert, (*key, _JSON.encode(state)))
    return state


def _scoped_state(path: str, conn: sqlite3.Connection, app_name: str, user_id: str) -> dict[str, Any]:
    """App state then user state, merged in the order sessions see them."""
    app = conn.execute(_APP_STATE, (app_name,)).fetchone()
    user = conn.execute(_USER_STATE, (app_name, user_id)).fetchone()
    return {
        **(_read_state(path, app[0], "app_states", (app_name,)) if app else {}),
        **(_read_state(path, user[0], "user_states", (app_name, user_id)) if user else {}),
    }


# -- rows damaged by hand, by another program or by a disk: an error that says which and what to do --
_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _read_state(path: str, text: Any, table: str, key: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object of a state row (`key`: its app name, user id, session id, as far as `table` has them)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        problem = f"is not JSON ({exc})"
    else:
        if type(value) is dict:
            return value
        problem = f"is {_JSON_KINDS.get(type(value), 'null')} in JSON, not an object"
    what = {
        "sessions": f"the session state of session {key[-1]!r}",
        "user_states": f"the user state of user {key[-1]!r}",
        "app_states": f"the app state of app {key[0]!r}",
    }[table]
    where = " AND ".join(
        f"{column} = {_sql_text(value)}" for column, value in zip(("app_name", "user_id", "id"), key, strict=False)
    )
    raise _damaged(
        path,
        f"{what} ({table} table) {problem}",
        f"reset that state: `sqlite3 {shlex.quote(path)} \"UPDATE {table} SET state = '{{}}' WHERE {where}\"`",
    )


def _read_event(path: str, key: tuple[str, str, str], seq: int, event_id: str, data: Any) -> Event:
    try:
        value = json.loads(data)
    except (TypeError, ValueError, RecursionError) as exc:
        problem = f"is not JSON ({exc})"
    else:
        if type(value) is not dict:
            problem = f"is {_JSON_KINDS.get(type(value), 'null')} in JSON, not an object"
        else:
            try:
                return Event.from_dict(value)
            except KeyError as exc:
                problem = f"has no {exc.args[0]!r} where an event needs one"
            except (TypeError, ValueError, AttributeError, RecursionError) as exc:
                problem = f"is not an event this version can read ({type(exc).__name__}: {exc})"
    app_name, user_id, session_id = key
    raise _damaged(
        path,
        f"event {event_id!r} of session {session_id!r} (events.seq {seq}) {problem}",
        f'remove that event (`sqlite3 {shlex.quote(path)} "DELETE FROM events WHERE seq = {seq}"`) or the whole session '
        f"(`await service.delete(app_name={app_name!r}, user_id={user_id!r}, session_id={session_id!r})`)",
    )


def _damaged(path: str, what: str, remedy: str) -> AdkError:
    return AdkError.session(
        f"The session database {path!r} has a damaged row: {what}. Restore the file from a backup, or {remedy}.",
        code="session_db_damaged",
        category="internal",
    )


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _not_text(path: str, exc: UnicodeEncodeError) -> AdkError:
    text = exc.object
    return AdkError.session(
        f"{text!r} cannot be kept in the session database {path!r}: it holds {text[exc.start : exc.end]!r}, half of "
        f"a UTF-16 surrogate pair, which is not text. Pass app names, user ids and session ids that are valid "
        f"text, e.g. {repair_text(text)!r}.",
        code="invalid_text",
        category="invalid_input",
    )
