"""RunResult.trace: the span tree of a run, as a user reads it after the run."""

from __future__ import annotations

import asyncio
import json
from itertools import pairwise

import pytest

from adk_notebook import (
    AgentTool,
    Content,
    FunctionCall,
    LlmAgent,
    LlmResponse,
    ModelPrice,
    Part,
    RunConfig,
    Runner,
    ScriptedModel,
    SequentialAgent,
    Span,
    Usage,
)
from adk_notebook.runner import RunStream


def get_weather(city: str) -> dict:
    """Get the weather for a city."""
    return {"city": city, "condition": "sunny"}


def test_a_run_has_a_finished_root_span_with_its_ids() -> None:
    agent = LlmAgent(
        name="weather",
        model=ScriptedModel([FunctionCall("get_weather", {"city": "Oslo"}), "Sunny."]),
        tools=[get_weather],
    )
    result = agent.run("Weather in Oslo?")
    root = result.trace
    assert root is not None
    assert (root.kind, root.name, root.agent) == ("run", "run weather", "weather")
    assert root.duration is not None and root.duration >= 0
    assert root.session_id == result.session_id
    assert root.invocation_id == result.events[0].invocation_id
    assert not root.failed


def test_the_json_form_reads_back_equal() -> None:
    tree = Span(name="run a", kind="run", start=100.0, duration=2.0, agent="a")
    agent = tree.child("invoke_agent a", "agent", agent="a")
    agent.child("chat m", "model", model="openai:m", input_tokens=3, output_tokens=4, cost=0.5)
    agent.child(
        "execute_tool t",
        "tool",
        tool="t",
        call_id="c1",
        error_type="ValueError",
        error_message="bad",
    )
    text = json.dumps(tree.to_dict())
    back = Span.from_dict(json.loads(text))
    assert back.to_dict() == tree.to_dict()
    assert [s.kind for s in back.walk()] == ["run", "agent", "model", "tool"]
    assert back.find("tool")[0].failed
    assert "model" not in back.to_dict()  # None fields are left out


def usage_answer(text: str, tokens_in: int, tokens_out: int) -> LlmResponse:
    return LlmResponse(Content.model(text), usage=Usage(tokens_in, tokens_out, tokens_in + tokens_out))


def usage_call(name: str, args: dict, tokens_in: int, tokens_out: int) -> LlmResponse:
    content = Content("model", [Part(function_call=FunctionCall(name, args))])
    return LlmResponse(content, usage=Usage(tokens_in, tokens_out, tokens_in + tokens_out))


def shape(span: Span, depth: int = 0) -> list[str]:
    """The tree as indented names, for one comparison a reader can check by eye."""
    lines = ["  " * depth + span.name]
    for child in span.children:
        lines += shape(child, depth + 1)
    return lines


def failing(city: str) -> dict:
    """Always fails."""
    raise ConnectionError(f"no network for {city}")


async def test_model_and_tool_spans_carry_tokens_ids_and_errors_in_the_order_they_ran() -> None:
    model = ScriptedModel(
        [
            usage_call("failing", {"city": "Oslo"}, 10, 2),
            FunctionCall("nowhere", {}),
            usage_answer("Sorry.", 30, 5),
        ],
        name="m-1",
    )
    agent = LlmAgent(name="weather", model=model, tools=[failing])
    result = await agent.run_async("Weather?")
    root = result.trace
    assert root is not None
    assert shape(root) == [
        "run weather",
        "  invoke_agent weather",
        "    chat m-1",
        "    execute_tool failing",
        "    chat m-1",
        "    execute_tool nowhere",
        "    chat m-1",
    ]
    chats, tools = root.find("model"), root.find("tool")
    assert [(s.input_tokens, s.output_tokens) for s in chats] == [
        (10, 2),
        (None, None),
        (30, 5),
    ]
    calls = [c for e in result.events if not e.partial for c in e.function_calls()]
    assert [s.call_id for s in tools] == [c.id for c in calls]
    assert (tools[0].error_type, tools[0].error_message) == (
        "ConnectionError",
        "ConnectionError: no network for Oslo",
    )
    assert tools[1].error_type == "unknown_tool" and "Unknown tool 'nowhere'" in (tools[1].error_message or "")
    agent_span = root.children[0]
    assert (agent_span.input_tokens, agent_span.output_tokens) == (
        40,
        7,
    )  # summed over its model calls
    assert (root.input_tokens, root.output_tokens) == (
        result.usage.input_tokens,
        result.usage.output_tokens,
    )
    assert agent_span.model == "m-1" and not agent_span.failed
    # Each span lies inside its parent, and siblings follow one another.
    for parent in root.walk():
        for child in parent.children:
            assert parent.start <= child.start and child.end <= parent.end + 1e-6  # type: ignore[operator]
        for before, after in pairwise(parent.children):
            assert before.end <= after.start + 1e-6  # type: ignore[operator]


