"""SqliteSessionService beyond the contract (tests/sessions): the file, atomicity, errors, threads."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import subprocess
import threading
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

import pytest
from session_stores import rich_events

import adk_notebook
from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    SqliteSessionService,
)

APP = "demo"


@pytest.fixture
def db(tmp_path):
    with SqliteSessionService(tmp_path / "sessions.db") as service:
        yield service


def raw_db(path: Path) -> closing[sqlite3.Connection]:
    """A plain sqlite3 connection, to look at (or tamper with) the file itself."""
    return closing(sqlite3.connect(path, isolation_level=None))


def test_exported_from_the_package_root():
    assert "SqliteSessionService" in adk_notebook.__all__
    assert adk_notebook.__all__ == sorted(adk_notebook.__all__)


async def test_temp_values_never_reach_the_file(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionService(path) as service:
        session = await service.create(app_name=APP, user_id="u1", state={"temp:init": "temp-initial-51c7"})
        await service.append_event(
            session,
            Event(
                "agent", actions=EventActions(state_delta={"temp:token": "temp-value-9f3a", "kept": "kept-value-2b8e"})
            ),
        )
        files = [p for p in tmp_path.iterdir() if p.name.startswith("sessions.db")]
        raw = b"".join(p.read_bytes() for p in files)  # main file and WAL while open
        assert b"kept-value-2b8e" in raw
        assert b"temp-value-9f3a" not in raw and b"temp-initial-51c7" not in raw
        assert b"temp:token" not in raw and b"temp:init" not in raw
    raw = path.read_bytes()  # after close the WAL is folded back into the file
    assert b"kept-value-2b8e" in raw and b"temp-value-9f3a" not in raw and b"temp-initial-51c7" not in raw


async def test_event_and_state_are_one_transaction(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionService(path) as service:
        session = await service.create(app_name=APP, user_id="u1", state={"n": 0})
        with raw_db(path) as raw:  # make the last step of the transaction fail
            raw.execute("CREATE TRIGGER boom BEFORE INSERT ON user_states BEGIN SELECT RAISE(ABORT, 'boom'); END")
        with pytest.raises(AdkError) as info:
            await service.append_event(
                session,
                Event(
                    "agent", Content.model("hi"), actions=EventActions(state_delta={"n": 1, "app:a": 1, "user:u": 1})
                ),
            )
        assert info.value.component == "session"
    with SqliteSessionService(path) as service:
        got = await service.get(app_name=APP, user_id="u1", session_id=session.id)
        assert got.events == [] and got.state == {"n": 0}


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(AdkError) as info:
        SqliteSessionService(tmp_path / "no" / "such" / "sessions.db")
    error = info.value
    assert error.component == "session" and error.category == "invalid_input"
    assert "does not exist" in error.message and "mkdir" in error.message
    assert not (tmp_path / "no").exists()


@contextmanager
def unwritable_folder(tmp_path: Path):
    """A folder in which creating a file really fails, for this user (root ignores permission bits)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() == 0:  # the immutable attribute stops root too
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            pytest.skip("running as root where chattr +i is not possible: no folder is unwritable")
    else:
        folder.chmod(0o555)
    try:
        with pytest.raises(OSError):  # the premise: nothing can be created here
            (folder / "probe").touch()
        yield folder
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


@pytest.mark.parametrize("where", ["locked folder", "/proc"])
def test_a_database_that_cannot_be_created_is_a_clear_error(tmp_path, where):
    with ExitStack() as stack:
        folder = stack.enter_context(unwritable_folder(tmp_path)) if where == "locked folder" else Path("/proc")
        path = folder / "sessions.db"
        with pytest.raises(AdkError) as info:
            SqliteSessionService(path)
    error = info.value
    assert (error.component, error.category, error.code) == ("session", "invalid_input", "session_db_not_writable")
    assert repr(str(path)) in error.message and repr(str(folder)) in error.message
    assert "another path" in error.message


def damage(path: Path, sql: str) -> None:
    with raw_db(path) as raw:
        raw.execute(sql)


