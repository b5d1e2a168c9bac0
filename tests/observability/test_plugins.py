"""Plugins: every hook runs for the run's agents, before the agent's own callbacks, in list
order, and the first that answers skips the rest."""

from __future__ import annotations

from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    CallbackContext,
    Content,
    FunctionCall,
    LlmAgent,
    LlmResponse,
    Plugin,
    RunConfig,
    Runner,
    ScriptedModel,
    SequentialAgent,
    ToolContext,
)


def get_weather(city: str) -> dict:
    """Get the weather for a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return {"city": city, "condition": "sunny"}


class Recorder(Plugin):
    """Logs every hook it sees as (its name, the hook, what it saw)."""

    def __init__(self, name: str, log: list[tuple[str, ...]]) -> None:
        super().__init__(name)
        self.log = log

    async def before_agent_callback(self, ctx: CallbackContext) -> None:
        self.log.append((self.name, "before_agent", ctx.agent_name))

    async def after_agent_callback(self, ctx: CallbackContext) -> None:
        self.log.append((self.name, "after_agent", ctx.agent_name))

    async def before_model_callback(self, ctx: CallbackContext, request: Any) -> None:
        self.log.append((self.name, "before_model", request.model))

    async def after_model_callback(self, ctx: CallbackContext, response: LlmResponse) -> None:
        self.log.append((self.name, "after_model", response.content.parts[0].text or "call"))

    async def before_tool_callback(self, ctx: ToolContext, tool: Any, args: dict[str, Any]) -> None:
        self.log.append((self.name, "before_tool", tool.name, args["city"]))

    async def after_tool_callback(
        self,
        ctx: ToolContext,
        tool: Any,
        args: dict[str, Any],
        response: dict[str, Any],
    ) -> None:
        self.log.append((self.name, "after_tool", tool.name, str(ctx.tool_outcome.success)))

    async def on_tool_error(self, ctx: ToolContext, tool: Any, args: dict[str, Any], error: BaseException) -> None:
        self.log.append((self.name, "on_tool_error", tool.name, str(error)))

    async def after_run_callback(self, ctx: Any) -> None:
        self.log.append((self.name, "after_run", ctx.span.kind))


def own_callbacks(log: list[tuple[str, ...]]) -> dict[str, Any]:
    """The agent's own callbacks, logging as 'agent'."""

    def record(hook: str) -> Any:
        def callback(*args: Any) -> None:
            log.append(("agent", hook))

        return callback

    hooks = [
        "before_agent",
        "after_agent",
        "before_model",
        "after_model",
        "before_tool",
        "after_tool",
    ]
    callbacks = {f"{hook}_callback": record(hook) for hook in hooks}
    callbacks["on_tool_error"] = record("on_tool_error")
    return callbacks


def weather_agent(log: list[tuple[str, ...]], script: list[Any]) -> LlmAgent:
    return LlmAgent(
        name="weather",
        model=ScriptedModel(script),
        tools=[get_weather],
        **own_callbacks(log),
    )


async def test_every_hook_runs_plugins_first_in_list_order_then_the_agents_own() -> None:
    log: list[tuple[str, ...]] = []
    agent = weather_agent(log, [FunctionCall("get_weather", {"city": "Atlantis"}), "No such city."])
    result = await agent.run_async(
        "Weather in Atlantis?",
        plugins=[Recorder("first", log), Recorder("second", log)],
    )
    assert result.text == "No such city."
    steps = [entry[:2] for entry in log]
    assert steps == [
        ("first", "before_agent"),
        ("second", "before_agent"),
        ("agent", "before_agent"),
        ("first", "before_model"),
        ("second", "before_model"),
        ("agent", "before_model"),
        ("first", "after_model"),
        ("second", "after_model"),
        ("agent", "after_model"),
        ("first", "before_tool"),
        ("second", "before_tool"),
        ("agent", "before_tool"),
        ("first", "on_tool_error"),
        ("second", "on_tool_error"),
        ("agent", "on_tool_error"),
        ("first", "after_tool"),
        ("second", "after_tool"),
        ("agent", "after_tool"),
        ("first", "before_model"),
        ("second", "before_model"),
        ("agent", "before_model"),
        ("first", "after_model"),
        ("second", "after_model"),
        ("agent", "after_model"),
        ("first", "after_agent"),
        ("second", "after_agent"),
        ("agent", "after_agent"),
        ("first", "after_run"),
        ("second", "after_run"),
    ]
    # What the hooks were given: the agent, the model's request, the tool and its arguments, the error.
    assert ("first", "before_agent", "weather") in log
    assert ("first", "before_model", "scripted") in log
    assert ("first", "before_tool", "get_weather", "Atlantis") in log
    assert ("first", "on_tool_error", "get_weather", "no such city") in log
    assert ("first", "after_tool", "get_weather", "False") in log
    assert ("first", "after_model", "No such city.") in log
    assert ("first", "after_run", "run") in log


class CachedAnswer(Plugin):
    async def before_model_callback(self, ctx: CallbackContext, request: Any) -> LlmResponse:
        return LlmResponse(Content.model("From the cache."))


class Refuse(Plugin):
    async def before_tool_callback(self, ctx: ToolContext, tool: Any, args: dict[str, Any]) -> dict[str, Any]:
        return {"refused": tool.name}


class Gatekeeper(Plugin):
    async def before_agent_callback(self, ctx: CallbackContext) -> str:
        return "The office is closed."


