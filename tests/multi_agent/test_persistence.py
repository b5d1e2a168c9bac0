"""Branches survive a persistent session: the next run's branches still see only their own."""

from __future__ import annotations

from pathlib import Path

from adk_notebook import (
    LlmAgent,
    ParallelAgent,
    Runner,
    ScriptedModel,
    SqliteSessionService,
)

from .helpers import request_texts, run


async def test_branches_are_stored_and_still_isolate_histories_in_the_next_run(
    tmp_path: Path,
) -> None:
    pros_model = ScriptedModel(["pro 1", "pro 2"])
    cons_model = ScriptedModel(["con 1", "con 2"])
    both = ParallelAgent(
        name="both",
        sub_agents=[
            LlmAgent(name="pros", model=pros_model),
            LlmAgent(name="cons", model=cons_model),
        ],
    )
    path = tmp_path / "sessions.db"
    runner = Runner(app_name="app", agent=both, session_service=SqliteSessionService(path))
    _, runner, sid = await run(both, "first", runner=runner)
    reopened = Runner(app_name="app", agent=both, session_service=SqliteSessionService(path))
    session = await reopened.session_service.get(app_name="app", user_id="u", session_id=sid)
    assert session is not None
    assert {(e.author, e.branch) for e in session.events} == {
        ("user", ""),
        ("pros", "both.pros"),
        ("cons", "both.cons"),
    }
    await run(both, "second", runner=reopened, session_id=sid)
    assert request_texts(pros_model.requests[1]) == ["first", "pro 1", "second"]
    assert request_texts(cons_model.requests[1]) == ["first", "con 1", "second"]
