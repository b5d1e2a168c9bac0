"""What the multi-agent tests share: running a root agent through a Runner and reading the run."""

from __future__ import annotations

from adk_notebook import Agent, Event, InMemorySessionService, Runner


async def run(
    agent: Agent,
    text: str,
    *,
    runner: Runner | None = None,
    session_id: str | None = None,
    state: dict | None = None,
) -> tuple[list[Event], Runner, str]:
    """All events of one run (partial ones too), the runner and the session id."""
    runner = runner or Runner(app_name="app", agent=agent, session_service=InMemorySessionService())
    if session_id is None:
        session = await runner.session_service.create(app_name="app", user_id="u", state=state)
        session_id = session.id
    events = [e async for e in runner.run(user_id="u", session_id=session_id, content=text)]
    return events, runner, session_id


async def stored(runner: Runner, session_id: str) -> list[Event]:
    session = await runner.session_service.get(app_name="app", user_id="u", session_id=session_id)
    assert session is not None
    return session.events


def texts(events: list[Event]) -> list[tuple[str, str]]:
    """(author, text) of each complete event that says something."""
    return [(e.author, e.text) for e in events if not e.partial and e.text]


def request_texts(request) -> list[str]:
    return [c.text for c in request.contents]