class Fallback(Plugin):
    async def on_tool_error(
        self, ctx: ToolContext, tool: Any, args: dict[str, Any], error: BaseException
    ) -> dict[str, Any]:
        return {"fallback": str(error)}


class Rewrite(Plugin):
    async def after_model_callback(self, ctx: CallbackContext, response: LlmResponse) -> LlmResponse:
        return LlmResponse(Content.model("Rewritten."))


class Redact(Plugin):
    async def after_tool_callback(
        self,
        ctx: ToolContext,
        tool: Any,
        args: dict[str, Any],
        response: dict[str, Any],
    ) -> dict[str, Any]:
        return {"redacted": True}


async def test_a_plugin_that_answers_for_the_model_skips_later_plugins_the_callbacks_and_the_model() -> None:
    log: list[tuple[str, ...]] = []
    model = ScriptedModel(["never asked"])
    agent = LlmAgent(name="weather", model=model, **own_callbacks(log))
    result = await agent.run_async("Hi", plugins=[CachedAnswer(), Recorder("later", log)])
    assert result.text == "From the cache."
    assert model.requests == []
    assert ("later", "before_model", "scripted") not in log and (
        "agent",
        "before_model",
    ) not in log
    # after-model hooks still see the cached answer: only the before chain was short-circuited
    assert ("later", "after_model", "From the cache.") in log


async def test_a_plugin_that_answers_for_a_tool_keeps_it_from_running() -> None:
    log: list[tuple[str, ...]] = []
    agent = weather_agent(log, [FunctionCall("get_weather", {"city": "Atlantis"}), "Done."])
    result = await agent.run_async("Weather?", plugins=[Refuse(), Recorder("later", log)])
    response = next(e for e in result.events if e.function_responses()).function_responses()[0]
    assert response.response == {"refused": "get_weather"}
    assert ("agent", "before_tool") not in log and ("agent", "on_tool_error") not in log
    assert not any(entry[1] == "before_tool" for entry in log)


async def test_a_plugin_that_answers_for_the_agent_skips_it() -> None:
    log: list[tuple[str, ...]] = []
    model = ScriptedModel(["never asked"])
    agent = LlmAgent(name="weather", model=model, **own_callbacks(log))
    result = await agent.run_async("Hi", plugins=[Gatekeeper(), Recorder("later", log)])
    assert result.text == "The office is closed."
    assert model.requests == [] and ("agent", "before_agent") not in log


async def test_fallback_rewrite_and_redact_replace_what_the_model_and_the_session_see() -> None:
    log: list[tuple[str, ...]] = []
    agent = weather_agent(
        log,
        [
            FunctionCall("get_weather", {"city": "Atlantis"}),
            FunctionCall("get_weather", {"city": "Oslo"}),
            "x",
        ],
    )
    result = await agent.run_async("Weather?", plugins=[Fallback()])
    responses = [r.response for e in result.events for r in e.function_responses()]
    assert responses[0] == {"fallback": "no such city"}
    assert (
        "agent",
        "on_tool_error",
    ) not in log  # the plugin's fallback ended the chain
    agent = weather_agent(log, [FunctionCall("get_weather", {"city": "Oslo"}), "x"])
    result = await agent.run_async("Weather?", plugins=[Redact()])
    assert [r.response for e in result.events for r in e.function_responses()] == [{"redacted": True}]
    result = await weather_agent(log, ["The model's words."]).run_async("Hi", plugins=[Rewrite()])
    assert result.text == "Rewritten."


async def test_runner_plugins_apply_to_every_run() -> None:
    log: list[tuple[str, ...]] = []
    runner = Runner(
        app_name="app",
        agent=weather_agent([], ["One.", "Two."]),
        plugins=[Recorder("p", log)],
    )
    for text in ("a", "b"):
        await runner.run_to_result(
            user_id="u",
            session_id="s",
            content=text,
            run_config=RunConfig(auto_create_session=True),
        )
    assert [entry for entry in log if entry[1] == "after_run"] == [("p", "after_run", "run")] * 2


def test_something_that_is_not_a_plugin_is_a_clear_error() -> None:
    with pytest.raises(AdkError) as caught:
        Runner(app_name="app", agent=weather_agent([], []), plugins=[object()])  # type: ignore[list-item]
    assert caught.value.code == "invalid_plugin" and "object" in str(caught.value)


class SkipWriter(Plugin):
    async def before_agent_callback(self, ctx: CallbackContext) -> str | None:
        return "The writer is away." if ctx.agent_name == "writer" else None


async def test_plugins_see_every_agent_of_a_workflow_and_may_answer_for_one_child() -> None:
    log: list[tuple[str, ...]] = []
    research = LlmAgent(name="research", model=ScriptedModel(["Facts."]))
    writer_model = ScriptedModel(["never asked"])
    writer = LlmAgent(name="writer", model=writer_model)
    pipeline = SequentialAgent(name="pipeline", sub_agents=[research, writer])
    result = await pipeline.run_async("Go", plugins=[SkipWriter(), Recorder("p", log)])
    agents_seen = [entry[2] for entry in log if entry[1] == "before_agent"]
    assert agents_seen == [
        "pipeline",
        "research",
    ]  # SkipWriter answered for the writer: later plugins skipped
    assert [entry[2] for entry in log if entry[1] == "after_agent"] == [
        "research",
        "pipeline",
    ]
    assert result.text == "The writer is away." and writer_model.requests == []
