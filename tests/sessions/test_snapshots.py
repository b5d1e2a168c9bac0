"""What a session service hands out is a snapshot: changing it changes nothing stored, and
values handed in are kept as they were then. The same for every service."""

from __future__ import annotations

from typing import Any

import pytest
from session_stores import Store

from adk_notebook import (
    BaseSessionService,
    Content,
    Event,
    EventActions,
    FunctionCall,
    LlmAgent,
    ScriptedModel,
    ToolContext,
    tool,
)

KEY = {"app_name": "app", "user_id": "u"}


@pytest.fixture
def sessions(store: Store) -> BaseSessionService:
    return store.service  # every service of the contract (tests/sessions/conftest.py)


def nested() -> dict[str, Any]:
    return {"prefs": {"theme": "dark", "langs": ["es"]}, "user:profile": {"name": "Ana"}, "app:flags": {"beta": [1]}}


async def test_changing_what_get_returned_changes_nothing_stored(sessions: BaseSessionService) -> None:
    created = await sessions.create(**KEY, session_id="s", state=nested())
    for got in (created, await sessions.get(**KEY, session_id="s"), (await sessions.list(**KEY))[0]):
        got.state["prefs"]["theme"] = "light"
        got.state["prefs"]["langs"].append("en")
        got.state["user:profile"]["name"] = "Eve"
        got.state["app:flags"]["beta"].append(2)
        got.state["new"] = 1
    again = await sessions.get(**KEY, session_id="s")
    assert again.state == nested()
    assert (await sessions.list(**KEY))[0].state == nested()


async def test_values_handed_in_are_kept_as_they_were(sessions: BaseSessionService) -> None:
    initial = nested()
    session = await sessions.create(**KEY, session_id="s", state=initial)
    initial["prefs"]["langs"].append("fr")
    cart = ["apple"]
    await sessions.append_event(session, Event("user", None, actions=EventActions(state_delta={"cart": cart})))
    cart.append("pear")
    stored = await sessions.get(**KEY, session_id="s")
    assert stored.state["prefs"]["langs"] == ["es"] and stored.state["cart"] == ["apple"]


async def test_a_tool_that_keeps_changing_a_value_it_stored_does_not_change_the_session(
    sessions: BaseSessionService,
) -> None:
    basket: list[str] = []

    @tool
    def add(item: str, tool_context: ToolContext) -> dict:
        """Add an item to the basket."""
        basket.append(item)
        tool_context.state["basket"] = basket
        return {"items": len(basket)}

    agent = LlmAgent(name="shop", model=ScriptedModel([FunctionCall("add", {"item": "milk"}), "Added."]), tools=[add])
    session = await sessions.create(app_name="shop", user_id="u")
    result = await agent.run_async(Content.user("milk"), session_id=session.id, user_id="u", session_service=sessions)
    assert result.state["basket"] == ["milk"]
    basket.append("not stored")
    stored = await sessions.get(app_name="shop", user_id="u", session_id=session.id)
    assert stored.state["basket"] == ["milk"]
