"""RunResult.trace: the span tree of a run, as a user reads it after the run."""

from __future__ import annotations

import json

from adk_notebook import FunctionCall, LlmAgent, ScriptedModel, Span


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
    agent.child(
        "chat m", "model", model="openai:m", input_tokens=3, output_tokens=4, cost=0.5
    )
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
