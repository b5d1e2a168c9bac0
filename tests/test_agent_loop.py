"""The agent loop end to end, offline, through the public API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adk_notebook import (
    AdkError,
    Agent,
    CallbackContext,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionModel,
    InMemorySessionService,
    InvocationContext,
    LlmAgent,
    LlmRequest,
    Runner,
    ScriptedModel,
    ToolContext,
    tool,
)


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
    """
    return {"city": city, "condition": "sunny"}


async def collect(runner: Runner, session_id: str, text: str, user_id: str = "u1") -> list:
    return [e async for e in runner.run(user_id=user_id, session_id=session_id, content=Content.user(text))]


async def test_two_step_tool_conversation() -> None:
    model = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo."])
    agent = LlmAgent(name="weather", model=model, instruction="Help {user_name}.", tools=[get_weather])
    sessions = InMemorySessionService()
    runner = Runner(app_name="demo", agent=agent, session_service=sessions)
    session = await sessions.create(app_name="demo", user_id="u1", state={"user_name": "Ana"})

    events = await collect(runner, session.id, "Weather in Tokyo?")

    complete = [e for e in events if not e.partial]
    assert [e.author for e in complete] == ["user", "weather", "weather", "weather"]
    call = complete[1].function_calls()[0]
    assert (call.name, call.args) == ("get_weather", {"city": "Tokyo"})
    assert call.id, "the agent gives every call an id"
    response = complete[2].function_responses()[0]
    assert response.response == {"city": "Tokyo", "condition": "sunny"}
    assert response.id == call.id
    assert complete[-1].is_final_response() and complete[-1].text == "It is sunny in Tokyo."
    # Streaming is on by default: the answer arrived in chunks first.
    chunks = [e.text for e in events if e.partial]
    assert len(chunks) > 1 and "".join(chunks) == "It is sunny in Tokyo."

    # What the model received: the templated instruction, the tool's declaration, the history.
    first, second = model.requests
    assert first.system_instruction == "Help Ana."
    assert [d.name for d in first.tools] == ["get_weather"]
    assert first.tools[0].parameters["properties"]["city"]["description"] == "The city to look up."
    assert [c.role for c in second.contents] == ["user", "model", "tool"]

    stored = await sessions.get(app_name="demo", user_id="u1", session_id=session.id)
    assert [e.id for e in stored.events] == [e.id for e in complete], "only complete events are stored"


async def test_tool_that_raises_is_reported_to_the_model_and_the_run_goes_on() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    model = ScriptedModel([FunctionCall("divide", {"a": 1, "b": 0}), "You cannot divide by zero."])
    result = await LlmAgent(name="calc", model=model, tools=[divide]).run_async("1/0?")

    error = result.events[2].function_responses()[0].response["error"]
    assert "divide" in error and "ZeroDivisionError" in error and "division by zero" in error
    assert result.text == "You cannot divide by zero."
    assert model.requests[1].contents[-1].parts[0].function_response.response["error"] == error


async def test_invalid_arguments_never_reach_the_function() -> None:
    calls: list[str] = []

    @tool
    def get_forecast(city: str, days: int) -> dict:
        """Forecast for a city."""
        calls.append(city)
        return {"city": city, "days": days}

    model = ScriptedModel([FunctionCall("get_forecast", {"city": "Oslo", "days": "many"}), "Sorry, bad request."])
    result = await LlmAgent(name="fc", model=model, tools=[get_forecast]).run_async("Forecast?")

    error = result.events[2].function_responses()[0].response["error"]
    assert "days" in error and "get_forecast" in error
    assert calls == []
    assert result.text == "Sorry, bad request."


async def test_missing_argument_and_unknown_tool_are_named() -> None:
    model = ScriptedModel([[FunctionCall("get_weather", {}), FunctionCall("get_time", {"tz": "UTC"})], "Done."])
    result = await LlmAgent(name="w", model=model, tools=[get_weather]).run_async("?")

    missing, unknown = (r.response["error"] for r in result.events[2].function_responses())
    assert "city" in missing
    assert "get_time" in unknown and "get_weather" in unknown, "lists the tools that do exist"
    assert result.text == "Done."


