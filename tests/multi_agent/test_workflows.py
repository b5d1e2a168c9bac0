"""Sequential, parallel, loop and map agents, run through the Runner."""

from __future__ import annotations

import asyncio
import time

from adk_notebook import (
    CallbackContext,
    FunctionCall,
    FunctionModel,
    LlmAgent,
    LlmRequest,
    LoopAgent,
    MapAgent,
    ParallelAgent,
    ScriptedModel,
    SequentialAgent,
    exit_loop,
    tool,
)

from .helpers import request_texts, run, stored, texts


async def test_a_sequence_passes_each_answer_on_through_output_key() -> None:
    research = LlmAgent(name="research", model=ScriptedModel(["Bees pollinate."]), output_key="notes")
    writer_model = ScriptedModel(["Draft: bees matter."])
    writer = LlmAgent(
        name="writer",
        model=writer_model,
        instruction="Write from {notes}.",
        output_key="draft",
    )
    pipeline = SequentialAgent(name="pipeline", sub_agents=[research, writer])
    events, runner, sid = await run(pipeline, "bees")
    assert texts(events) == [
        ("user", "bees"),
        ("research", "Bees pollinate."),
        ("writer", "Draft: bees matter."),
    ]
    assert writer_model.requests[0].system_instruction == "Write from Bees pollinate.."
    # the writer's model hears the researcher as context, not as its own words
    assert request_texts(writer_model.requests[0]) == [
        "bees",
        "For context:[research] said: Bees pollinate.",
    ]
    session = await runner.session_service.get(app_name="app", user_id="u", session_id=sid)
    assert session is not None and session.state["draft"] == "Draft: bees matter."


def _slow_tool(name: str):
    async def look(topic: str) -> dict:
        """Look something up.

        Args:
            topic: What to look up.
        """
        await asyncio.sleep(0.3)
        return {"found": f"{name} of {topic}"}

    look.__name__ = f"look_{name}"
    return tool(look)


def _branch_agent(name: str) -> tuple[LlmAgent, ScriptedModel]:
    model = ScriptedModel([FunctionCall(f"look_{name}", {"topic": "cars"}), f"{name} listed"])
    return LlmAgent(name=name, model=model, tools=[_slow_tool(name)], output_key=name), model


async def test_parallel_branches_run_concurrently_and_never_see_each_other() -> None:
    (pros, pros_model), (cons, cons_model) = (
        _branch_agent("pros"),
        _branch_agent("cons"),
    )
    both = ParallelAgent(name="both", sub_agents=[pros, cons])
    started = time.perf_counter()
    events, runner, sid = await run(both, "cars?")
    elapsed = time.perf_counter() - started
    assert elapsed < 0.55, f"two 0.3 s tools in parallel branches took {elapsed:.2f} s"
    complete = [e for e in events if not e.partial]
    assert {e.branch for e in complete if e.author in ("pros", "cons")} == {
        "both.pros",
        "both.cons",
    }
    assert all(e.branch == f"both.{e.author}" for e in complete if e.author in ("pros", "cons"))
    # each branch's second model call sees the user, its own call and response: nothing of the other
    for model, own, other in (
        (pros_model, "pros", "cons"),
        (cons_model, "cons", "pros"),
    ):
        second = model.requests[1]
        calls = [p.function_call.name for c in second.contents for p in c.parts if p.function_call]
        responses = [p.function_response.response for c in second.contents for p in c.parts if p.function_response]
        assert calls == [f"look_{own}"] and responses == [{"found": f"{own} of cars"}]
        assert other not in " ".join(request_texts(second))
    session_events = await stored(runner, sid)
    assert sum(1 for e in session_events if e.function_calls()) == 2  # both branches' calls are stored
    state = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state
    assert (state["pros"], state["cons"]) == ("pros listed", "cons listed")


async def test_after_a_fork_the_next_agent_sees_every_branch() -> None:
    (pros, _), (cons, _) = _branch_agent("pros"), _branch_agent("cons")
    judge_model = ScriptedModel(["balanced"])
    judge = LlmAgent(name="judge", model=judge_model)
    flow = SequentialAgent(
        name="flow",
        sub_agents=[ParallelAgent(name="both", sub_agents=[pros, cons]), judge],
    )
    events, _, _ = await run(flow, "cars?")
    seen = " ".join(request_texts(judge_model.requests[0]))
    assert "[pros] said: pros listed" in seen and "[cons] said: cons listed" in seen
    assert texts(events)[-1] == ("judge", "balanced")


