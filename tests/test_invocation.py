"""The invocation as plain data, the request an agent builds, and the tool policy it hands over."""

from __future__ import annotations

from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    Content,
    Event,
    FunctionCall,
    FunctionModel,
    InMemorySessionService,
    InvocationContext,
    LlmAgent,
    LlmAgentBuilder,
    LlmRequest,
    RetryBudget,
    RunConfig,
    Runner,
    ScriptedModel,
    Session,
    SimpleToolContext,
    ToolContext,
    ToolExecutionStrategy,
    ToolPolicy,
    tool,
)
from adk_notebook.agents.callbacks import CallbackChain
from adk_notebook.agents.dispatch import ToolDispatcher


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}


# -- the invocation ------------------------------------------------------------------------------
async def test_a_tool_sees_the_agent_app_user_and_an_empty_branch() -> None:
    @tool
    def whoami(ctx: ToolContext) -> dict:
        """Say who is asking."""
        return {
            "agent": ctx.agent_name,
            "app": ctx.app_name,
            "user": ctx.user_id,
            "branch": ctx.branch,
            "session": ctx.session_id,
            "invocation": ctx.invocation_id,
        }

    agent = LlmAgent(
        name="desk",
        model=ScriptedModel([FunctionCall("whoami", {}), "ok"]),
        tools=[whoami],
    )
    runner = Runner(app_name="helpdesk", agent=agent)
    session = await runner.session_service.create(app_name="helpdesk", user_id="ana")
    events = [e async for e in runner.run(user_id="ana", session_id=session.id, content="who?")]
    response = next(r for e in events if not e.partial for r in e.function_responses()).response
    assert response == {
        "agent": "desk",
        "app": "helpdesk",
        "user": "ana",
        "branch": "",
        "session": session.id,
        "invocation": events[0].invocation_id,
    }


def test_a_simple_tool_context_has_the_seeds_defaults() -> None:
    ctx = SimpleToolContext("my-mcp-server").with_session_id("session-42")
    assert (ctx.agent_name, ctx.app_name, ctx.user_id, ctx.session_id, ctx.branch) == (
        "my-mcp-server",
        "my-mcp-server",
        "anonymous",
        "session-42",
        "",
    )
    assert ctx.invocation_id and ctx.function_call_id and ctx.artifacts is None


# -- the request ---------------------------------------------------------------------------------
async def test_build_request_is_exactly_what_the_model_receives() -> None:
    received: list[LlmRequest] = []

    def answer(request: LlmRequest) -> str:
        received.append(request)
        return "It is sunny."

    agent = LlmAgent(
        name="weather",
        model=FunctionModel(answer, name="fn"),
        instruction="Help {user_name}.",
        global_instruction="Be brief.",
        tools=[get_weather],
    )
    sessions = InMemorySessionService()
    session = await sessions.create(app_name="weather", user_id="u", state={"user_name": "Ana"})
    await Runner(app_name="weather", agent=agent, session_service=sessions).run_to_result(
        user_id="u", session_id=session.id, content="Weather in Tokyo?"
    )

    stored = await sessions.get(app_name="weather", user_id="u", session_id=session.id)
    assert stored is not None
    user_event = stored.events[0]
    before_the_answer = Session(stored.id, "weather", "u", state=dict(stored.state), events=[user_event])
    ctx = InvocationContext(
        session=before_the_answer,
        agent_name="weather",
        user_content=user_event.content,
        invocation_id=user_event.invocation_id,
    )
    request = await agent.build_request(ctx)
    assert request == received[0]
    assert request.model == "fn" and request.system_instruction == "Be brief.\n\nHelp Ana."
    assert [d.name for d in request.tools] == ["get_weather"]


async def test_build_request_with_include_contents_none_sends_only_this_invocation() -> None:
    agent = LlmAgent(name="a", model=ScriptedModel(["x"]), include_contents="none")
    earlier = Event("user", Content.user("an older message"), "e-old")
    now = Event("user", Content.user("this one"), "e-now")
    session = Session("s", "a", "u", events=[earlier, now])
    ctx = InvocationContext(session=session, agent_name="a", user_content=now.content, invocation_id="e-now")
    request = await agent.build_request(ctx, {}, model_name="shown")
    assert [c.parts[0].text for c in request.contents] == ["this one"] and request.model == "shown"


# -- the tool policy -----------------------------------------------------------------------------
def test_an_agent_owns_its_tool_policy_and_reads_it_back() -> None:
    def deny(ctx: Any, t: Any, args: Any) -> None:
        return None

    agent = (
        LlmAgentBuilder("a")
        .tool_execution_strategy("AUTO")
        .tool_retry_budget("flaky", RetryBudget(2))
        .circuit_breaker_threshold(3)
        .tool_timeout(5)
        .before_tool_callback(deny)
        .build()
    )
    policy = agent.tool_policy
    assert policy.tool_execution_strategy is ToolExecutionStrategy.AUTO is agent.tool_execution_strategy
    assert policy.retry_budget("flaky") == RetryBudget(2) and policy.retry_budget("other") == RetryBudget()
    assert (policy.circuit_breaker_threshold, policy.tool_timeout) == (3, 5.0)
    assert policy.before_tool_callback and not policy.after_tool_callback
    assert agent.before_tool_callback is policy.before_tool_callback


@pytest.mark.parametrize(
    ("options", "code", "names"),
    [
        (
            {"circuit_breaker_threshold": 0},
            "invalid_agent_config",
            "circuit_breaker_threshold",
        ),
        ({"tool_timeout": -1}, "invalid_timeout", "tool_timeout"),
    ],
)
def test_a_policy_refuses_bad_settings_naming_them(options: dict[str, Any], code: str, names: str) -> None:
    for make in (lambda: ToolPolicy(**options), lambda: LlmAgent(name="a", **options)):
        with pytest.raises(AdkError) as caught:
            make()
        assert caught.value.code == code and names in caught.value.message


async def test_the_dispatcher_runs_calls_with_a_policy_and_no_agent() -> None:
    attempts: list[int] = []

    @tool
    def flaky() -> dict:
        """Fails twice, then works."""
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("not yet")
        return {"ok": True}

    seen: list[str] = []
    policy = ToolPolicy(
        tool_retry_budgets={"flaky": RetryBudget(max_retries=2)},
        after_tool_callback=CallbackChain(lambda ctx, t, args, response: seen.append(t.name)),
    )
    invocation = InvocationContext(
        session=Session("s", "app", "u"),
        agent_name="worker",
        user_content=Content.user("go"),
        run_config=RunConfig(streaming=False),
    )
    events = [
        e async for e in ToolDispatcher(invocation, policy, {"flaky": flaky}).run([FunctionCall("flaky", {}, "c1")])
    ]
    (answer,) = events
    assert answer.author == "worker" and answer.function_responses()[0].response == {"ok": True}
    assert answer.tool_outcomes[0].attempt == 3 and seen == ["flaky"]
