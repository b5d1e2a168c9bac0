"""JsonlTraceExporter: each run appended to a local file as one JSON line, read back as spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adk_notebook import (
    AdkError,
    FunctionCall,
    JsonlTraceExporter,
    LlmAgent,
    ScriptedModel,
    read_traces,
)


def get_weather(city: str) -> dict:
    """Get the weather for a city."""
    return {"city": city, "condition": "sunny"}


async def test_every_run_is_one_line_and_reads_back_as_its_trace(
    tmp_path: Path,
) -> None:
    path = tmp_path / "traces" / "runs.jsonl"  # the folder does not exist yet
    exporter = JsonlTraceExporter(path)
    model = ScriptedModel([FunctionCall("get_weather", {"city": "Oslo"}), "Sunny.", "Hello."])
    agent = LlmAgent(name="weather", model=model, tools=[get_weather])
    first = await agent.run_async("Weather in Oslo?", plugins=[exporter])
    second = await agent.run_async("Hi", plugins=[exporter])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(isinstance(json.loads(line), dict) for line in lines)
    traces = read_traces(path)
    assert [t.to_dict() for t in traces] == [
        first.trace.to_dict(),
        second.trace.to_dict(),
    ]  # type: ignore[union-attr]
    assert [t.session_id for t in traces] == [first.session_id, second.session_id]
    assert [s.tool for s in traces[0].find("tool")] == ["get_weather"]


async def test_a_failed_run_is_kept_too(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    agent = LlmAgent(name="weather", model=ScriptedModel([RuntimeError("model down")]))
    with pytest.raises(RuntimeError):
        await agent.run_async("Hi", plugins=[JsonlTraceExporter(path)])
    (trace,) = read_traces(path)
    assert (trace.error_type, trace.error_message) == ("RuntimeError", "model down")


def test_no_file_yet_is_no_traces_and_a_broken_line_is_named(tmp_path: Path) -> None:
    assert read_traces(tmp_path / "missing.jsonl") == []
    path = tmp_path / "runs.jsonl"
    path.write_text('{"name": "run a", "kind": "run", "start": 1.0, "duration": 0.5, "children": []}\n\nnot json\n')
    with pytest.raises(AdkError) as caught:
        read_traces(path)
    assert caught.value.code == "invalid_trace_file" and "Line 3" in str(caught.value)


async def test_a_file_that_cannot_be_written_fails_the_run_that_succeeded(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    agent = LlmAgent(name="weather", model=ScriptedModel(["Hi."]))
    with pytest.raises(OSError):
        await agent.run_async("Hi", plugins=[JsonlTraceExporter(blocker / "runs.jsonl")])
    # A run that failed keeps its own error, not the exporter's.
    failing = LlmAgent(name="weather", model=ScriptedModel([RuntimeError("model down")]))
    with pytest.raises(RuntimeError, match="model down"):
        await failing.run_async("Hi", plugins=[JsonlTraceExporter(blocker / "runs.jsonl")])