async def test_two_branches_writing_one_key_warn_once_and_the_last_write_wins() -> None:
    a = LlmAgent(name="a", model=ScriptedModel(["from a"]), output_key="verdict")
    b = LlmAgent(name="b", model=ScriptedModel(["from b"]), output_key="verdict")
    events, runner, sid = await run(ParallelAgent(name="both", sub_agents=[a, b]), "go")
    warnings = [e for e in events if e.metadata.get("kind") == "warning"]
    assert len(warnings) == 1
    message = warnings[0].metadata["warning"]
    assert "'verdict'" in message and "both.a" in message and "both.b" in message
    final = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state["verdict"]
    last_writer = [e for e in events if not e.partial and e.actions.state_delta.get("verdict")][-1]
    assert final == last_writer.text


async def test_a_loop_stops_at_max_iterations() -> None:
    critic = LlmAgent(name="critic", model=ScriptedModel(["c1", "c2", "c3"]))
    reviser = LlmAgent(name="reviser", model=ScriptedModel(["r1", "r2", "r3"]))
    events, _, _ = await run(
        LoopAgent(name="refine", sub_agents=[critic, reviser], max_iterations=2),
        "polish",
    )
    assert [t for _, t in texts(events)] == ["polish", "c1", "r1", "c2", "r2"]


async def test_exit_loop_ends_the_loop_at_once() -> None:
    critic = LlmAgent(
        name="critic",
        model=ScriptedModel(["needs work", FunctionCall("exit_loop", {})]),
        tools=[exit_loop],
    )
    reviser = LlmAgent(name="reviser", model=ScriptedModel(["v2", "v3"]))
    events, _, _ = await run(
        LoopAgent(name="refine", sub_agents=[critic, reviser], max_iterations=5),
        "polish",
    )
    assert [t for _, t in texts(events)] == ["polish", "needs work", "v2"]
    assert [e.author for e in events if not e.partial][-1] == "critic"  # the reviser did not run again


async def test_escalation_in_a_nested_loop_ends_only_that_loop() -> None:
    calls = {"inner_rounds": 0}

    def inner_model(request: LlmRequest) -> object:
        calls["inner_rounds"] += 1
        return FunctionCall("exit_loop", {}) if calls["inner_rounds"] % 2 == 0 else "try"

    checker = LlmAgent(name="checker", model=FunctionModel(inner_model), tools=[exit_loop])
    inner = LoopAgent(name="inner", sub_agents=[checker], max_iterations=10)
    after = LlmAgent(name="after", model=ScriptedModel(["after 1", "after 2", "after 3"]))
    outer = LoopAgent(name="outer", sub_agents=[inner, after], max_iterations=3)
    events, _, _ = await run(outer, "go")
    assert [t for a, t in texts(events) if a == "after"] == [
        "after 1",
        "after 2",
        "after 3",
    ]
    assert calls["inner_rounds"] == 6  # each outer round: "try", then exit_loop ends the inner loop
    escalations = [e for e in events if not e.partial and e.actions.escalate]
    assert len(escalations) == 3 and all(e.metadata["ended_loop"] == "inner" for e in escalations)


async def test_a_map_runs_one_branch_per_item_and_collects_in_order() -> None:
    async def summarize(request: LlmRequest) -> str:
        item = request.system_instruction.removeprefix("Summarize: ")
        await asyncio.sleep(0.2 if item == "alpha" else 0.0)  # the first item finishes last
        return f"summary of {item}"

    worker = LlmAgent(
        name="worker",
        model=FunctionModel(summarize),
        instruction="Summarize: {temp:item}",
    )
    each = MapAgent(
        name="each",
        sub_agent=worker,
        items_key="docs",
        output_key="summaries",
        max_concurrency=3,
    )
    events, runner, sid = await run(each, "go", state={"docs": ["alpha", "beta", "gamma"]})
    state = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state
    assert state["summaries"] == [
        "summary of alpha",
        "summary of beta",
        "summary of gamma",
    ]
    assert {e.branch for e in events if e.author == "worker" and not e.partial} == {
        "each.0",
        "each.1",
        "each.2",
    }
    assert "temp:item" not in state


async def test_a_map_without_its_list_says_what_to_set() -> None:
    import pytest

    from adk_notebook import AdkError

    each = MapAgent(
        name="each",
        sub_agent=LlmAgent(name="w", model=ScriptedModel([])),
        items_key="docs",
        output_key="out",
    )
    with pytest.raises(AdkError) as caught:
        await run(each, "go")
    assert caught.value.code == "invalid_map_items" and "'docs'" in str(caught.value)


