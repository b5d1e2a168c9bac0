"""A SQLite session file damaged row by row: every read is whole or a clear error, never a raw one.

A real file (a conversation with calls, responses, media, usage, an error event, state in every
scope) is copied, and in the copy one row is damaged the ways a hand edit, another program or a
disk can: its JSON cut short at a random point, a value anywhere in it replaced by one of
another JSON type, a key anywhere in it removed, the whole column replaced by a non-text value.
Then each operation that reads that row (get, list, append_event, create) runs against the
copy, and must either work or raise AdkError `session_db_damaged` whose message names the file
and says what to do; an id SQLite cannot store must be AdkError `invalid_text`. A raw Python
error (KeyError, JSONDecodeError, TypeError...) counts as lost.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
    SqliteSessionService,
    ToolOutcome,
    Usage,
)

APP, USER, SID = "demo", "u1", "s1"
SEED = 15_2026
MUTATIONS_PER_ROW = 40
OTHER_VALUES: list[Any] = [None, 0, -1.5, True, "", "text", [], [1, "a"], {}, {"x": {"y": []}}]


async def make_file(path: Path) -> None:
    call = FunctionCall("get_weather", {"city": "Tokyo", "days": [1, 2]}, id="call-1")
    events = [
        Event("user", Content.user("What is in this image?").with_inline_data("image/png", b"\x89PNG\x00")),
        Event("w", Content("model", [Part(function_call=call)]), "inv-1", usage=Usage(10, 5, 15)),
        Event(
            "w",
            Content(
                "tool",
                [
                    Part(
                        function_response=FunctionResponse(
                            "get_weather",
                            {"condition": "sunny"},
                            "call-1",
                            [Part.from_uri("application/pdf", "gs://b/r.pdf")],
                        )
                    )
                ],
            ),
            "inv-1",
            actions=EventActions(state_delta={"n": 1, "user:seen": True, "app:total": 2}),
            tool_outcomes=[ToolOutcome("call-1", "get_weather", {"city": "Tokyo"}, True, 0.1)],
        ),
        Event("w", Content.model("Sunny."), "inv-1", turn_complete=True, metadata={"finish_reason": "stop"}),
        Event("w", None, "inv-2", error=AdkError.model("boom", code="http_500", category="unavailable")),
    ]
    with SqliteSessionService(path) as service:
        session = await service.create(app_name=APP, user_id=USER, session_id=SID, state={"user:name": "Ana"})
        for event in events:
            await service.append_event(session, event)


def rows(path: Path) -> list[tuple[str, str, Any]]:
    """(table, rowid, text) of every JSON cell in the file."""
    with sqlite3.connect(path) as conn:
        found = [("events", r, d) for r, d in conn.execute("SELECT rowid, data FROM events")]
        for table in ("sessions", "user_states", "app_states"):
            found += [(table, r, d) for r, d in conn.execute(f"SELECT rowid, state FROM {table}")]
    return found


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: dict keys and list indexes, as tuples."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*at, i))
    return found


def mutate(text: str, rng: random.Random) -> tuple[str, Any]:
    """(what was done, the damaged cell)."""
    value = json.loads(text)
    kind = rng.choice(["truncate", "retype", "drop", "column"])
    if kind == "truncate":
        cut = rng.randrange(0, len(text))
        return f"cut at {cut}", text[:cut]
    if kind == "column":
        other = rng.choice([5, 2.5, b"\x00\x01", b"{}"])
        return f"column {other!r}", other
    places = [p for p in paths(value) if p] or [()]
    place = rng.choice(places)
    if kind == "drop" and place and isinstance(_get(value, place[:-1]), dict):
        del _get(value, place[:-1])[place[-1]]
        return f"drop {list(place)}", json.dumps(value)
    replacement = rng.choice(OTHER_VALUES)
    if not place:
        return f"whole value -> {replacement!r}", json.dumps(replacement)
    _get(value, place[:-1])[place[-1]] = replacement
    return f"{list(place)} -> {replacement!r}", json.dumps(value)


def _get(value: Any, place: tuple[Any, ...]) -> Any:
    for step in place:
        value = value[step]
    return value


async def exercise(path: Path) -> list[str]:
    """Every operation that reads the damaged rows; returns what each did ('ok' or the error code)."""
    outcomes: list[str] = []
    with SqliteSessionService(path) as service:
        operations = [
            lambda: service.get(app_name=APP, user_id=USER, session_id=SID),
            lambda: service.list(app_name=APP, user_id=USER),
            lambda: service.append_event(
                _session(),
                Event(
                    "w",
                    Content.model("more"),
                    actions=EventActions(state_delta={"n": 2, "user:seen": False, "app:total": 3}),
                ),
            ),
            lambda: service.create(app_name=APP, user_id=USER, state={"user:name": "Bo", "app:total": 4}),
        ]
        for operation in operations:
            try:
                await operation()
            except AdkError as error:
                assert error.code == "session_db_damaged", repr(error)
                assert repr(str(path)) in error.message and "backup" in error.message, error.message
                outcomes.append(error.code)
            else:
                outcomes.append("ok")
    return outcomes


def _session() -> Any:
    from adk_notebook.core.session import Session

    return Session(SID, APP, USER)


async def test_a_damaged_row_is_read_whole_or_refused_clearly(tmp_path: Path, tally: Any) -> None:
    original = tmp_path / "whole.db"
    await make_file(original)
    rng = random.Random(SEED)
    tried = lost = refused = 0
    first_failure = ""
    for table, rowid, text in rows(original):
        column = "data" if table == "events" else "state"
        for _ in range(MUTATIONS_PER_ROW):
            copy = tmp_path / "damaged.db"
            with sqlite3.connect(original) as source, sqlite3.connect(copy) as target:
                source.backup(target)
            what, cell = mutate(text, rng)
            with sqlite3.connect(copy) as conn:
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (cell, rowid))
            tried += 1
            try:
                outcomes = await exercise(copy)
            except BaseException as exc:  # noqa: BLE001  # a raw error, or a clear one that does not say where
                lost += 1
                first_failure = first_failure or f"{table} row {rowid}, {what}: {type(exc).__name__}: {exc}"
            else:
                refused += "session_db_damaged" in outcomes
            for suffix in ("", "-wal", "-shm"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)
    tally.record(
        "damaged SQLite rows: read whole or refused clearly",
        tried,
        lost,
        f"{refused} damaged rows refused with session_db_damaged, the rest still readable",
    )
    assert lost == 0, first_failure


@pytest.mark.parametrize("field", ["app_name", "user_id", "session_id"])
async def test_ids_sqlite_cannot_store_are_refused_clearly(tmp_path: Path, field: str, tally: Any) -> None:
    with tally.case("damaged SQLite rows: ids that are not text"), SqliteSessionService(tmp_path / "s.db") as service:
        for bad in ("\ud83d", "x\udfff", "\udce9\udce9"):
            ids = {"app_name": APP, "user_id": USER, "session_id": SID, field: bad}
            for operation in (service.create, service.get, service.delete):
                with pytest.raises(AdkError) as caught:
                    await operation(**ids)
                assert caught.value.code == "invalid_text" and repr(bad) in caught.value.message
            if field != "session_id":
                with pytest.raises(AdkError) as caught:
                    await service.list(app_name=ids["app_name"], user_id=ids["user_id"])
                assert caught.value.code == "invalid_text"