DAMAGED_ROWS = {
    "truncated event JSON": (
        "UPDATE events SET data = substr(data, 1, length(data) / 2) WHERE seq = 2",
        "events.seq 2",
        "DELETE FROM events WHERE seq = 2",
    ),
    "an event that is a JSON list": (
        "UPDATE events SET data = '[1, 2]' WHERE seq = 1",
        "events.seq 1",
        "DELETE FROM events WHERE seq = 1",
    ),
    "an event missing its keys": (
        """UPDATE events SET data = '{"author": "user"}' WHERE seq = 1""",
        "events.seq 1",
        "DELETE FROM events WHERE seq = 1",
    ),
    "an event whose content has the wrong shape": (
        """UPDATE events SET data = json_set(data, '$.content.parts', json('[{"function_call": 5}]')) WHERE seq = 1""",
        "events.seq 1",
        "DELETE FROM events WHERE seq = 1",
    ),
    "session state that is not JSON": (
        "UPDATE sessions SET state = 'not json'",
        "session state",
        "UPDATE sessions SET state = '{}'",
    ),
    "session state that is a number": (
        "UPDATE sessions SET state = 5",
        "session state",
        "UPDATE sessions SET state = '{}'",
    ),
    "user state that is not JSON": (
        "UPDATE user_states SET state = '{\"user:x\": '",
        "user state",
        "UPDATE user_states SET state = '{}'",
    ),
    "app state that is a list": (
        "UPDATE app_states SET state = '[]'",
        "app state",
        "UPDATE app_states SET state = '{}'",
    ),
}


@pytest.mark.parametrize("case", list(DAMAGED_ROWS))
async def test_a_damaged_row_is_a_clear_error_naming_the_file_and_the_row(tmp_path, case):
    sql, row, fix = DAMAGED_ROWS[case]
    path = tmp_path / "sessions.db"
    with SqliteSessionService(path) as service:
        session = await service.create(
            app_name=APP, user_id="u1", session_id="s1", state={"n": 1, "user:x": 1, "app:y": 1}
        )
        for event in rich_events()[:2]:
            await service.append_event(session, event)
    damage(path, sql)
    with SqliteSessionService(path) as service:
        reads = [service.get(app_name=APP, user_id="u1", session_id="s1")]
        if "state" in case:  # every read of the state row fails the same way, and so does a write to it
            reads += [
                service.list(app_name=APP, user_id="u1"),
                service.append_event(
                    session, Event("a", actions=EventActions(state_delta={"n": 2, "user:x": 2, "app:y": 2}))
                ),
            ]
            if "session" not in case:
                reads.append(service.create(app_name=APP, user_id="u1", state={"user:x": 3, "app:y": 3}))
        for read in reads:
            with pytest.raises(AdkError) as info:
                await read
            error = info.value
            assert (error.component, error.category, error.code) == ("session", "internal", "session_db_damaged"), error
            assert repr(str(path)) in error.message and row in error.message and fix in error.message, error.message
            assert "backup" in error.message
    damage(path, fix)  # what the message says to do works
    with SqliteSessionService(path) as service:
        assert await service.get(app_name=APP, user_id="u1", session_id="s1") is not None


@pytest.mark.parametrize("which", ["app_name", "user_id", "session_id"])
async def test_an_id_sqlite_cannot_store_is_a_clear_error(db, which):
    ids = {"app_name": APP, "user_id": "u1", "session_id": "s1", which: "caf\udce9"}  # a lone surrogate
    for call in (db.create, db.get, db.delete):
        with pytest.raises(AdkError) as info:
            await call(**ids)
        error = info.value
        assert (error.component, error.category, error.code) == ("session", "invalid_input", "invalid_text"), error
        assert repr(db.path) in error.message and "'caf\\udce9'" in error.message and "'caf\ufffd'" in error.message
    assert await db.list(app_name=APP, user_id="u1") == []


@pytest.mark.parametrize("content", [b"this is a notebook, not a database" * 100, b"PK\x03\x04" + bytes(4096)])
def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path, content):
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    with pytest.raises(AdkError) as info:
        SqliteSessionService(path)
    assert info.value.category == "invalid_input" and info.value.code == "session_db_invalid"
    assert "not a SQLite database" in info.value.message and "new file name" in info.value.message
    assert not isinstance(info.value.__cause__, AdkError)
    assert path.read_bytes() == content  # left untouched


def test_a_folder_is_not_a_database_path(tmp_path):
    with pytest.raises(AdkError) as info:
        SqliteSessionService(tmp_path)
    assert info.value.category == "invalid_input" and "sessions.db" in info.value.message


def test_foreign_sqlite_tables_and_newer_schema_are_refused(tmp_path):
    foreign = tmp_path / "foreign.db"
    with raw_db(foreign) as raw:
        raw.execute("CREATE TABLE sessions (name TEXT)")
    with pytest.raises(AdkError) as info:
        SqliteSessionService(foreign)
    assert info.value.code == "session_db_invalid"

    newer = tmp_path / "newer.db"
    SqliteSessionService(newer).close()
    with raw_db(newer) as raw:
        raw.execute("PRAGMA user_version = 99")
    with pytest.raises(AdkError) as info:
        SqliteSessionService(newer)
    assert info.value.code == "session_db_too_new" and "Upgrade adk-notebook" in info.value.message