async def test_agent_callbacks_run_for_workflow_agents_and_their_children() -> None:
    seen: list[str] = []

    def before(ctx: CallbackContext) -> None:
        seen.append(f"before {ctx.agent_name}")

    def after(ctx: CallbackContext) -> None:
        seen.append(f"after {ctx.agent_name}")
        ctx.state["done"] = ctx.agent_name

    child = LlmAgent(
        name="child",
        model=ScriptedModel(["hi"]),
        before_agent_callback=before,
        after_agent_callback=after,
    )
    pipeline = SequentialAgent(
        name="pipeline",
        sub_agents=[child],
        before_agent_callback=before,
        after_agent_callback=after,
    )
    _, runner, sid = await run(pipeline, "go")
    assert seen == ["before pipeline", "before child", "after child", "after pipeline"]
    state = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state
    assert state["done"] == "pipeline"


async def test_a_before_agent_callback_can_answer_for_a_whole_workflow() -> None:
    child_model = ScriptedModel(["never"])
    pipeline = SequentialAgent(
        name="pipeline",
        sub_agents=[LlmAgent(name="child", model=child_model)],
        before_agent_callback=lambda ctx: "closed today",
    )
    events, _, _ = await run(pipeline, "go")
    assert texts(events)[-1] == ("pipeline", "closed today") and child_model.requests == []


async def test_output_schemas_and_retries_work_inside_a_parallel_branch() -> None:
    from adk_notebook import RetryBudget

    failures = {"n": 0}

    @tool
    def flaky() -> dict:
        """Fail once, then work."""
        failures["n"] += 1
        if failures["n"] == 1:
            raise RuntimeError("boom")
        return {"ok": True}

    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer"}},
        "required": ["score"],
    }
    scorer = LlmAgent(
        name="scorer",
        model=ScriptedModel(["not json", '{"score": 3}']),
        output_schema=schema,
    )
    worker = LlmAgent(
        name="worker",
        model=ScriptedModel([FunctionCall("flaky", {}), "done"]),
        tools=[flaky],
        default_retry_budget=RetryBudget(max_retries=1),
    )
    events, _, _ = await run(ParallelAgent(name="both", sub_agents=[scorer, worker]), "go")
    assert any(e.output == {"score": 3} for e in events if e.author == "scorer")
    response = next(r for e in events if not e.partial for r in e.function_responses() if r.name == "flaky")
    assert response.response == {"ok": True} and failures["n"] == 2


async def test_a_parallel_tool_strategy_still_holds_inside_a_loop() -> None:
    @tool(name="slow_a")
    async def slow_a() -> dict:
        """Wait a bit."""
        await asyncio.sleep(0.2)
        return {"a": 1}

    @tool(name="slow_b")
    async def slow_b() -> dict:
        """Wait a bit."""
        await asyncio.sleep(0.2)
        return {"b": 2}

    worker = LlmAgent(
        name="worker",
        model=ScriptedModel([[FunctionCall("slow_a", {}), FunctionCall("slow_b", {})], "both done"]),
        tools=[slow_a, slow_b],
        tool_execution_strategy="parallel",
    )
    started = time.perf_counter()
    events, _, _ = await run(LoopAgent(name="once", sub_agents=[worker], max_iterations=1), "go")
    assert time.perf_counter() - started < 0.38
    responses = [r.name for e in events if not e.partial for r in e.function_responses()]
    assert responses == ["slow_a", "slow_b"] and texts(events)[-1] == (
        "worker",
        "both done",
    )


async def test_a_map_over_a_workflow_collects_each_items_last_answer() -> None:
    draft = LlmAgent(
        name="draft",
        model=FunctionModel(lambda r: f"draft {r.system_instruction}"),
        instruction="{temp:item}",
    )
    polish = LlmAgent(
        name="polish",
        model=FunctionModel(lambda r: f"polished {r.system_instruction}"),
        instruction="{temp:item}",
    )
    each = MapAgent(
        name="each",
        sub_agent=SequentialAgent(name="steps", sub_agents=[draft, polish]),
        items_key="docs",
        output_key="out",
    )
    _, runner, sid = await run(each, "go", state={"docs": ["x", "y"]})
    state = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state
    assert state["out"] == ["polished x", "polished y"]


async def test_a_map_over_an_empty_list_stores_an_empty_list() -> None:
    each = MapAgent(
        name="each",
        sub_agent=LlmAgent(name="w", model=ScriptedModel([])),
        items_key="docs",
        output_key="out",
    )
    _, runner, sid = await run(each, "go", state={"docs": []})
    state = (await runner.session_service.get(app_name="app", user_id="u", session_id=sid)).state
    assert state["out"] == []