def start_run(agent: LlmAgent) -> RunStream:
    """A run's stream, whose `trace` survives the run's failure or cancellation."""
    runner = Runner(app_name="app", agent=agent)
    config = RunConfig(auto_create_session=True)
    return runner.run(user_id="u", session_id="s", content="Hi", run_config=config)


async def test_a_model_failure_marks_the_model_agent_and_run_spans() -> None:
    model = ScriptedModel([ConnectionResetError("peer went away")])
    stream = start_run(LlmAgent(name="weather", model=model))
    with pytest.raises(ConnectionResetError):
        async for _ in stream:
            pass
    failed = [s for s in stream.trace.walk() if s.failed]
    assert [s.kind for s in failed] == ["run", "agent", "model"]
    assert {(s.error_type, s.error_message) for s in failed} == {("ConnectionResetError", "peer went away")}
    assert all(s.duration is not None for s in stream.trace.walk())


async def test_prices_turn_tokens_into_cost_per_model_call_and_in_total() -> None:
    model = ScriptedModel(
        [
            usage_call("get_weather", {"city": "Oslo"}, 1_000, 200),
            usage_answer("Sunny.", 3_000, 100),
        ],
        name="gpt-4o-mini",
    )
    agent = LlmAgent(name="weather", model=model, tools=[get_weather])
    prices = {"gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.60)}
    result = await agent.run_async("Weather?", prices=prices)
    root = result.trace
    assert root is not None
    assert [s.cost for s in root.find("model")] == pytest.approx([0.00027, 0.00051])
    assert root.cost == pytest.approx(0.00078) and root.children[0].cost == pytest.approx(0.00078)
    unpriced = LlmAgent(
        name="weather",
        model=ScriptedModel([usage_answer("Sunny.", 3_000, 100)], name="gpt-4o-mini"),
    )
    assert (await unpriced.run_async("Weather?")).trace.cost is None  # type: ignore[union-attr]  # no price table


async def test_sub_agents_and_agent_tools_nest_under_their_parent_and_call() -> None:
    helper = LlmAgent(name="helper", model=ScriptedModel(["42."]), description="Knows numbers.")
    lead = LlmAgent(
        name="lead",
        model=ScriptedModel([FunctionCall("helper", {"request": "the answer?"}), "It is 42."]),
        tools=[AgentTool(helper)],
    )
    writer = LlmAgent(name="writer", model=ScriptedModel(["Written."]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[lead, writer])
    result = await pipeline.run_async("Go")
    assert result.trace is not None
    assert shape(result.trace) == [
        "run pipeline",
        "  invoke_agent pipeline",
        "    invoke_agent lead",
        "      chat scripted",
        "      execute_tool helper",
        "        invoke_agent helper",
        "          chat scripted",
        "      chat scripted",
        "    invoke_agent writer",
        "      chat scripted",
    ]


async def test_a_cancelled_run_ends_its_open_spans_as_cancelled() -> None:
    started = asyncio.Event()

    async def slow(city: str) -> dict:
        """Takes long."""
        started.set()
        await asyncio.sleep(30)
        return {}

    agent = LlmAgent(
        name="weather",
        model=ScriptedModel([FunctionCall("slow", {"city": "Oslo"}), "x"]),
        tools=[slow],
    )
    stream = start_run(agent)

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    root = stream.trace
    assert all(s.duration is not None for s in root.walk())
    assert root.error_type == "CancelledError" and root.find("agent")[0].error_type == "CancelledError"