async def test_schema_settings_context_manager_repr_and_close(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionService(path) as service:
        assert repr(service) == f"SqliteSessionService({str(path)!r})"
        await service.create(app_name=APP, user_id="u1")
    assert repr(service).endswith(", closed)")
    service.close()  # idempotent
    with pytest.raises(AdkError) as info:
        await service.list(app_name=APP, user_id="u1")
    assert info.value.code == "session_service_closed" and "SqliteSessionService(" in info.value.message
    with raw_db(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA user_version").fetchone() == (4,)
        tables = {name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"sessions", "events", "app_states", "user_states", "session_runs"}


def test_a_version_1_file_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.db"
    with SqliteSessionService(path) as service:
        asyncio.run(service.create(app_name=APP, user_id="u1", session_id="kept"))
    with raw_db(path) as raw:  # what a file written before session_runs existed looks like
        raw.execute("DROP TABLE session_runs")
        raw.execute("PRAGMA user_version = 1")
        raw.commit()
    with SqliteSessionService(path) as service:
        assert asyncio.run(service.get(app_name=APP, user_id="u1", session_id="kept")) is not None
    with raw_db(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (4,)


async def test_a_version_2_file_is_upgraded_in_place_and_its_claims_still_hold(tmp_path):
    path = tmp_path / "v2.db"
    with SqliteSessionService(path) as service:
        await service.create(app_name=APP, user_id="u1", session_id="kept")
    with raw_db(path) as raw:  # a version 2 file, claimed by a live process of this machine (pid 1)
        raw.execute("DROP TABLE session_runs")
        raw.execute(
            "CREATE TABLE session_runs (app_name TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "run_id TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, "
            "PRIMARY KEY (app_name, user_id, session_id))"
        )
        raw.execute("INSERT INTO session_runs VALUES (?, 'u1', 'kept', 'e-v2', 1, ?)", (APP, socket.gethostname()))
        raw.execute("PRAGMA user_version = 2")
    with SqliteSessionService(path) as service:
        session = await service.get(app_name=APP, user_id="u1", session_id="kept")
        with pytest.raises(AdkError) as caught:  # a claim without a start time: its pid lives, so it holds
            await service.begin_run(session, "e-new")
        assert caught.value.code == "session_busy" and "e-v2" in caught.value.message
        assert await service.release_run(app_name=APP, user_id="u1", session_id="kept")
        await service.begin_run(session, "e-new")
        await service.end_run(session, "e-new")
    with raw_db(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (4,)
        assert [r[1] for r in raw.execute("PRAGMA table_info(session_runs)")][-2:] == ["started", "expires"]


def test_threads_append_to_different_sessions_at_once(tmp_path):
    path = tmp_path / "sessions.db"
    service = SqliteSessionService(path)
    threads_n, events_n = 4, 50
    sessions = [asyncio.run(service.create(app_name=APP, user_id="u1", session_id=f"s{i}")) for i in range(threads_n)]
    start = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        async def run() -> None:
            start.wait()
            for n in range(events_n):
                delta = {"n": n, f"app:t{i}": n, f"user:t{i}": n}
                await service.append_event(
                    sessions[i], Event(f"agent{i}", Content.model(f"{i}-{n}"), actions=EventActions(state_delta=delta))
                )

        try:
            asyncio.run(run())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    service.close()

    with SqliteSessionService(path) as service:
        for i in range(threads_n):
            got = asyncio.run(service.get(app_name=APP, user_id="u1", session_id=f"s{i}"))
            assert [e.text for e in got.events] == [f"{i}-{n}" for n in range(events_n)]
            last = events_n - 1
            assert got.state == {
                "n": last,
                **{f"app:t{j}": last for j in range(threads_n)},
                **{f"user:t{j}": last for j in range(threads_n)},
            }  # no lost update
    with raw_db(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
        assert raw.execute("SELECT count(*) FROM events").fetchone() == (threads_n * events_n,)


async def test_two_services_on_one_file_share_app_state(tmp_path):
    path = tmp_path / "sessions.db"
    with SqliteSessionService(path) as a, SqliteSessionService(path) as b:
        sa = await a.create(app_name=APP, user_id="u1")
        sb = await b.create(app_name=APP, user_id="u2")
        await a.append_event(sa, Event("agent", actions=EventActions(state_delta={"app:from_a": 1})))
        await b.append_event(sb, Event("agent", actions=EventActions(state_delta={"app:from_b": 2})))
        got = await a.get(app_name=APP, user_id="u1", session_id=sa.id)
        assert got.state == {"app:from_a": 1, "app:from_b": 2}