async def test_missing_template_variable_is_a_clear_error() -> None:
    agent = LlmAgent(name="greeter", model=ScriptedModel(["hi"]), instruction="Greet {user_name}. {mood?}")
    with pytest.raises(AdkError) as caught:
        await agent.run_async("hello")
    err = caught.value
    assert err.code == "missing_template_variable"
    assert "user_name" in str(err) and "{user_name?}" in str(err)


async def test_optional_and_unknown_template_forms() -> None:
    model = ScriptedModel(["ok"])
    agent = LlmAgent(name="a", model=model, instruction='Hi {name}{mood?}. JSON: {"k": 1} {not valid}')
    await agent.run_async("x", state={"name": "Bo"})
    assert model.requests[0].system_instruction == 'Hi Bo. JSON: {"k": 1} {not valid}'


async def test_max_iterations_ends_the_run_with_a_clear_error() -> None:
    model = FunctionModel(lambda request: FunctionCall("get_weather", {"city": "Lima"}))
    agent = LlmAgent(name="loop", model=model, tools=[get_weather], max_iterations=3)
    sessions = InMemorySessionService()
    runner = Runner(app_name="t", agent=agent, session_service=sessions)
    session = await sessions.create(app_name="t", user_id="u1")
    with pytest.raises(AdkError) as caught:
        await collect(runner, session.id, "go")
    assert caught.value.code == "max_iterations_exceeded"
    assert "max_iterations=3" in str(caught.value)
    assert len(model.requests) == 3
    stored = await sessions.get(app_name="t", user_id="u1", session_id=session.id)
    assert len(stored.events) == 1 + 3 * 2, "nothing already done is lost"


async def test_output_key_saves_the_final_answer() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(["Paris"]), output_key="capital")
    result = await agent.run_async("Capital of France?")
    assert result.state["capital"] == "Paris"


async def test_tool_context_state_scopes_and_temp_cleared() -> None:
    @tool
    def remember(city: str, ctx: ToolContext) -> dict:
        """Remember a city."""
        ctx.state["last_city"] = city
        ctx.state["user:home"] = city
        ctx.state["temp:scratch"] = 1
        return {"ok": True, "seen_temp": ctx.state["temp:scratch"]}

    sessions = InMemorySessionService()
    agent = LlmAgent(
        name="mem", model=ScriptedModel([FunctionCall("remember", {"city": "Rome"}), "Noted."]), tools=[remember]
    )
    result = await agent.run_async("Remember Rome", session_service=sessions)

    assert result.events[2].function_responses()[0].response == {"ok": True, "seen_temp": 1}
    assert result.state["last_city"] == "Rome" and result.state["user:home"] == "Rome"
    assert "temp:scratch" not in result.state
    assert result.events[2].actions.state_delta == {"last_city": "Rome", "user:home": "Rome"}
    other = await sessions.create(app_name="mem", user_id="user")
    assert other.state == {"user:home": "Rome"}


async def test_function_model_sees_the_request() -> None:
    def respond(request: LlmRequest) -> str | FunctionCall:
        last = request.contents[-1]
        if last.parts[0].function_response is not None:
            return f"It is {last.parts[0].function_response.response['condition']}."
        return FunctionCall("get_weather", {"city": "Quito"})

    result = await LlmAgent(name="fm", model=FunctionModel(respond), tools=[get_weather]).run_async("Quito?")
    assert result.text == "It is sunny."


def test_sync_run_outside_and_inside_a_running_loop() -> None:
    import asyncio

    agent = LlmAgent(name="s", model=FunctionModel(lambda r: "pong"))
    assert agent.run("ping").text == "pong"

    async def inside() -> str:  # as in a notebook cell, where a loop is already running
        return agent.run("ping").text

    assert asyncio.run(inside()) == "pong"


async def test_session_that_does_not_exist() -> None:
    runner = Runner(app_name="a", agent=LlmAgent(name="x", model=ScriptedModel(["hi"])))
    with pytest.raises(AdkError) as caught:
        await collect(runner, "nope", "hi")
    assert caught.value.code == "session_not_found" and "create" in str(caught.value)


async def test_streaming_off_yields_no_partial_events() -> None:

    agent = LlmAgent(name="x", model=ScriptedModel(["one two three"]))
    result = await agent.run_async("hi", streaming=False)
    assert not any(e.partial for e in result.events)
    assert result.text == "one two three"


