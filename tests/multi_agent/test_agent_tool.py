"""AgentTool: a child invocation whose events stream live but only its answer is stored."""

from __future__ import annotations

from adk_notebook import (
    AgentTool,
    FunctionCall,
    InMemoryArtifactService,
    InMemorySessionService,
    LlmAgent,
    Part,
    Runner,
    ScriptedModel,
    ToolContext,
    tool,
)

from .helpers import run, stored


@tool
async def save_note(text: str, tool_context: ToolContext) -> dict:
    """Save a note as an artifact and in state.

    Args:
        text: The note.
    """
    version = await tool_context.save_artifact("note.txt", Part(text=text))
    tool_context.state["last_note"] = text
    return {"version": version}


async def test_inner_events_stream_before_the_response_and_only_the_response_is_stored() -> None:
    research_model = ScriptedModel([FunctionCall("save_note", {"text": "bees"}), "Bees pollinate crops."])
    research = LlmAgent(
        name="research",
        model=research_model,
        tools=[save_note],
        description="Finds facts",
    )
    lead_model = ScriptedModel([FunctionCall("research", {"request": "What do bees do?"}), "Bees matter."])
    lead = LlmAgent(name="lead", model=lead_model, tools=[AgentTool(research)])
    runner = Runner(
        app_name="app",
        agent=lead,
        session_service=InMemorySessionService(),
        artifact_service=InMemoryArtifactService(),
    )

    events, runner, sid = await run(lead, "Tell me about bees", runner=runner)
    call_id = next(c.id for e in events if not e.partial for c in e.function_calls() if c.name == "research")
    nested = [e for e in events if e.metadata.get("parent_call_id") == call_id]
    response_at = next(
        i
        for i, e in enumerate(events)
        if not e.partial and e.function_responses() and e.function_responses()[0].name == "research"
    )
    assert nested and all(e.partial for e in nested)
    assert all(events.index(e) < response_at for e in nested)
    assert {e.author for e in nested} == {"research"}
    assert any(e.text == "Bees pollinate crops." for e in nested)  # the child's complete answer, nested
    assert any(c.name == "save_note" for e in nested for c in e.function_calls())
    # the child saw only the request, not the parent's conversation
    assert [c.text for c in research_model.requests[0].contents] == ["What do bees do?"]
    # the parent stores the call and its answer, none of the child's events
    session_events = await stored(runner, sid)
    assert not any(e.author == "research" for e in session_events)
    response = events[response_at].function_responses()[0].response
    assert response == {"result": "Bees pollinate crops."}
    assert events[-1].text == "Bees matter."
    # the child's deltas reached the parent: state, and the artifact version, with the response
    assert events[response_at].actions.state_delta == {"last_note": "bees"}
    assert events[response_at].actions.artifact_delta == {"note.txt": 0}
    session = await runner.session_service.get(app_name="app", user_id="u", session_id=sid)
    assert session is not None and session.state["last_note"] == "bees"


async def test_an_agent_tool_sees_the_parents_state_and_its_output_schema_value_is_the_result() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    counter = LlmAgent(
        name="counter",
        model=ScriptedModel(['{"n": 2}']),
        instruction="Count {topic}.",
        output_schema=schema,
    )
    lead_model = ScriptedModel([FunctionCall("counter", {"request": "count"}), "two"])
    lead = LlmAgent(name="lead", model=lead_model, tools=[AgentTool(counter)])
    events, _, _ = await run(lead, "how many?", state={"topic": "bees"})
    assert counter.resolve_model().requests[0].system_instruction.startswith("Count bees.")
    response = next(r for e in events if not e.partial for r in e.function_responses())
    assert response.response == {"result": {"n": 2}}


async def test_cancelling_during_an_agent_tool_answers_the_parents_call_only() -> None:
    import asyncio
    import contextlib

    started = asyncio.Event()

    @tool
    async def dig() -> dict:
        """Dig for a long time."""
        started.set()
        await asyncio.sleep(30)
        return {}

    research = LlmAgent(
        name="research",
        model=ScriptedModel([FunctionCall("dig", {}), "found"]),
        tools=[dig],
    )
    lead = LlmAgent(
        name="lead",
        model=ScriptedModel([FunctionCall("research", {"request": "dig"})]),
        tools=[AgentTool(research)],
    )
    runner = Runner(app_name="app", agent=lead, session_service=InMemorySessionService())
    session = await runner.session_service.create(app_name="app", user_id="u")

    async def consume() -> None:
        async for _ in runner.run(user_id="u", session_id=session.id, content="go"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    events = await stored(runner, session.id)
    calls = [c for e in events for c in e.function_calls()]
    answers = [r for e in events for r in e.function_responses()]
    assert [c.name for c in calls] == ["research"]  # the child's own call was never the parent's
    assert [(r.id, r.response["code"]) for r in answers] == [(calls[0].id, "cancelled")]
