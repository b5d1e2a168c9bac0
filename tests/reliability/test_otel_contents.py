"""OpenTelemetry without `capture_content`: no tool argument's value leaves the process.

The runtime could carry a value wherever an error repeats it: the message a tool raised, a
validation error, the run's own failure, an agent tool's inner call. The real SDK's
InMemorySpanExporter holds what an exporter would send; every span's whole JSON form (name,
attributes, events, links, status) is searched for the value. With `capture_content=True` the
value may be there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_notebook import (
    AdkError,
    AgentTool,
    FunctionCall,
    LlmAgent,
    OpenTelemetryPlugin,
    ScriptedModel,
)

SECRET = "Zq7-passport-884213"  # a value only the tool's arguments hold


def book_flight(passenger: str, seats: int) -> dict:
    """Book a flight."""
    raise PermissionError(f"passenger {passenger} is on a no-fly list")


def strict_booking(passenger: str) -> dict:
    """Book a flight, refusing unknown passengers before anything else."""
    raise ValueError(f"unknown passenger {passenger!r}")


def run_failing(passenger: str) -> dict:
    """A tool whose failure ends the whole run."""
    raise KeyboardInterrupt(f"stopped while booking {passenger}")


def fails_in_the_tool() -> LlmAgent:
    script = [FunctionCall("book_flight", {"passenger": SECRET, "seats": 2}), "Could not book."]
    return LlmAgent(name="travel", model=ScriptedModel(script), tools=[book_flight])


def fails_validation() -> LlmAgent:
    script = [FunctionCall("book_flight", {"passenger": "Ann", "seats": SECRET}), "Could not book."]
    return LlmAgent(name="travel", model=ScriptedModel(script), tools=[book_flight])


def fails_in_an_agent_tool() -> LlmAgent:
    inner = LlmAgent(
        name="booker",
        model=ScriptedModel([FunctionCall("strict_booking", {"passenger": SECRET}), "No."]),
        tools=[strict_booking],
        description="Books flights.",
    )
    script = [FunctionCall("booker", {"request": SECRET}), "Could not book."]
    return LlmAgent(name="travel", model=ScriptedModel(script), tools=[AgentTool(inner)])


def fails_the_run() -> LlmAgent:
    script = [FunctionCall("run_failing", {"passenger": SECRET}), "unreached"]
    return LlmAgent(name="travel", model=ScriptedModel(script), tools=[run_failing])


AGENTS = {
    "the tool raised with the argument": fails_in_the_tool,
    "the argument failed validation": fails_validation,
    "an agent tool's inner tool raised": fails_in_an_agent_tool,
    "the tool's error ended the run": fails_the_run,
}


async def exported(make: Any, capture_content: bool) -> list[str]:
    """Every exported span's JSON form: name, attributes, events, links, status, resource."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        await make().run_async("Book me", plugins=[OpenTelemetryPlugin(provider, capture_content=capture_content)])
    except (KeyboardInterrupt, AdkError):
        pass
    return [span.to_json(indent=None) for span in exporter.get_finished_spans()]


@pytest.mark.parametrize("what", list(AGENTS))
async def test_without_capture_content_no_argument_value_is_exported(tally: Any, what: str) -> None:
    with tally.case("traces: OpenTelemetry without contents, no argument value exported"):
        spans = await exported(AGENTS[what], capture_content=False)
        assert len(spans) >= 4
        leaked = [span for span in spans if SECRET in span]
        assert not leaked, leaked[0]
        failed = [json.loads(span) for span in spans if '"ERROR"' in span]
        assert failed and all(s["attributes"].get("error.type") for s in failed)  # what failed is still said


@pytest.mark.parametrize("what", list(AGENTS)[:3])
async def test_with_capture_content_the_argument_is_exported(what: str) -> None:
    spans = await exported(AGENTS[what], capture_content=True)
    assert any(SECRET in span for span in spans)