def test_bad_input_errors_say_what_to_do() -> None:
    with pytest.raises(AdkError, match="Unknown model string 'gpt5'"):
        LlmAgent(name="x", model="gpt5").resolve_model()
    with pytest.raises(AdkError, match="no model"):
        LlmAgent(name="x").resolve_model()
    with pytest.raises(AdkError, match="identifier"):
        LlmAgent(name="my agent")

    def f(x: int) -> int:
        return x

    from adk_notebook import FunctionTool

    with pytest.raises(AdkError, match="not accepted by model providers"):
        FunctionTool("get weather!", "d", lambda ctx, args: 1)


async def test_non_serialisable_tool_result_becomes_an_error_for_the_model() -> None:
    import datetime

    @tool
    def now() -> dict:
        """The time."""
        return {"at": datetime.datetime(2026, 1, 1)}

    result = await LlmAgent(name="t", model=ScriptedModel([FunctionCall("now", {}), "ok"]), tools=[now]).run_async("?")
    response = result.events[2].function_responses()[0].response
    assert response["code"] == "result_not_serializable" and "datetime" in response["error"]
    assert result.text == "ok"


async def test_result_wrapping() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add(2, 3) == 5, "a decorated tool is still the function"
    result = await LlmAgent(
        name="t", model=ScriptedModel([FunctionCall("add", {"a": 2, "b": 3}), "5"]), tools=[add]
    ).run_async("?")
    assert result.events[2].function_responses()[0].response == {"result": 5}


async def test_arguments_a_provider_could_not_parse_are_answered_with_the_reason() -> None:
    from adk_notebook.core.content import malformed_call

    calls: list[str] = []

    @tool
    def lookup(city: str) -> dict:
        """Look up a city."""
        calls.append(city)
        return {}

    model = ScriptedModel(
        [malformed_call("lookup", '{"city": "Tok', "not valid JSON (Unterminated string)", "c1"), "Let me try again."]
    )
    result = await LlmAgent(name="p", model=model, tools=[lookup]).run_async("?")
    response = result.events[2].function_responses()[0]
    assert response.id == result.events[1].function_calls()[0].id and response.response["code"] == "invalid_arguments"
    assert response.response["error"].startswith("The arguments for tool 'lookup' were not valid JSON")
    assert '{"city": "Tok' in response.response["error"] and calls == []
    assert result.text == "Let me try again."


# -- RunResult.text: the answer of the agent that answered ---------------------------------------------
async def test_text_is_the_answer_when_an_after_agent_callback_only_writes_state() -> None:
    def remember(ctx: CallbackContext) -> None:
        ctx.state["answered"] = True

    for streaming in (True, False):
        agent = LlmAgent(name="a", model=ScriptedModel(["It is sunny."]), after_agent_callback=remember)
        result = await agent.run_async("Weather?", streaming=streaming)
        assert result.text == "It is sunny.", streaming
        assert result.state["answered"] is True
        assert result.events[-1].actions.state_delta == {"answered": True}, "the state event comes after the answer"


async def test_text_is_empty_when_a_tool_ends_the_run_before_any_answer() -> None:
    @tool
    def hang_up(tool_context: ToolContext) -> dict:
        """End the conversation."""
        tool_context._invocation.end_invocation()  # as google-adk's tools do: the invocation ends after this step
        return {"status": "bye"}

    model = ScriptedModel([FunctionCall("hang_up", {}), "never said"])
    result = await LlmAgent(name="a", model=model, tools=[hang_up]).run_async("my own words")
    assert [e.author for e in result.events if not e.partial] == ["user", "a", "a"]
    assert result.text == "", "the user's words are never the answer"
    assert "my own words" not in repr(result)


async def test_text_of_a_custom_agent_that_yields_no_answer_is_empty() -> None:
    class Silent(Agent):
        name = "silent"

        def __init__(self, events: int) -> None:
            self.events = events

        async def run_invocation(self, ctx: InvocationContext) -> AsyncIterator[Event]:
            for n in range(self.events):
                yield Event(self.name, None, ctx.invocation_id, actions=EventActions(state_delta={"seen": n}))

    assert (await Silent(0).run_async("hello there")).text == ""
    result = await Silent(2).run_async("hello there")
    assert result.text == "" and result.state["seen"] == 1
