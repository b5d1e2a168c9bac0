"""The LlmAgent reference of seed 004, feature by feature, through the Runner."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from adk_notebook import (
    AdkError,
    CallbackContext,
    Content,
    FunctionCall,
    FunctionModel,
    FunctionTool,
    InMemoryArtifactService,
    InMemorySessionService,
    LlmAgent,
    LlmAgentBuilder,
    LlmRequest,
    LlmResponse,
    Part,
    RetryBudget,
    RunConfig,
    Runner,
    ScriptedModel,
    ToolContext,
    ToolExecutionStrategy,
    tool,
)
from adk_notebook.notebook.transcript import transcript_text


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}


async def run(agent: LlmAgent, text: str = "hi", **kwargs):
    return await agent.run_async(text, **kwargs)


# -- builder -------------------------------------------------------------------------------------
async def test_builder_uses_the_seed_names() -> None:
    seen: list[int] = []
    agent = (
        LlmAgentBuilder("assistant")
        .description("A helpful assistant")
        .instruction("You are helping {user_name}.")
        .global_instruction("Be concise.")
        .model(ScriptedModel([FunctionCall("get_weather", {"city": "Oslo"}), "Sunny in Oslo."]))
        .tool(get_weather)
        .output_key("last_response")
        .max_iterations(10)
        .tool_execution_strategy(ToolExecutionStrategy.AUTO)
        .default_retry_budget(RetryBudget(2, 0.0))
        .tool_retry_budget("get_weather", RetryBudget(4, 0.0))
        .circuit_breaker_threshold(3)
        .before_model_callback(lambda ctx, request: seen.append(len(request.contents)))
        .build()
    )
    assert (agent.name, agent.description, agent.max_iterations) == ("assistant", "A helpful assistant", 10)
    assert agent.tool_execution_strategy is ToolExecutionStrategy.AUTO
    assert agent.tool_retry_budgets["get_weather"].max_retries == 4
    result = await run(agent, "Weather?", state={"user_name": "Alice"})
    assert result.text == "Sunny in Oslo." and result.state["last_response"] == "Sunny in Oslo."
    assert seen == [1, 3], "before_model_callback saw each request"
    assert agent.resolve_model().requests[0].system_instruction == "Be concise.\n\nYou are helping Alice."


def test_builder_errors_are_collected_in_one_message() -> None:
    with pytest.raises(AdkError) as caught:
        LlmAgentBuilder("bad name").max_iterations(0).build()
    assert "identifier" in str(caught.value) and "max_iterations" in str(caught.value)
    with pytest.raises(AdkError, match="Unknown tool_execution_strategy 'fast'"):
        LlmAgent(name="a", tool_execution_strategy="fast")


# -- templates -----------------------------------------------------------------------------------
async def test_templates_from_every_scope_and_artifacts() -> None:
    model = ScriptedModel(["ok"])
    agent = LlmAgent(
        name="t",
        model=model,
        instruction="{greeting} {user:name} of {app:company} ({temp:mood?}) notes: {artifact.notes} {artifact.none?}|{x y}",
        before_agent_callback=lambda ctx: ctx.state.__setitem__("temp:mood", "calm"),
    )
    sessions = InMemorySessionService()
    artifacts = InMemoryArtifactService()
    runner = Runner(app_name="app", agent=agent, session_service=sessions, artifact_service=artifacts)
    session = await sessions.create(
        app_name="app", user_id="u", state={"greeting": "Hi", "user:name": "Ana", "app:company": "ACME"}
    )
    await artifacts.save(
        app_name="app", user_id="u", session_id=session.id, filename="notes", artifact=Part(text="buy milk")
    )
    [e async for e in runner.run(user_id="u", session_id=session.id, content="go")]
    assert model.requests[0].system_instruction == "Hi Ana of ACME (calm) notes: buy milk |{x y}"
    stored = await sessions.get(app_name="app", user_id="u", session_id=session.id)
    assert "temp:mood" not in stored.state


async def test_instruction_provider_is_not_templated() -> None:
    model = ScriptedModel(["ok"])
    agent = LlmAgentBuilder("p").model(model).instruction_provider(lambda ctx: f"User {ctx.user_id} {{raw}}").build()
    await run(agent, user_id="bob")
    assert model.requests[0].system_instruction == "User bob {raw}"


# -- output schema -------------------------------------------------------------------------------
class Entities(BaseModel):
    people: list[str]
    locations: list[str]


async def test_output_schema_with_a_pydantic_model_retries_with_the_error() -> None:
    model = ScriptedModel(
        ['{"people": ["John"]}', '```json\n{"people": ["John", "Sarah"], "locations": ["Paris"]}\n```']
    )
    agent = LlmAgent(name="extractor", model=model, output_schema=Entities, output_key="entities")
    result = await run(agent, "John met Sarah in Paris")

    assert result.output == Entities(people=["John", "Sarah"], locations=["Paris"])
    assert result.state["entities"] == {"people": ["John", "Sarah"], "locations": ["Paris"]}
    first, second = model.requests
    assert first.config.response_schema["required"] == ["people", "locations"]
    assert first.config.response_mime_type == "application/json"
    assert '"people"' in first.system_instruction, "the schema is in the instruction too"
    feedback = second.contents[-1]
    assert feedback.role == "user" and "locations" in feedback.text and "required" in feedback.text.lower()


async def test_output_schema_dict_and_exhaustion() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    ok = await run(LlmAgent(name="a", model=ScriptedModel(['{"n": 0}', '{"n": 2}']), output_schema=schema))
    assert ok.output == {"n": 2}

    bad = LlmAgent(
        name="b", model=ScriptedModel(["nope", "{}", '{"n": "x"}']), output_schema=schema, output_max_retries=2
    )
    with pytest.raises(AdkError) as caught:
        await run(bad)
    assert caught.value.code == "output_schema_mismatch" and "(root).n" in str(caught.value)


# -- include_contents, output_key, max_iterations --------------------------------------------------
async def test_include_contents_none_sees_only_this_invocation() -> None:
    model = ScriptedModel(["first", FunctionCall("get_weather", {"city": "Rome"}), "second"])
    agent = LlmAgent(name="a", model=model, tools=[get_weather], include_contents="none")
    sessions = InMemorySessionService()
    await run(agent, "one", session_id="s", session_service=sessions)
    await run(agent, "two", session_id="s", session_service=sessions)
    assert [c.role for c in model.requests[1].contents] == ["user"]
    assert [c.role for c in model.requests[2].contents] == ["user", "model", "tool"]
    assert model.requests[2].contents[0].text == "two"


async def test_max_llm_calls_in_run_config() -> None:
    model = FunctionModel(lambda r: FunctionCall("get_weather", {"city": "X"}))
    agent = LlmAgent(name="a", model=model, tools=[get_weather])
    with pytest.raises(AdkError, match="max_llm_calls=2"):
        await run(agent, max_llm_calls=2)
    assert len(model.requests) == 2


# -- callbacks -----------------------------------------------------------------------------------
async def test_before_agent_short_circuits() -> None:
    model = ScriptedModel([])
    agent = LlmAgent(name="a", model=model, before_agent_callback=lambda ctx: Content.model("Closed today."))
    result = await run(agent)
    assert result.text == "Closed today." and model.requests == []


async def test_before_and_after_model_callbacks() -> None:
    model = ScriptedModel(["from the model"])

    def cached(ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        return LlmResponse(Content.model("from the cache")) if "cached" in request.contents[-1].text else None

    async def shout(ctx: CallbackContext, response: LlmResponse) -> LlmResponse:
        return LlmResponse(Content.model(response.content.text.upper()))

    agent = LlmAgent(name="a", model=model, before_model_callback=cached, after_model_callback=shout)
    assert (await run(agent, "cached please")).text == "FROM THE CACHE"
    assert (await run(agent, "fresh")).text == "FROM THE MODEL"
    assert len(model.requests) == 1


async def test_after_agent_adds_an_answer() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(["hello"]), after_agent_callback=lambda ctx: "(logged)")
    result = await run(agent)
    assert [e.text for e in result.events if not e.partial][-2:] == ["hello", "(logged)"]


@pytest.mark.parametrize(
    "hook", ["before_agent_callback", "after_agent_callback", "before_model_callback", "after_model_callback"]
)
async def test_an_artifact_saved_in_a_callback_is_recorded_on_an_event(hook: str) -> None:
    async def save(ctx: CallbackContext, *_: object) -> None:
        await ctx.save_artifact("summary.txt", Part(text="from a callback"))

    sessions, artifacts = InMemorySessionService(), InMemoryArtifactService()
    agent = LlmAgent(name="a", model=ScriptedModel(["ok"]), **{hook: save})
    runner = Runner(app_name="app", agent=agent, session_service=sessions, artifact_service=artifacts)
    session = await sessions.create(app_name="app", user_id="u")
    result = await runner.run_to_result(user_id="u", session_id=session.id, content="go")

    assert await artifacts.list_keys(app_name="app", user_id="u", session_id=session.id) == ["summary.txt"]
    stored = await sessions.get(app_name="app", user_id="u", session_id=session.id)
    assert [e.actions.artifact_delta for e in stored.events if e.actions.artifact_delta] == [{"summary.txt": 0}]
    assert "artifact summary.txt v0" in transcript_text(result.events, agent_name="a"), "the run view shows it"
    assert result.text == "ok"


async def test_tool_callbacks_and_outcomes() -> None:
    outcomes = []

    def deny_paris(ctx: ToolContext, t, args):
        return {"error": "Paris is not allowed"} if args.get("city") == "Paris" else None

    def log(ctx: ToolContext):  # the seed's one-parameter after_tool_callback
        outcomes.append(ctx.tool_outcome)

    model = ScriptedModel(
        [[FunctionCall("get_weather", {"city": "Paris"}), FunctionCall("get_weather", {"city": "Rome"})], "done"]
    )
    agent = LlmAgent(
        name="a", model=model, tools=[get_weather], before_tool_callback=deny_paris, after_tool_callback=log
    )
    result = await run(agent)
    responses = [r.response for r in result.events[2].function_responses()]
    assert responses == [{"error": "Paris is not allowed"}, {"city": "Rome", "condition": "sunny"}]
    assert [(o.tool_name, o.args["city"], o.success, o.attempt) for o in outcomes] == [
        ("get_weather", "Paris", True, 1),
        ("get_weather", "Rome", True, 1),
    ]
    assert result.events[2].tool_outcomes == outcomes, "outcomes travel on the event stream too"


# -- strategies ----------------------------------------------------------------------------------
def barrier_tools(n: int, *, safe: bool):
    """Tools that only finish when `n` of them run at the same time (or time out)."""
    barrier = asyncio.Barrier(n)
    order: list[str] = []

    async def handler(ctx, args):
        order.append(f"start {args['i']}")
        try:
            await asyncio.wait_for(barrier.wait(), 2)
            together = True
        except TimeoutError:
            together = False
        order.append(f"end {args['i']}")
        return {"i": args["i"], "together": together}

    t = FunctionTool("wait_for_peers", "Waits for peers.", handler)
    if safe:
        t.with_read_only().with_concurrency_safe()
    return t, order


@pytest.mark.parametrize("strategy", ["parallel", "auto"])
async def test_parallel_and_auto_run_safe_calls_together_in_model_order(strategy: str) -> None:
    t, _ = barrier_tools(3, safe=True)
    calls = [FunctionCall("wait_for_peers", {"i": i}) for i in range(3)]
    agent = LlmAgent(name="a", model=ScriptedModel([calls, "ok"]), tools=[t], tool_execution_strategy=strategy)
    result = await run(agent)
    responses = [r.response for r in result.events[2].function_responses()]
    assert responses == [{"i": i, "together": True} for i in range(3)]


async def test_sequential_runs_one_at_a_time() -> None:
    t, order = barrier_tools(2, safe=True)
    calls = [FunctionCall("wait_for_peers", {"i": i}) for i in range(2)]
    agent = LlmAgent(name="a", model=ScriptedModel([calls, "ok"]), tools=[t])
    await run(agent)
    assert order == ["start 0", "end 0", "start 1", "end 1"]


async def test_auto_runs_the_safe_subset_first_then_the_rest_in_order() -> None:
    safe, order = barrier_tools(2, safe=True)
    log: list[str] = []

    @tool
    async def save(i: int) -> dict:
        """Save (not read-only)."""
        log.append(f"save {i} after {len(order)} safe events")
        return {"saved": i}

    calls = [
        FunctionCall("save", {"i": 0}),
        FunctionCall("wait_for_peers", {"i": 1}),
        FunctionCall("save", {"i": 2}),
        FunctionCall("wait_for_peers", {"i": 3}),
    ]
    agent = LlmAgent(name="a", model=ScriptedModel([calls, "ok"]), tools=[safe, save], tool_execution_strategy="auto")
    result = await run(agent)
    assert [r.name for r in result.events[2].function_responses()] == [
        "save",
        "wait_for_peers",
        "save",
        "wait_for_peers",
    ]
    assert result.events[2].function_responses()[1].response["together"] is True
    assert log == ["save 0 after 4 safe events", "save 2 after 4 safe events"]


async def test_a_failing_call_does_not_stop_the_others() -> None:
    @tool(read_only=True, concurrency_safe=True)
    async def maybe(i: int) -> dict:
        """Fails for 1."""
        if i == 1:
            raise RuntimeError("boom")
        return {"i": i}

    calls = [FunctionCall("maybe", {"i": i}) for i in range(3)]
    result = await run(
        LlmAgent(name="a", model=ScriptedModel([calls, "ok"]), tools=[maybe], tool_execution_strategy="parallel")
    )
    responses = [r.response for r in result.events[2].function_responses()]
    assert responses[0] == {"i": 0} and responses[2] == {"i": 2} and "boom" in responses[1]["error"]


# -- retries, circuit breaker, on_tool_error -----------------------------------------------------
def flaky(failures: int):
    calls = {"n": 0}

    @tool
    def flaky_api(q: str) -> dict:
        """Fails a few times first."""
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError(f"attempt {calls['n']} failed")
        return {"q": q, "attempts": calls["n"]}

    return flaky_api, calls


async def test_retry_budgets_default_and_per_tool() -> None:
    api, calls = flaky(3)
    agent = LlmAgent(
        name="a",
        model=ScriptedModel([FunctionCall("flaky_api", {"q": "x"}), "ok"]),
        tools=[api],
        default_retry_budget=RetryBudget(1, 0.0),
        tool_retry_budgets={"flaky_api": RetryBudget(4, 0.001)},
    )
    result = await run(agent)
    assert result.events[2].function_responses()[0].response == {"q": "x", "attempts": 4}
    assert result.events[2].tool_outcomes[0].attempt == 4 and result.events[2].tool_outcomes[0].success


async def test_non_retryable_adk_errors_are_not_retried() -> None:
    attempts = []

    @tool
    def lookup(key: str) -> dict:
        """Look up."""
        attempts.append(key)
        raise AdkError.tool(f"no such key {key!r}", code="missing", category="not_found")

    result = await run(
        LlmAgent(
            name="a",
            model=ScriptedModel([FunctionCall("lookup", {"key": "k"}), "ok"]),
            tools=[lookup],
            default_retry_budget=RetryBudget(3),
        )
    )
    assert attempts == ["k"]
    assert result.events[2].function_responses()[0].response == {
        "error": "no such key 'k'",
        "code": "missing",
        "category": "not_found",
    }


async def test_circuit_breaker_names_the_tool_and_the_count() -> None:
    api, calls = flaky(100)
    script = [FunctionCall("flaky_api", {"q": str(i)}) for i in range(4)] + ["giving up"]
    agent = LlmAgent(name="a", model=ScriptedModel(script), tools=[api], circuit_breaker_threshold=3)
    result = await run(agent)
    responses = [e.function_responses()[0].response for e in result.events if e.function_responses()]
    assert calls["n"] == 3, "the fourth call never ran"
    assert responses[3]["code"] == "circuit_open"
    assert "'flaky_api'" in responses[3]["error"] and "3 times in a row" in responses[3]["error"]


async def test_on_tool_error_fallback() -> None:
    api, _ = flaky(100)
    errors = []

    def fallback(ctx, t, args, error):
        errors.append(str(error))
        return {"q": args["q"], "cached": True}

    agent = LlmAgent(
        name="a",
        model=ScriptedModel([FunctionCall("flaky_api", {"q": "x"}), "ok"]),
        tools=[api],
        on_tool_error=fallback,
    )
    result = await run(agent)
    assert result.events[2].function_responses()[0].response == {"q": "x", "cached": True}
    assert errors == ["attempt 1 failed"] and result.events[2].tool_outcomes[0].success is False


# -- runner --------------------------------------------------------------------------------------
async def test_scopes_are_enforced() -> None:
    admin = FunctionTool("drop_table", "Drop a table.", lambda ctx, args: {"dropped": True}).with_scopes(["db:admin"])
    model = ScriptedModel([FunctionCall("drop_table", {}), "no", FunctionCall("drop_table", {}), "yes"])
    agent = LlmAgent(name="a", model=model, tools=[admin])
    refused = await run(agent)
    assert refused.events[2].function_responses()[0].response["error"] == "missing required scopes: db:admin"
    allowed = await run(agent, scopes=frozenset({"db:admin"}))
    assert allowed.events[2].function_responses()[0].response == {"dropped": True}


async def test_cancel_during_a_tool_leaves_every_call_answered_and_the_next_run_works() -> None:
    started = asyncio.Event()

    @tool
    async def slow(seconds: float) -> dict:
        """Sleep."""
        started.set()
        await asyncio.sleep(seconds)
        return {"slept": seconds}

    model = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "never", "next answer"])
    sessions = InMemorySessionService()
    runner = Runner(app_name="a", agent=LlmAgent(name="a", model=model, tools=[slow]), session_service=sessions)
    session = await sessions.create(app_name="a", user_id="u")

    async def consume(text: str) -> list:
        return [e async for e in runner.run(user_id="u", session_id=session.id, content=text)]

    task = asyncio.create_task(consume("go"))
    await asyncio.wait_for(started.wait(), 5)
    threading.Thread(target=runner.cancel, kwargs={"user_id": "u", "session_id": session.id}).start()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)

    stored = await sessions.get(app_name="a", user_id="u", session_id=session.id)
    calls = [c.id for e in stored.events for c in e.function_calls()]
    answers = {r.id: r.response for e in stored.events for r in e.function_responses()}
    assert set(calls) == set(answers) and answers[calls[0]]["code"] == "cancelled"
    model.script[1] = "after cancel"
    events = await consume("again")
    assert events[-1].text == "after cancel"


async def test_two_runs_on_one_session_are_refused() -> None:
    gate = asyncio.Event()

    @tool
    async def wait() -> dict:
        """Wait."""
        await gate.wait()
        return {}

    sessions = InMemorySessionService()
    runner = Runner(
        app_name="a",
        agent=LlmAgent(
            name="a",
            model=FunctionModel(lambda r: "done" if r.contents[-1].role == "tool" else FunctionCall("wait", {})),
            tools=[wait],
        ),
        session_service=sessions,
    )
    session = await sessions.create(app_name="a", user_id="u")
    first = asyncio.create_task(runner.run_to_result(user_id="u", session_id=session.id, content="1"))
    await asyncio.sleep(0.05)
    with pytest.raises(AdkError) as caught:
        await runner.run_to_result(user_id="u", session_id=session.id, content="2")
    assert caught.value.code == "session_busy"
    gate.set()
    assert (await first).text == "done"


async def test_auto_created_sessions() -> None:
    runner = Runner(
        app_name="a",
        agent=LlmAgent(name="a", model=ScriptedModel(["hi"])),
        run_config=RunConfig(auto_create_session=True),
    )
    events = [e async for e in runner.run(user_id="u", session_id="new-one", content="hello")]
    assert events[-1].text == "hi"
    assert (await runner.session_service.get(app_name="a", user_id="u", session_id="new-one")) is not None
