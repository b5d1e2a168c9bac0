"""ctx.emit_progress: streamed while the tool runs, bounded, lossy, never stored."""

from __future__ import annotations

import time

from adk_notebook import FunctionCall, InMemorySessionService, LlmAgent, ScriptedModel, ToolContext, tool
from adk_notebook.tools.progress import MAX_CALL_BYTES, MAX_CHUNK_BYTES, QUEUE_SIZE, TRUNCATED_MARKER


async def test_ten_thousand_chunks_are_bounded_with_exactly_one_marker() -> None:
    @tool
    async def build(ctx: ToolContext) -> dict:
        """Build with a noisy log."""
        for i in range(10_000):
            await ctx.emit_progress("stdout", f"{i:05d}" + "x" * 1019)  # 1 KiB each
        return {"built": True}

    sessions = InMemorySessionService()
    agent = LlmAgent(name="ci", model=ScriptedModel([FunctionCall("build", {}), "Build finished."]), tools=[build])
    result = await agent.run_async("build it", session_service=sessions)

    progress = [e.progress for e in result.events if e.progress is not None]
    chunks = [p.chunk for p in progress]
    assert chunks.count(TRUNCATED_MARKER) == 1 and chunks[-1] == TRUNCATED_MARKER
    data = chunks[:-1]
    assert sum(len(c.encode()) for c in data) <= MAX_CALL_BYTES
    assert max(len(c.encode()) for c in data) <= MAX_CHUNK_BYTES
    assert data[:3] == [f"{i:05d}" + "x" * 1019 for i in range(3)], "in order, nothing lost before the bound"
    call_id = result.events[1].function_calls()[0].id
    assert {(p.call_id, p.tool_name, p.stream) for p in progress} == {(call_id, "build", "stdout")}
    assert all(e.partial for e in result.events if e.progress is not None)
    assert result.text == "Build finished."
    [response] = [r for e in result.events for r in e.function_responses()]
    assert response.response == {"built": True}
    stored = await sessions.get(app_name="ci", user_id="user", session_id=result.session_id)
    assert not any(e.progress is not None for e in stored.events), "progress is never persisted"


async def test_a_big_chunk_is_cut_on_a_character_boundary() -> None:
    @tool
    async def shout(ctx: ToolContext) -> dict:
        """One huge line."""
        await ctx.emit_progress("stdout", "é" * 10_000)  # 2 bytes each
        await ctx.emit_progress("stdout", "never shown")
        return {}

    result = await LlmAgent(name="a", model=ScriptedModel([FunctionCall("shout", {}), "ok"]), tools=[shout]).run_async(
        "go"
    )
    chunks = [e.progress.chunk for e in result.events if e.progress is not None]
    assert chunks == ["é" * (MAX_CHUNK_BYTES // 2), TRUNCATED_MARKER]


async def test_progress_from_a_sync_tool_arrives_while_it_runs() -> None:
    @tool
    def slow_report(ctx: ToolContext) -> dict:
        """A blocking function that reports as it goes."""
        for step in range(3):
            ctx.emit_progress("status", f"step {step}")
            time.sleep(0.05)
        return {"done": True}

    seen_at: list[float] = []
    agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("slow_report", {}), "ok"]), tools=[slow_report])
    async for event in _stream(agent):
        if event.progress is not None:
            seen_at.append(time.perf_counter())
        if event.function_responses():
            finished = time.perf_counter()
    assert len(seen_at) == 3
    assert seen_at[0] < finished - 0.05, "the first line arrived before the tool finished"


async def test_a_slow_reader_loses_chunks_past_the_queue_bound_not_the_answer() -> None:
    @tool
    def burst(ctx: ToolContext) -> dict:
        """Emits far faster than a reader drains."""
        for i in range(QUEUE_SIZE * 4):
            ctx.emit_progress("stdout", str(i))
        return {"ok": True}

    result = await LlmAgent(
        name="a", model=ScriptedModel([FunctionCall("burst", {}), "fine"]), tools=[burst]
    ).run_async("go")
    chunks = [e.progress.chunk for e in result.events if e.progress is not None]
    assert chunks.count(TRUNCATED_MARKER) <= 1
    assert result.text == "fine"


async def _stream(agent: LlmAgent):
    from adk_notebook import Runner

    runner = Runner(app_name="a", agent=agent)
    session = await runner.session_service.create(app_name="a", user_id="u")
    async for event in runner.run(user_id="u", session_id=session.id, content="go"):
        yield event
