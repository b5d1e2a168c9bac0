"""Session snapshots: nothing a caller does to what a service handed out, or to what it handed
in, changes what the service stored.

For each session service (in memory, SQLite), hypothesis draws nested JSON-like state (dicts,
lists, every scope prefix) and a stream of state deltas; each input is handed in through
`create` and `append_event`, then every container of what went in and of what `get` / `list`
returned is mutated in place (items appended, keys added and changed, values cleared). The
stored state must still equal a copy taken before, on the next `get` and `list` and, for
SQLite, through a second service over the same file. A mismatch is counted as corrupted.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_notebook import BaseSessionService, Event, EventActions, InMemorySessionService, SqliteSessionService

SETTINGS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}
EXAMPLES = 100

_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_values = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)
_keys = st.tuples(st.sampled_from(["", "app:", "user:"]), st.text("abcxyz", min_size=1, max_size=3)).map("".join)
_state = st.dictionaries(_keys, _values, max_size=5)


def vandalise(value: Any) -> None:
    """Change every container inside `value` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            vandalise(item)
        for key in list(value):
            value[key] = ["vandalised", value[key]] if not isinstance(value[key], (dict, list)) else value[key]
        value["__added__"] = {"x": [1]}
    elif isinstance(value, list):
        for item in value:
            vandalise(item)
        value.append("__appended__")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_nothing_done_to_handed_values_changes_the_store(kind: str, tmp_path: Path, tally: Any) -> None:
    tried = lost = 0
    ids = iter(range(10**9))
    path = tmp_path / "s.db"
    service: BaseSessionService = InMemorySessionService() if kind == "memory" else SqliteSessionService(path)
    # For SQLite, a second service over the same file reads what was really written.
    readers = [service] if kind == "memory" else [service, SqliteSessionService(path)]

    with asyncio.Runner() as loop:

        @settings(max_examples=EXAMPLES, **SETTINGS)
        @given(initial=_state, deltas=st.lists(_state, max_size=3))
        def prop(initial: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
            nonlocal tried, lost
            tried += 1
            app = f"a{next(ids)}"  # app: and user: state are per app, so each example gets its own
            expected = copy.deepcopy(initial)
            session = loop.run(service.create(app_name=app, user_id="u", session_id="s", state=initial))
            vandalise(initial)
            vandalise(session.state)
            for delta in deltas:
                expected.update(copy.deepcopy(delta))
                loop.run(service.append_event(session, Event("a", None, actions=EventActions(state_delta=delta))))
                vandalise(delta)
                vandalise(session.state)
            ok = True
            for reader in readers:
                for _ in range(2):  # the second read sees what the first one's changes did
                    got = loop.run(reader.get(app_name=app, user_id="u", session_id="s"))
                    listed = loop.run(reader.list(app_name=app, user_id="u"))[0]
                    ok = ok and got.state == expected and listed.state == expected
                    vandalise(got.state)
                    vandalise(listed.state)
            if not ok:
                lost += 1
            assert ok, (kind, expected)

        try:
            prop()
        finally:
            tally.record(f"sessions: handed-out state is a snapshot ({kind})", tried, lost)
            for reader in readers:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
