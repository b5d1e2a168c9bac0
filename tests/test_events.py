"""Event: the cheap streamed chunk behaves like any other event (ids, containers, equality, copies)."""

from __future__ import annotations

import copy
import pickle

from adk_notebook import Content, InMemorySessionService
from adk_notebook.core.events import Event, EventActions, ToolProgress


def test_a_chunk_is_the_same_event_as_the_keyword_form() -> None:
    progress = ToolProgress("call-1", "fetch", "stdout", "10%")
    for content, prog in ((Content.model("Hel"), None), (None, progress)):
        chunk = Event.chunk("bot", content, "inv-1", prog)
        spelled = Event("bot", content, "inv-1", partial=True, progress=prog, id=chunk.id, timestamp=chunk.timestamp)
        assert chunk == spelled
        assert chunk.partial and not chunk.turn_complete and not chunk.is_final_response()
        assert (chunk.actions, chunk.metadata, chunk.long_running_tool_ids, chunk.tool_outcomes) == (
            EventActions(),
            {},
            [],
            [],
        )


def test_containers_made_on_first_use_are_each_events_own_and_keep_what_is_put_in() -> None:
    first, second = Event("bot"), Event.chunk("bot", None, "inv")
    first.actions.state_delta["city"] = "Tokyo"
    first.metadata["kind"] = "note"
    first.long_running_tool_ids.append("call-9")
    assert first.actions.state_delta == {"city": "Tokyo"}
    assert first.metadata == {"kind": "note"} and first.long_running_tool_ids == ["call-9"]
    assert second.actions.state_delta == {} and second.metadata == {} and second.long_running_tool_ids == []
    assert Event("bot").actions.state_delta == {}  # nothing leaked into a shared default
    first.actions = EventActions(escalate=True)
    assert first.actions.escalate and first.actions.state_delta == {}


def test_ids_are_unique_stable_and_survive_storage_copies_and_pickles() -> None:
    events = [Event.chunk("bot", None, "inv") for _ in range(1000)]
    ids = [e.id for e in events]
    assert len(set(ids)) == 1000 and all(len(i) == 32 for i in ids)
    assert [e.id for e in events] == ids  # reading again gives the same id
    fresh = Event("bot", Content.model("hi"))  # id not read yet
    assert copy.copy(fresh).id == copy.deepcopy(fresh).id == pickle.loads(pickle.dumps(fresh)).id == fresh.id
    assert Event.from_dict(fresh.to_dict()) == fresh
    assert Event("bot", id="given").id == "given"


async def test_a_lazily_made_state_delta_is_applied_when_the_event_is_stored() -> None:
    service = InMemorySessionService()
    session = await service.create(app_name="app", user_id="u")
    event = Event("bot", Content.model("noted"))
    event.actions.state_delta["user:name"] = "Ada"
    await service.append_event(session, event)
    stored = await service.get(app_name="app", user_id="u", session_id=session.id)
    assert stored is not None and stored.state["user:name"] == "Ada"
    assert stored.events[-1].id == event.id and stored.events[-1].actions.state_delta == {"user:name": "Ada"}


def test_equality_compares_every_field_and_treats_unmade_containers_as_empty() -> None:
    a = Event("bot", Content.model("x"), "inv", id="1", timestamp=1.0)
    b = Event("bot", Content.model("x"), "inv", id="1", timestamp=1.0, metadata={}, actions=EventActions())
    assert a == b
    b.metadata["finish_reason"] = "stop"
    assert a != b
    assert a != Event("bot", Content.model("y"), "inv", id="1", timestamp=1.0)


def test_repr_shows_what_is_set_and_not_empty_containers() -> None:
    chunk = Event.chunk("bot", Content.model("Hel"), "inv-1")
    text = repr(chunk)
    assert text.startswith("Event(author='bot', id=") and "partial=True" in text and "'Hel'" in text
    assert "metadata" not in text and "actions" not in text and "tool_outcomes" not in text
    chunk.actions.state_delta["k"] = 1
    assert "state_delta={'k': 1}" in repr(chunk)
